/*
 * storage_vend.c
 *		What a caller is handed to open a table on S3 itself (DescribeTable,
 *		DeclareTable): the storage options of its privilege on the table, as
 *		the setting's "vend" says.
 *
 * The setting's own "options" are the catalog's: they reach the store for
 * the catalog's own calls, and go to callers only in mode "catalog_keys",
 * which an administrator names.  The modes:
 *
 *	none			the store's non-secret options (region, endpoint, path
 *					style, allow_http): clients bring keys of their own.
 *	keys			those and the key pair the setting gives for the
 *					caller's privilege ("read", or "write" for write and
 *					manage).
 *	sts				those and temporary keys of the token service
 *					(AssumeRole, signed with the setting's keys) whose
 *					session policy lets them list and read the table's
 *					prefix, and for "write" put and delete below it, never
 *					the final manifests of a managed table (only the
 *					catalog writes those); with "expires_at_millis".
 *	catalog_keys	the setting's options as they are (what 0.5.0 did),
 *					with the region and endpoint added if they are missing.
 *
 * Every mode hands out the region and the endpoint, so that no client
 * probes a cloud's metadata address for them.
 *
 * Temporary keys are kept in this backend's memory, per setting, table and
 * privilege, and handed out again while more than RENEW_BEFORE of their
 * life is left (half their life, for keys that live less than twice that):
 * a backend asks the token service about once per table and privilege
 * every few minutes, and each backend keeps its own (there is no shared
 * memory to set up, and a gateway's backends live long).  A change of the
 * setting's role, external id, duration, endpoint or keys is another entry.
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "../common/error.h"
#include "../common/request.h"
#include "../json/json_edge.h"
#include "location.h"
#include "s3_client.h"
#include "storage.h"
#include "storage_internal.h"

/* Keys are handed out again while at least this much of their life is left */
#define RENEW_BEFORE_SECS 300
/* Entries the cache holds at most: past that, expired ones go, then the oldest */
#define MAX_CACHED		 256
#define DEFAULT_DURATION 900

typedef struct CachedCredentials
{
	char *identity; /* setting, table, privilege and the setting's members, joined */
	S3Credentials credentials;
	TimestampTz obtained;
	struct CachedCredentials *next;
} CachedCredentials;

static MemoryContext cache_cxt = NULL;
static CachedCredentials *cached = NULL;
static int ncached = 0;

/* Add `key`=`value` to `map` (which has room). */
static void
put(LnMap *map, const char *key, const char *value)
{
	map->keys[map->len] = pstrdup(key);
	map->values[map->len++] = pstrdup(value);
}

/*
 * The options every mode hands out: where the store is and how to address
 * it, as the object_store crate Lance uses reads them (with virtual-hosted
 * addressing, the endpoint names the bucket's host).
 */
static void
put_store_options(const S3Store *store, LnMap *map)
{
	const char *host = strstr(store->endpoint, "://") + 3;

	put(map, "aws_region", store->region);
	if (store->virtual_hosted)
	{
		put(map, "aws_endpoint",
			psprintf("%.*s%s.%s", (int)(host - store->endpoint), store->endpoint, store->bucket,
					 host));
		put(map, "aws_virtual_hosted_style_request", "true");
	}
	else
		put(map, "aws_endpoint", store->endpoint);
	if (pg_strncasecmp(store->endpoint, "http://", 7) == 0)
		put(map, "allow_http", "true");
}

/* The token service's endpoint: the setting's, or the region's of AWS. */
static char *
sts_endpoint(const S3Store *store, const LnMap *vend)
{
	const char *given = ln_map_get(vend, "sts_endpoint");

	if (given == NULL)
		return psprintf("https://sts.%s.amazonaws.com", store->region);
	return pstrdup(given);
}

