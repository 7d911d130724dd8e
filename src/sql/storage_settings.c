/*
 * storage_settings.c
 *		lance_set_storage, lance_remove_storage and lance_list_storage: the
 *		object stores tables live in, and the options that reach them.
 *
 * A setting is an S3 location prefix, Lance's storage options for it
 * (lance_catalog.storage), which the catalog uses to write manifests, tags
 * and branches of the tables below the prefix, and how callers that may
 * read such a table are handed credentials ("vend": none, keys of their
 * privilege, temporary keys of the token service, or the catalog's own).
 * Only administrators set, remove and list them; a listing shows secret
 * options (keys, tokens) as "****", and they never enter the change log.
 *
 * lance_adopt_storage() makes this catalog the one of record for its
 * tables' storage (catalog_identity.c): a restored copy writes and removes
 * nothing there until an administrator runs it.
 */
#include "postgres.h"

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/jsonb.h"

#include "../access/access.h"
#include "../catalog/catalog.h"
#include "../common/error.h"
#include "../frame/frame.h"
#include "../json/json_edge.h"
#include "../storage/location.h"
#include "../storage/storage.h"

#define HIDDEN "****"

/* `options` with secret values replaced by HIDDEN. */
static LnMap
without_secrets(const LnMap *options)
{
	LnMap shown = {options->len, palloc(sizeof(char *) * (options->len + 1)),
				   palloc(sizeof(char *) * (options->len + 1))};

	for (int i = 0; i < options->len; i++)
	{
		shown.keys[i] = options->keys[i];
		shown.values[i] =
			storage_option_is_secret(options->keys[i]) ? pstrdup(HIDDEN) : options->values[i];
	}
	return shown;
}

/*
 * A setting's vend members as a listing shows them: a key pair's secrets
 * and the external id replaced by HIDDEN.
 */
static LnMap
vend_without_secrets(const LnMap *vend)
{
	LnMap shown = {vend->len, palloc(sizeof(char *) * (vend->len + 1)),
				   palloc(sizeof(char *) * (vend->len + 1))};

	for (int i = 0; i < vend->len; i++)
	{
		shown.keys[i] = vend->keys[i];
		shown.values[i] = vend->values[i];
		if (strcmp(vend->keys[i], "read") == 0 || strcmp(vend->keys[i], "write") == 0)
		{
			LnMap pair = json_decode_option_text(vend->values[i]);
			LnMap hidden = without_secrets(&pair);

			shown.values[i] = json_map_text(&hidden);
		}
		else if (strcmp(vend->keys[i], "external_id") == 0)
			shown.values[i] = pstrdup(HIDDEN);
	}
	return shown;
}

/* The spelling a setting is kept under: the folder key of its prefix. */
static char *
setting_key(const char *location)
{
	char *key;

	storage_check_location_spelling(location);
	key = location_folder_key(location);
	if (key == NULL || pg_strncasecmp(location, "s3://", 5) != 0)
		ln_error_detail(LN_INVALID_INPUT,
						"Give an S3 URI: s3://bucket or s3://bucket/prefix, the bucket named as S3 "
						"names buckets (3 to 63 lower-case letters, digits, '.' and '-').",
						"storage location \"%s\" is not an S3 location", location);
	return key;
}

/* How many tables or namespaces a refusal names (one more tells that there are more). */
#define NAMED_AT_MOST 10

/* `ids`, at most NAMED_AT_MOST of them, quoted and joined for a message. */
static char *
named_list(char **ids, int n)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < n && i < NAMED_AT_MOST; i++)
		appendStringInfo(&buf, "%s\"%s\"", i ? ", " : "", ids[i]);
	if (n > NAMED_AT_MOST)
		appendStringInfoString(&buf, " and more");
	return buf.data;
}

/*
 * A new setting takes over what lies at its prefix: the tables there become
 * managed (the catalog writes their manifests and hands whoever may read
 * them what the setting's vend allows, the setting's own keys with
 * catalog_keys), and so do the tables namespaces with a
 * "location" property at, below or above the prefix place there from now
 * on.  Tables and namespace locations a writer chose where nothing was
 * managed are then the writer's way into the prefix, so the administrator
 * is told which they are, and sets the storage anyway with "take_over":
 * true once they are the ones meant.  Replacing a setting takes over
 * nothing new.
 */
static void
check_take_over(const char *key)
{
	char *prefix;
	LnMap options;
	LnMap vend;
	char **tables;
	char **namespaces;
	int ntables;
	int nnamespaces;

	/*
	 * Under a setting at or above the prefix (one being replaced, or a
	 * broader one), everything there is managed already.
	 */
	if (catalog_find_storage(key, &prefix, &options, &vend))
		return;
	ntables = catalog_tables_coming_under(key, NAMED_AT_MOST + 1, &tables);
	nnamespaces = catalog_namespaces_located_near(key, NAMED_AT_MOST + 1, &namespaces);
	if (ntables > 0)
		ln_error_detail(LN_INVALID_INPUT,
						"Check who placed them (lance_changes() names who registered or declared "
						"each); deregister those not meant to be managed, or pass \"take_over\": "
						"true to set the storage anyway.",
						"a setting for \"%s\" would take over tables placed while no setting "
						"managed them: %s",
						key, named_list(tables, ntables));
	if (nnamespaces > 0)
		ln_error_detail(LN_INVALID_INPUT,
						"Check who gave them their locations (lance_changes() names who created "
						"each); drop or overwrite those not meant to place tables there, or pass "
						"\"take_over\": true to set the storage anyway.",
						"a setting for \"%s\" would take over the tables of namespaces whose "
						"location is at, below or above it: %s",
						key, named_list(namespaces, nnamespaces));
}

