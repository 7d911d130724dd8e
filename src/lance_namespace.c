/*
 * lance_namespace.c
 *		Module entry point and settings.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "lance_namespace.h"

PG_MODULE_MAGIC;

/* Where declared tables go when no namespace on their path has a "location" property. */
char	   *ln_root_location = NULL;

void		_PG_init(void);

void
_PG_init(void)
{
	/* Superuser only: it decides where every writer puts table data. */
	DefineCustomStringVariable("lance_namespace.root",
							   "Root location for tables declared without a location.",
							   "A local path or object store URI; a table's folder goes below "
							   "it, one folder per namespace.",
							   &ln_root_location,
							   "",
							   PGC_SUSET,
							   0,
							   NULL, NULL, NULL);
	MarkGUCPrefixReserved("lance_namespace");
}