/* The ARN partition of a region: China's and GovCloud's are their own. */
static const char *
partition_of(const char *region)
{
	if (strncmp(region, "cn-", 3) == 0)
		return "aws-cn";
	if (strncmp(region, "us-gov-", 7) == 0)
		return "aws-us-gov";
	return "aws";
}

/*
 * `key` as a policy writes it literally: '*', '?' and '$' are the policy
 * language's (wildcards, variables), written ${*}, ${?} and ${$} to mean
 * themselves, so that a table whose key holds one is granted no other
 * table's objects.
 */
static char *
policy_literal(const char *key)
{
	StringInfoData out;

	initStringInfo(&out);
	for (const char *c = key; *c; c++)
	{
		if (*c == '*' || *c == '?' || *c == '$')
			appendStringInfo(&out, "${%c}", *c);
		else
			appendStringInfoChar(&out, *c);
	}
	return out.data;
}

/*
 * The session policy of `privilege` on the table at `key` of `store`'s
 * bucket: list below the table's prefix and read its objects; with write,
 * put and delete them too, but for a managed table never its final
 * manifests (main's and every branch's, under _versions/ and
 * tree/<branch>/_versions/), which the catalog alone writes.
 */
static char *
session_policy(const S3Store *store, const char *key, bool write, bool managed)
{
	char *bucket_arn = psprintf("arn:%s:s3:::%s", partition_of(store->region), store->bucket);
	char *prefix = policy_literal(key);
	char *denied[2];

	denied[0] = psprintf("%s/%s/_versions/*.manifest", bucket_arn, prefix);
	denied[1] = psprintf("%s/%s/tree/*/_versions/*.manifest", bucket_arn, prefix);
	return json_encode_session_policy(bucket_arn, prefix, psprintf("%s/%s/*", bucket_arn, prefix),
									  write, denied, managed ? 2 : 0);
}

/*
 * A session name the token service takes ([A-Za-z0-9+=,.@_-], at most 64),
 * that says in its logs what the keys were for: the privilege and the end
 * of the table's key.
 */
static char *
session_name(const char *key, bool write)
{
	const char *tail = key + (strlen(key) > 48 ? strlen(key) - 48 : 0);
	StringInfoData out;

	initStringInfo(&out);
	appendStringInfo(&out, "lance-%s-", write ? "write" : "read");
	for (const char *c = tail; *c; c++)
		appendStringInfoChar(&out,
							 (isalnum((unsigned char)*c) || strchr("+=,.@_-", *c)) ? *c : '_');
	return out.data;
}

/* Free a cache entry and what it holds. */
static void
free_entry(CachedCredentials *c)
{
	pfree(c->identity);
	pfree(c->credentials.access_key_id);
	pfree(c->credentials.secret_access_key);
	pfree(c->credentials.session_token);
	pfree(c);
}

/* Forget expired entries; with the cache still full, the oldest one. */
static void
make_room(TimestampTz now)
{
	CachedCredentials **link = &cached;
	CachedCredentials **oldest = NULL;

	while (*link != NULL)
	{
		CachedCredentials *c = *link;

		if (c->credentials.expires_at <= now)
		{
			*link = c->next;
			free_entry(c);
			ncached--;
			continue;
		}
		if (oldest == NULL || c->obtained < (*oldest)->obtained)
			oldest = link;
		link = &c->next;
	}
	if (ncached >= MAX_CACHED && oldest != NULL)
	{
		CachedCredentials *c = *oldest;

		*oldest = c->next;
		free_entry(c);
		ncached--;
	}
}

/* Whether keys obtained at `obtained` that expire at `expires` may be handed out at `now`. */
static bool
still_fresh(TimestampTz obtained, TimestampTz expires, TimestampTz now)
{
	int64 life = expires - obtained;
	int64 margin = Min((int64)RENEW_BEFORE_SECS * USECS_PER_SEC, life / 2);

	return expires - now > margin;
}