static Jsonb *
set_storage(Jsonb *request)
{
	char *location;
	LnMap options;
	LnMap vend;
	LnMap shown;
	LnMap shown_vend;
	char *key;
	bool take_over;

	json_decode_storage_setting(request, true, &location, &options, &vend, &take_over);
	access_begin();
	access_require_admin("lance_set_storage");
	key = setting_key(location);
	storage_check_setting(key, &options, &vend);
	catalog_begin();
	/*
	 * Tables registered while nothing managed the prefix were never held to
	 * one folder each: managed, two on one folder would write (and undo)
	 * each other's manifests.
	 */
	{
		char *a;
		char *b;
		char *a_id;
		char *b_id;

		if (catalog_folders_shared_below(key, &a, &b, &a_id, &b_id))
			ln_error_detail(LN_INVALID_INPUT, "Move or deregister one of them first.",
							"tables \"%s\" at \"%s\" and \"%s\" at \"%s\" share a folder below "
							"\"%s\": the catalog cannot manage their versions",
							a_id, a, b_id, b, key);
	}
	if (!take_over)
		check_take_over(key);
	catalog_set_storage(key, &options, json_encode_vend(&vend), access_caller());
	catalog_end();
	storage_forget_settings();
	shown = without_secrets(&options);
	shown_vend = vend_without_secrets(&vend);
	return json_encode_storage_settings(1, &key, &shown, &shown_vend, true);
}

static Jsonb *
remove_storage(Jsonb *request)
{
	char *location;
	char *key;
	bool removed;

	json_decode_storage_setting(request, false, &location, NULL, NULL, NULL);
	access_begin();
	access_require_admin("lance_remove_storage");
	key = setting_key(location);
	catalog_begin();
	removed = catalog_remove_storage(key);
	catalog_end();
	storage_forget_settings();
	if (!removed)
		ln_error(LN_INVALID_INPUT, "there is no storage setting for \"%s\"", key);
	return json_encode_storage_settings(1, &key, NULL, NULL, true);
}

static Jsonb *
list_storage(void)
{
	char **locations;
	LnMap *options;
	char **vend_texts;
	LnMap *vends;
	int n;

	access_begin();
	access_require_admin("lance_list_storage");
	catalog_begin();
	n = catalog_list_storage(&locations, &options, &vend_texts);
	catalog_end();
	vends = palloc(sizeof(LnMap) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		LnMap vend = json_decode_vend_text(vend_texts[i]);

		options[i] = without_secrets(&options[i]);
		vends[i] = vend_without_secrets(&vend);
	}
	return json_encode_storage_settings(n, locations, options, vends, false);
}

PG_FUNCTION_INFO_V1(lance_set_storage);
Datum
lance_set_storage(PG_FUNCTION_ARGS)
{
	Jsonb *result = NULL;

	LANCE_SQL_ENTRY(result, set_storage(PG_GETARG_JSONB_P(0)));
	PG_RETURN_JSONB_P(result);
}

PG_FUNCTION_INFO_V1(lance_remove_storage);
Datum
lance_remove_storage(PG_FUNCTION_ARGS)
{
	Jsonb *result = NULL;

	LANCE_SQL_ENTRY(result, remove_storage(PG_GETARG_JSONB_P(0)));
	PG_RETURN_JSONB_P(result);
}

PG_FUNCTION_INFO_V1(lance_list_storage);
Datum
lance_list_storage(PG_FUNCTION_ARGS pg_attribute_unused())
{
	MemoryContext cxt = CurrentMemoryContext;
	Jsonb *result = NULL;

	ln_error_set_element(NULL);
	PG_TRY();
	{
		result = list_storage();
	}
	PG_CATCH();
	{
		frame_raise_as_lance_error(cxt);
	}
	PG_END_TRY();
	PG_RETURN_JSONB_P(result);
}

/*
 * Record this database of this cluster as the catalog of record: its drops
 * remove data and its commits write on storage from now on.  Answers the
 * identity recorded.  Not in the change log, as storage settings are not.
 */
static Jsonb *
adopt_storage(void)
{
	int64 system_identifier;
	Oid database;
	LnMap identity = {2, palloc(sizeof(char *) * 2), palloc(sizeof(char *) * 2)};

	access_begin();
	access_require_admin("lance_adopt_storage()");
	catalog_begin();
	catalog_adopt_storage(access_caller());
	catalog_end();
	catalog_current_identity(&system_identifier, &database);
	ereport(LOG, (errmsg("lance_namespace: database %u of system " UINT64_FORMAT
						 " is now the catalog of record for its tables' storage",
						 database, (uint64)system_identifier)));
	identity.keys[0] = "system_identifier";
	identity.values[0] = psprintf(UINT64_FORMAT, (uint64)system_identifier);
	identity.keys[1] = "database_oid";
	identity.values[1] = psprintf("%u", database);
	return json_encode_map(&identity);
}

PG_FUNCTION_INFO_V1(lance_adopt_storage);
Datum
lance_adopt_storage(PG_FUNCTION_ARGS pg_attribute_unused())
{
	MemoryContext cxt = CurrentMemoryContext;
	Jsonb *result = NULL;

	ln_error_set_element(NULL);
	PG_TRY();
	{
		result = adopt_storage();
	}
	PG_CATCH();
	{
		frame_raise_as_lance_error(cxt);
	}
	PG_END_TRY();
	PG_RETURN_JSONB_P(result);
}
