/*
 * refs.c
 *		A table's tags and branches as Lance keeps them in its _refs folder,
 *		shared by the handlers: check a name, read a ref, and find the tags
 *		on a branch.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "../common/error.h"
#include "../common/request.h"
#include "../json/json_edge.h"
#include "../storage/storage.h"
#include "refs.h"

/*
 * Lance's rules for branch names (and, without '/', tag names): segments of
 * letters, digits, '.', '-' and '_' joined by '/', none empty, no "..", not
 * starting or ending with '.', not ending in ".lock".
 */
void
refs_check_name(const char *name, const char *field, bool branch)
{
	size_t len = strlen(name);
	/* as git's ref names: no segment begins with '.' ("a/./b" would be "a/b" to a store) */
	bool ok = len > 0 && name[0] != '/' && name[len - 1] != '/' && name[len - 1] != '.' &&
			  strstr(name, "//") == NULL && strstr(name, "..") == NULL && name[0] != '.' &&
			  strstr(name, "/.") == NULL && !(len >= 5 && strcmp(name + len - 5, ".lock") == 0) &&
			  !(branch && strcmp(name, "main") == 0);

	for (const char *c = name; *c && ok; c++)
		ok = isalnum((unsigned char)*c) || *c == '.' || *c == '-' || *c == '_' ||
			 (branch && *c == '/');
	/* names the crash sweep would take for its own leftovers */
	ok = ok && strstr(name, ".deleted-x") == NULL && strstr(name, ".tmp-x") == NULL;
	if (!ok)
		ln_error(LN_INVALID_INPUT,
				 "field \"%s\" is not a valid %s name: use letters, digits, '.', '-' and '_'%s",
				 field, branch ? "branch" : "tag", branch ? " in segments joined by '/'" : "");
}

void
refs_read(const LnRequest *req, const CatalogObject *table, const char *kind, const char *name,
		  LnRefContents *contents)
{
	char *text = storage_read_ref(table->location, kind, name);
	bool branch = strcmp(kind, "branches") == 0;

	if (text == NULL)
		ln_error(branch ? LN_TABLE_BRANCH_NOT_FOUND : LN_TABLE_TAG_NOT_FOUND,
				 "%s \"%s\" of table \"%s\" does not exist", branch ? "branch" : "tag", name,
				 ln_id_string(&req->id, req->id.len));
	if (!json_parse_ref_file(text, branch, contents))
		ln_error(LN_INVALID_TABLE_STATE, "the file of %s \"%s\" of table \"%s\" is not valid",
				 branch ? "branch" : "tag", name, ln_id_string(&req->id, req->id.len));
}

/* The contents of tag req->tag; LN008 if it does not exist. */
void
refs_get_tag(const LnRequest *req, const CatalogObject *table, LnRefContents *tag)
{
	refs_check_name(req->tag, "tag", false);
	if (!storage_is_managed(table->location))
		ln_error(LN_TABLE_TAG_NOT_FOUND, "tag \"%s\" of table \"%s\" does not exist", req->tag,
				 ln_id_string(&req->id, req->id.len));
	refs_read(req, table, "tags", req->tag, tag);
}

/*
 * The tags of a table that point at versions of `branch` (NULL: main):
 * their names and versions, each tag file read once.
 */
int
refs_tags_on_branch(const LnRequest *req, const CatalogObject *table, const char *branch,
					char ***tag_names, int64 **versions)
{
	char **names;
	int n;
	int found = 0;

	*tag_names = NULL;
	*versions = NULL;
	if (!storage_is_managed(table->location))
		return 0;
	n = storage_list_refs(table->location, "tags", &names);
	*tag_names = palloc(sizeof(char *) * (n + 1));
	*versions = palloc(sizeof(int64) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		LnRefContents tag;

		CHECK_FOR_INTERRUPTS();
		refs_read(req, table, "tags", names[i], &tag);
		if ((tag.branch == NULL && branch == NULL) ||
			(tag.branch != NULL && branch != NULL && strcmp(tag.branch, branch) == 0))
		{
			(*tag_names)[found] = names[i];
			(*versions)[found++] = tag.version;
		}
	}
	return found;
}