/* Temporary keys of `write` or read on the table at `key`: kept ones if fresh, else new ones. */
static void
sts_credentials(const S3Store *store, const char *setting, const char *key, const LnMap *vend,
				bool write, bool managed, S3Credentials *out)
{
	const char *external_id = ln_map_get(vend, "external_id");
	const char *duration = ln_map_get(vend, "duration_seconds");
	S3AssumeRole request;
	char *identity;
	TimestampTz now = GetCurrentTimestamp();
	CachedCredentials *c;
	MemoryContext old;

	request.endpoint = sts_endpoint(store, vend);
	request.role_arn = ln_map_get(vend, "role_arn");
	request.external_id = external_id;
	request.duration_seconds = duration ? atoi(duration) : DEFAULT_DURATION;
	identity = psprintf("%s\n%s\n%s\n%s\n%s\n%s\n%d\n%s\n%d", setting, key, write ? "w" : "r",
						request.endpoint, request.role_arn, external_id ? external_id : "",
						request.duration_seconds, store->access_key_id, (int)managed);
	for (c = cached; c != NULL; c = c->next)
		if (strcmp(c->identity, identity) == 0 &&
			still_fresh(c->obtained, c->credentials.expires_at, now))
		{
			*out = c->credentials;
			return;
		}

	request.session_name = session_name(key, write);
	request.policy = session_policy(store, key, write, managed);
	s3_assume_role(store, &request, out);

	if (cache_cxt == NULL)
		cache_cxt = AllocSetContextCreate(TopMemoryContext, "lance_namespace vended credentials",
										  ALLOCSET_SMALL_SIZES);
	make_room(now);
	/* an entry of the same identity gone stale is replaced */
	for (CachedCredentials **link = &cached; *link != NULL; link = &(*link)->next)
		if (strcmp((*link)->identity, identity) == 0)
		{
			c = *link;
			*link = c->next;
			free_entry(c);
			ncached--;
			break;
		}
	old = MemoryContextSwitchTo(cache_cxt);
	c = palloc0(sizeof(CachedCredentials));
	c->identity = pstrdup(identity);
	c->credentials.access_key_id = pstrdup(out->access_key_id);
	c->credentials.secret_access_key = pstrdup(out->secret_access_key);
	c->credentials.session_token = pstrdup(out->session_token);
	c->credentials.expires_at = out->expires_at;
	c->obtained = now;
	c->next = cached;
	cached = c;
	ncached++;
	MemoryContextSwitchTo(old);
}

