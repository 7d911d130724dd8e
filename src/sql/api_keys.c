/*
 * api_keys.c
 *		API keys: how a REST caller names the role it acts as.
 *
 * A key is "lnk_", a 12-digit hexadecimal id, "_" and 256 random bits in
 * hexadecimal.  lance_create_api_key() answers it once; the catalog keeps
 * the id and a SHA-256 hash of the whole key (lance_catalog.api_key), which
 * is enough for a secret of that entropy: nobody can guess a key from its
 * hash, and checking one costs one index look-up.
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "../access/access.h"
#include "../catalog/catalog.h"
#include "../common/error.h"
#include "../frame/frame.h"
#include "api_keys.h"

#define KEY_PREFIX		 "lnk_"
#define KEY_ID_BYTES	 6
#define KEY_SECRET_BYTES 32
/* "lnk_" + id + "_" + secret */
#define KEY_ID_LENGTH (4 + 2 * KEY_ID_BYTES)
#define KEY_LENGTH	  (KEY_ID_LENGTH + 1 + 2 * KEY_SECRET_BYTES)

static void
append_random_hex(char *out, int nbytes)
{
	uint8 bytes[KEY_SECRET_BYTES];

	Assert(nbytes <= KEY_SECRET_BYTES);
	if (!pg_strong_random(bytes, nbytes))
		ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
						errmsg("could not generate random bytes for an API key")));
	hex_encode((const char *)bytes, nbytes, out);
	out[2 * nbytes] = '\0';
}

