/*
 * request.c
 *		Helpers for decoded requests that the handlers, the JSON edge and
 *		the commit log share: enumerated values, ids, paging, maps.
 */
#include "postgres.h"

#include "lib/stringinfo.h"

#include "error.h"
#include "request.h"

/* Page size when the request gives no limit, and the largest page we send. */
#define LN_DEFAULT_PAGE_LIMIT 1000
#define LN_MAX_PAGE_LIMIT	  10000

/*
 * Map an enumerated request value to its number.  Values are
 * case-insensitive and may be written in PascalCase or snake_case
 * ("ExistOk", "exist_ok", "existok").  NULL gives the default.
 */
int
ln_parse_enum(const char *given, const char *field, const LnEnumValue *values, int default_value)
{
	StringInfoData accepted;
	char *folded;
	int n = 0;

	if (given == NULL)
		return default_value;

	folded = palloc(strlen(given) + 1);
	for (const char *c = given; *c; c++)
		if (*c != '_')
			folded[n++] = pg_ascii_tolower((unsigned char)*c);
	folded[n] = '\0';

	for (const LnEnumValue *v = values; v->name != NULL; v++)
		if (pg_strcasecmp(folded, v->name) == 0)
			return v->value;

	initStringInfo(&accepted);
	for (const LnEnumValue *v = values; v->name != NULL; v++)
		appendStringInfo(&accepted, "%s%s", v == values ? "" : ", ", v->name);
	ln_error(LN_INVALID_INPUT, "field \"%s\" has unknown value \"%s\" (accepted: %s)", field, given,
			 accepted.data);
}

void
ln_require_id(const LnRequest *req)
{
	if ((req->present & LN_REQ_ID) == 0)
		ln_error(LN_INVALID_INPUT, "field \"id\" is required");
}

void
ln_require_table_id(const LnRequest *req)
{
	ln_require_id(req);
	if (req->id.len == 0)
		ln_error(LN_INVALID_INPUT, "field \"id\" must name a table, not the root namespace");
}

/*
 * The first `len` names of `id` in the spec's string form, joined by "$",
 * for messages.  The root namespace is written as the bare delimiter.
 */
char *
ln_id_string(const LnId *id, int len)
{
	StringInfoData buf;

	if (len == 0)
		return pstrdup("$");
	initStringInfo(&buf);
	for (int i = 0; i < len; i++)
		appendStringInfo(&buf, "%s%s", i ? "$" : "", id->names[i]);
	return buf.data;
}

/* An id from its string form (ln_id_string); "$" is the root. */
LnId
ln_id_parse(const char *text)
{
	LnId id = {0, palloc(sizeof(char *) * (strlen(text) + 2))};
	char *copy = pstrdup(text);
	char *start = copy;

	if (strcmp(text, "$") == 0)
		return id;
	for (char *c = copy;; c++)
	{
		if (*c == '$' || *c == '\0')
		{
			bool end = *c == '\0';

			*c = '\0';
			id.names[id.len++] = start;
			if (end)
				break;
			start = c + 1;
		}
	}
	return id;
}

LnId
ln_id_prefix(const LnId *id, int len)
{
	LnId prefix = {len, id->names};

	return prefix;
}

int
ln_page_limit(const LnRequest *req)
{
	if ((req->present & LN_REQ_LIMIT) == 0)
		return LN_DEFAULT_PAGE_LIMIT;
	return (int)Min(req->limit, LN_MAX_PAGE_LIMIT);
}

/*
 * Cut a list of names fetched with limit + 1 rows to one page.  When more
 * remain, the page token is the last name sent: the next page starts after
 * it, which returns every name once even as names come and go, and never
 * returns the same token twice.
 */
void
ln_cut_page(LnResponse *resp, int limit)
{
	if (resp->nnames <= limit)
		return;
	resp->nnames = limit;
	if (limit > 0)
	{
		resp->fields |= LN_RESP_PAGE_TOKEN;
		resp->page_token = resp->names[limit - 1];
	}
}

LnMap
ln_empty_map(void)
{
	LnMap map = {0, NULL, NULL};

	return map;
}

/*
 * Whether a context key or header name looks like it carries a credential:
 * it holds (in any case) one of these words.  The commit log, which every
 * catalog role and every dump can read, never keeps such an entry.  Broad on
 * purpose: a harmless key that matches is lost from the log, while a secret
 * that slipped through would stay in it.
 */
bool
ln_is_credential_name(const char *name)
{
	static const char *const words[] = {"authoriz", "cookie",  "credential", "key",	 "passw",
										"secret",	"session", "signature",	 "token"};
	char *folded = pstrdup(name);
	bool credential = false;

	for (char *c = folded; *c; c++)
		*c = pg_ascii_tolower((unsigned char)*c);
	for (size_t i = 0; i < lengthof(words) && !credential; i++)
		credential = strstr(folded, words[i]) != NULL;
	pfree(folded);
	return credential;
}

/*
 * What the commit log keeps of a request's context or of its recorded
 * headers (`what`, for the message): at most LN_RECORDED_MAX_MEMBERS
 * entries of at most LN_RECORDED_MAX_BYTES of keys and values together
 * (code 13 past either bound, counted on what was sent), without the
 * credential-like ones.
 */
LnMap
ln_recorded_map(const LnMap *map, const char *what)
{
	LnMap kept = {0, palloc(sizeof(char *) * (map->len + 1)),
				  palloc(sizeof(char *) * (map->len + 1))};
	Size bytes = 0;

	if (map->len > LN_RECORDED_MAX_MEMBERS)
		ln_error(LN_INVALID_INPUT, "%s: %d members, more than the commit log keeps (%d)", what,
				 map->len, LN_RECORDED_MAX_MEMBERS);
	for (int i = 0; i < map->len; i++)
		bytes += strlen(map->keys[i]) + strlen(map->values[i]);
	if (bytes > LN_RECORDED_MAX_BYTES)
		ln_error(LN_INVALID_INPUT,
				 "%s: %zu bytes of keys and values, more than the commit log keeps (%d)", what,
				 bytes, LN_RECORDED_MAX_BYTES);
	for (int i = 0; i < map->len; i++)
		if (!ln_is_credential_name(map->keys[i]))
		{
			kept.keys[kept.len] = map->keys[i];
			kept.values[kept.len++] = map->values[i];
		}
	return kept;
}
/* Order of list-form ids: name by name, a prefix first. */
int
ln_compare_ids(const LnId *a, const LnId *b)
{
	for (int i = 0; i < a->len && i < b->len; i++)
	{
		int c = strcmp(a->names[i], b->names[i]);

		if (c != 0)
			return c;
	}
	return a->len - b->len;
}

/* The index of `key` in `map`, or -1. */
int
ln_map_index(const LnMap *map, const char *key)
{
	for (int i = 0; i < map->len; i++)
		if (strcmp(map->keys[i], key) == 0)
			return i;
	return -1;
}

/* The value of `key` in `map`, or NULL. */
const char *
ln_map_get(const LnMap *map, const char *key)
{
	int i = ln_map_index(map, key);

	return i < 0 ? NULL : map->values[i];
}