/* A TimestampTz as milliseconds since the Unix epoch. */
static int64
unix_millis(TimestampTz t)
{
	return (t + (int64)(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY) / 1000;
}

/*
 * The storage options a caller with `privilege` on the table at `location`
 * is handed (see the top of this file); false if it has none (a local
 * table, or one no setting covers).  Raises what the token service's
 * failure maps to.
 */
bool
storage_vend_options(const char *location, LnPrivilege privilege, LnMap *options)
{
	S3Store store;
	char *key;
	char *setting;
	LnMap settings_options;
	LnMap vend;
	const char *mode;
	bool write = privilege != LN_PRIV_READ;
	int room;

	if (pg_strncasecmp(location, "s3://", 5) != 0 ||
		!s3_table_setting(location, &store, &key, &setting, &settings_options, &vend))
		return false;
	mode = ln_map_get(&vend, "mode");
	if (mode == NULL)
		mode = "none";
	room = settings_options.len + 8;
	options->len = 0;
	options->keys = palloc(sizeof(char *) * (room + 1));
	options->values = palloc(sizeof(char *) * (room + 1));

	if (strcmp(mode, "catalog_keys") == 0)
	{
		LnMap store_options = {0, palloc(sizeof(char *) * 8), palloc(sizeof(char *) * 8)};

		for (int i = 0; i < settings_options.len; i++)
			put(options, settings_options.keys[i], settings_options.values[i]);
		put_store_options(&store, &store_options);
		for (int i = 0; i < store_options.len; i++)
			if ((strcmp(store_options.keys[i], "aws_region") == 0 &&
				 !s3_option_given(&settings_options, "region")) ||
				(strcmp(store_options.keys[i], "aws_endpoint") == 0 &&
				 !s3_option_given(&settings_options, "endpoint")))
				put(options, store_options.keys[i], store_options.values[i]);
		return true;
	}
	put_store_options(&store, options);
	if (strcmp(mode, "keys") == 0)
	{
		const char *pair_text = ln_map_get(&vend, write ? "write" : "read");
		LnMap pair = pair_text ? json_decode_option_text(pair_text) : ln_empty_map();

		options->keys = repalloc(options->keys, sizeof(char *) * (room + pair.len + 1));
		options->values = repalloc(options->values, sizeof(char *) * (room + pair.len + 1));
		for (int i = 0; i < pair.len; i++)
			put(options, pair.keys[i], pair.values[i]);
	}
	else if (strcmp(mode, "sts") == 0)
	{
		S3Credentials credentials;

		sts_credentials(&store, setting, key, &vend, write, s3_manages(location), &credentials);
		put(options, "aws_access_key_id", credentials.access_key_id);
		put(options, "aws_secret_access_key", credentials.secret_access_key);
		put(options, "aws_session_token", credentials.session_token);
		put(options, "expires_at_millis",
			psprintf(INT64_FORMAT, unix_millis(credentials.expires_at)));
	}
	return true;
}

/*
 * Check a setting's vend members against its store (LN013): a key pair per
 * privilege for "keys", each with a key id and its secret; for "sts" a role
 * ARN, an http(s) endpoint the setting's allow_http admits, and the
 * setting's own keys to sign AssumeRole with.
 */
void
storage_check_vend(const S3Store *store, const LnMap *vend)
{
	const char *mode = ln_map_get(vend, "mode");

	if (mode != NULL && strcmp(mode, "keys") == 0)
	{
		for (int i = 0; i < 2; i++)
		{
			const char *which = i == 0 ? "read" : "write";
			const char *text = ln_map_get(vend, which);
			LnMap pair;
			S3Store keys;

			if (text == NULL)
				ln_error_detail(LN_INVALID_INPUT,
								"Give \"read\" and \"write\", each a key pair of storage options.",
								"field \"vend.%s\" is required in mode \"keys\"", which);
			pair = json_decode_option_text(text);
			s3_store_from_options(store->bucket, &pair, &keys);
			if (keys.access_key_id == NULL)
				ln_error_detail(LN_INVALID_INPUT,
								"Give aws_access_key_id and aws_secret_access_key.",
								"field \"vend.%s\" has no access key", which);
		}
	}
	else if (mode != NULL && strcmp(mode, "sts") == 0)
	{
		const char *role_arn = ln_map_get(vend, "role_arn");
		const char *endpoint = ln_map_get(vend, "sts_endpoint");

		if (role_arn == NULL || strncmp(role_arn, "arn:", 4) != 0)
			ln_error_detail(LN_INVALID_INPUT,
							"Give the role as arn:aws:iam::<account>:role/<name>.",
							"field \"vend.role_arn\" is %s", role_arn ? "not an ARN" : "required");
		s3_check_no_controls("vend.role_arn", role_arn);
		s3_check_no_controls("vend.external_id", ln_map_get(vend, "external_id"));
		if (store->access_key_id == NULL)
			ln_error_detail(LN_INVALID_INPUT,
							"Give the setting's options the keys that may assume the role.",
							"mode \"sts\" needs the setting's own keys to call the token service");
		if (endpoint != NULL)
		{
			LnMap as_store = {
				2, (char *[]){"aws_endpoint", "allow_http"},
				(char *[]){(char *)endpoint,
						   pg_strncasecmp(store->endpoint, "http://", 7) == 0 ? "true" : "false"}};
			S3Store checked;

			s3_store_from_options(store->bucket, &as_store, &checked);
		}
	}
}