static bool
is_lower_hex(const char *s, int len)
{
	for (int i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/*
 * The role API key `key` acts as, or InvalidOid if it is not a key this
 * catalog made (or it was revoked, or it has expired: *expired).  With a
 * role, *key_id (when not NULL) is the key's id ("lnk_" and 12 hexadecimal
 * digits), palloc'd: the id of a key the catalog authenticated, never one
 * merely sent (an expired key answers 401 and is logged as none).
 */
Oid
api_key_role(const char *key, char **key_id, bool *expired)
{
	char id[KEY_ID_LENGTH + 1];
	Oid role;

	*expired = false;
	if (strlen(key) != KEY_LENGTH || strncmp(key, KEY_PREFIX, 4) != 0 ||
		!is_lower_hex(key + 4, 2 * KEY_ID_BYTES) || key[KEY_ID_LENGTH] != '_' ||
		!is_lower_hex(key + KEY_ID_LENGTH + 1, 2 * KEY_SECRET_BYTES))
		return InvalidOid;
	memcpy(id, key, KEY_ID_LENGTH);
	id[KEY_ID_LENGTH] = '\0';

	catalog_begin();
	role = catalog_authenticate(id, key, expired);
	catalog_end();
	if (key_id != NULL && OidIsValid(role))
		*key_id = pstrdup(id);
	return role;
}

/*
 * A key for `role_name`, which expires `valid_for` from now (NULL: never;
 * it must be positive).
 */
static text *
create_api_key(const char *role_name, const Interval *valid_for)
{
	char key[KEY_LENGTH + 1];
	char id[KEY_ID_LENGTH + 1];
	Oid role;
	Interval zero = {0, 0, 0};

	access_begin();
	access_require_admin("lance_create_api_key()");
	role = get_role_oid(role_name, true);
	if (!OidIsValid(role))
		ln_error(LN_INVALID_INPUT, "role \"%s\" does not exist", role_name);
	/* a key is as strong as its role: only a superuser hands out a superuser's */
	if (superuser_arg(role) && !superuser())
		ln_error(LN_PERMISSION_DENIED,
				 "only a superuser may create an API key for superuser role \"%s\"", role_name);

	if (valid_for != NULL &&
		DatumGetBool(DirectFunctionCall2(interval_le, IntervalPGetDatum(valid_for),
										 IntervalPGetDatum(&zero))))
		ln_error(LN_INVALID_INPUT, "valid_for must be a positive interval");

	strcpy(key, KEY_PREFIX);
	append_random_hex(key + 4, KEY_ID_BYTES);
	key[KEY_ID_LENGTH] = '_';
	append_random_hex(key + KEY_ID_LENGTH + 1, KEY_SECRET_BYTES);
	memcpy(id, key, KEY_ID_LENGTH);
	id[KEY_ID_LENGTH] = '\0';

	catalog_begin();
	catalog_insert_api_key(id, key, role, access_caller(), valid_for);
	catalog_end();
	return cstring_to_text(key);
}

/*
 * lance_create_api_key(role) and lance_create_api_key(role, valid_for): the
 * second is not strict, a NULL valid_for being a key that never expires.
 */
PG_FUNCTION_INFO_V1(lance_create_api_key);
Datum
lance_create_api_key(PG_FUNCTION_ARGS)
{
	MemoryContext cxt = CurrentMemoryContext;
	text *key = NULL;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	PG_TRY();
	{
		key = create_api_key(NameStr(*PG_GETARG_NAME(0)),
							 PG_NARGS() > 1 && !PG_ARGISNULL(1) ? PG_GETARG_INTERVAL_P(1) : NULL);
	}
	PG_CATCH();
	{
		frame_raise_as_lance_error(cxt);
	}
	PG_END_TRY();
	PG_RETURN_TEXT_P(key);
}

/*
 * lance_revoke_api_key(key_prefix_or_id): forget a key, named by its id
 * ("lnk_" and 12 hexadecimal digits) or by the whole key; true if there was
 * one.
 */
static bool
revoke_api_key(const char *key)
{
	char id[KEY_ID_LENGTH + 1];
	bool revoked;

	access_begin();
	access_require_admin("lance_revoke_api_key()");
	if (strlen(key) < KEY_ID_LENGTH || strncmp(key, KEY_PREFIX, 4) != 0 ||
		!is_lower_hex(key + 4, 2 * KEY_ID_BYTES))
		ln_error(LN_INVALID_INPUT,
				 "an API key's id is \"lnk_\" and 12 hexadecimal digits, the start of the key");
	memcpy(id, key, KEY_ID_LENGTH);
	id[KEY_ID_LENGTH] = '\0';

	catalog_begin();
	revoked = catalog_delete_api_key(id);
	catalog_end();
	return revoked;
}

PG_FUNCTION_INFO_V1(lance_revoke_api_key);
Datum
lance_revoke_api_key(PG_FUNCTION_ARGS)
{
	MemoryContext cxt = CurrentMemoryContext;
	bool revoked = false;

	PG_TRY();
	{
		revoked = revoke_api_key(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	}
	PG_CATCH();
	{
		frame_raise_as_lance_error(cxt);
	}
	PG_END_TRY();
	PG_RETURN_BOOL(revoked);
}

/*
 * lance_list_api_keys(): id, role, created_by, created_at, expires_at and
 * last_used_at of every key; never a key.
 */
PG_FUNCTION_INFO_V1(lance_list_api_keys);
Datum
lance_list_api_keys(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *)fcinfo->resultinfo;
	char **ids;
	Oid *roles;
	Oid *created_by;
	TimestampTz *created_at;
	TimestampTz *expires_at;
	TimestampTz *last_used_at;
	int n;

	InitMaterializedSRF(fcinfo, 0);
	access_begin();
	access_require_admin("lance_list_api_keys()");
	catalog_begin();
	n = catalog_list_api_keys(&ids, &roles, &created_by, &created_at, &expires_at, &last_used_at);
	catalog_end();
	for (int i = 0; i < n; i++)
	{
		Datum values[6];
		bool nulls[6] = {false, false, false, false, false, false};

		values[0] = CStringGetTextDatum(ids[i]);
		values[1] = ObjectIdGetDatum(roles[i]);
		values[2] = ObjectIdGetDatum(created_by[i]);
		nulls[2] = !OidIsValid(created_by[i]);
		values[3] = TimestampTzGetDatum(created_at[i]);
		values[4] = TimestampTzGetDatum(expires_at[i]);
		nulls[4] = expires_at[i] == DT_NOBEGIN;
		values[5] = TimestampTzGetDatum(last_used_at[i]);
		nulls[5] = last_used_at[i] == DT_NOBEGIN;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum)0;
}
