/*
 * location.c
 *		Derive table locations and turn them into URIs.
 */
#include "postgres.h"

#include "lib/stringinfo.h"

#include "error.h"
#include "location.h"

static bool
is_safe_path_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
		   c == '_' || c == '.';
}

/*
 * Append one object name as one path segment.  Names may hold any character,
 * so everything but letters, digits, '-', '_' and '.' is percent-encoded.  A
 * name made only of dots ("." or "..") has no safe encoding: URI parsers read
 * "%2E%2E" as "..", which would climb out of the folder.  Such a namespace
 * needs an explicit location.
 */
static void
append_path_segment(StringInfo buf, const char *name)
{
	if (strspn(name, ".") == strlen(name))
		ln_error_detail(LN_INVALID_INPUT, "Give the table a location.",
						"cannot derive a table location through the name \"%s\"", name);

	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
	{
		if (is_safe_path_byte(*c))
			appendStringInfoChar(buf, (char)*c);
		else
			appendStringInfo(buf, "%%%02X", *c);
	}
}

/*
 * The location for a newly declared table: `base`, then a folder per
 * namespace in `below_base`, then a folder for the table.  The table's folder
 * carries a random suffix, so that a table dropped and declared again under
 * the same name never finds the old table's files (LanceDB refuses to create
 * a table where data already exists).
 */
char *
location_for_new_table(const char *base, const LnId *below_base, const char *table_name)
{
	StringInfoData buf;
	uint32 suffix;
	size_t base_len = strlen(base);

	if (!pg_strong_random(&suffix, sizeof(suffix)))
		ln_error(LN_INTERNAL, "could not generate a random table folder suffix");

	while (base_len > 0 && base[base_len - 1] == '/')
		base_len--;

	initStringInfo(&buf);
	appendBinaryStringInfo(&buf, base, base_len);
	for (int i = 0; i < below_base->len; i++)
	{
		appendStringInfoChar(&buf, '/');
		append_path_segment(&buf, below_base->names[i]);
	}
	appendStringInfoChar(&buf, '/');
	append_path_segment(&buf, table_name);
	appendStringInfo(&buf, "_%08x.lance", suffix);
	return buf.data;
}

/*
 * A complete URI for a location: URIs are kept as they are, and an absolute
 * local path becomes a file:// URI.  A relative location has no URI of its
 * own and is returned unchanged.
 */
char *
location_to_uri(const char *location)
{
	StringInfoData buf;

	if (location[0] != '/')
		return pstrdup(location);

	initStringInfo(&buf);
	appendStringInfoString(&buf, "file://");
	for (const unsigned char *c = (const unsigned char *)location; *c; c++)
	{
		if (is_safe_path_byte(*c) || *c == '/' || *c == '~')
			appendStringInfoChar(&buf, (char)*c);
		else
			appendStringInfo(&buf, "%%%02X", *c);
	}
	return buf.data;
}
