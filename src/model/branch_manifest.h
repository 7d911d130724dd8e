/*
 * branch_manifest.h
 *		The manifest Lance writes for a new branch: the fork version's
 *		manifest, rewritten so that every file it names is found under the
 *		source dataset's folder through a new base path.
 */
#ifndef LN_BRANCH_MANIFEST_H
#define LN_BRANCH_MANIFEST_H

#include "postgres.h"

/*
 * Lance's manifest for a new branch `branch` forked from `source` (the bytes of
 * the fork version's manifest file of branch `parent`, NULL for main), whose
 * files live at `parent_uri` (the source dataset's folder URI, written as is
 * into the new base path, so give it in the form Lance uses: for a local table
 * the plain folder path, e.g. "/data/t.lance" or "/data/t.lance/tree/P").
 * Returns palloc'ed bytes; the caller writes them to
 * tree/<branch>/_versions/<u64::MAX - version, 20 digits>.manifest.  A source
 * that is not a well-formed Lance manifest raises LN019.
 */
extern char *branch_manifest_make(const char *source, size_t source_len, const char *branch,
								  const char *parent, const char *parent_uri, size_t *out_len);

#endif /* LN_BRANCH_MANIFEST_H */
