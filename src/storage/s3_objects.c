/*
 * s3_objects.c
 *		The calls on objects of a bucket: look up, read, write, copy and
 *		delete one, delete many, list those below a prefix.
 *
 * Each call sends its requests through s3_request (s3_transport.c) and
 * judges what the store answered: a status or an error code of the store
 * becomes a Lance error (raise_for), or, for a quiet call, a failure handed
 * back to the caller.  Listings and batch deletes are read with s3_xml.c.
 */
#include "postgres.h"

#include <curl/curl.h>

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "../common/error.h"
#include "../common/pg_compat.h"
#include "s3_client.h"
#include "s3_internal.h"

#define MAX_RESPONSE (256 * 1024 * 1024)
#define MAX_SMALL	 (1024 * 1024) /* an answer with no object in it */

/*
 * Raise the Lance error for an answer that is no success, by the store's
 * error code: access denied is the store's to grant (LN015, with its
 * reason); a missing bucket, a key the store cannot take, or a bucket
 * reached in the wrong region or at the wrong endpoint are locations or
 * settings that cannot work (LN013); a conflicting operation on the bucket
 * is LN014; anything else the catalog did not expect (LN018, logged).
 */
pg_noreturn static void
raise_for(const S3Store *store, const S3Result *r, const char *what, const char *key)
{
	char *reason = s3_store_reason(r);
	char *code = s3_store_code(r);

	if (r->status == 403 || r->status == 401 || strcmp(code, "ExpiredToken") == 0 ||
		strcmp(code, "InvalidToken") == 0 || strcmp(code, "TokenRefreshRequired") == 0)
		ln_error_detail(LN_PERMISSION_DENIED,
						"Check the access key and the policy of the storage setting.",
						"the object store refused to %s \"%s\" in bucket \"%s\": %s", what, key,
						store->bucket, reason);
	if (strcmp(code, "NoSuchBucket") == 0)
		ln_error(LN_INVALID_INPUT, "bucket \"%s\" does not exist (%s \"%s\")", store->bucket, what,
				 key);
	if (strcmp(code, "KeyTooLongError") == 0 || strcmp(code, "InvalidArgument") == 0 ||
		strcmp(code, "InvalidObjectName") == 0 || strcmp(code, "InvalidBucketName") == 0)
		ln_error(LN_INVALID_INPUT, "the object store cannot %s \"%s\" in bucket \"%s\": %s", what,
				 key, store->bucket, reason);
	/* a HEAD answer has no body: a bare 400 there is what S3 answers a request for the wrong region
	 */
	if (r->status == 301 || r->status == 307 || strcmp(code, "PermanentRedirect") == 0 ||
		strcmp(code, "AuthorizationHeaderMalformed") == 0 ||
		strcmp(code, "IllegalLocationConstraintException") == 0 ||
		(r->status == 400 && code[0] == '\0'))
		ln_error_detail(LN_INVALID_INPUT,
						"Check aws_region and aws_endpoint of the storage setting.",
						"bucket \"%s\" is not reached where the storage setting says: %s",
						store->bucket, reason);
	if (r->status == 409)
		ln_error(LN_CONCURRENT_MODIFICATION,
				 "the object store could not %s \"%s\" in bucket \"%s\" now: %s", what, key,
				 store->bucket, reason);
	ln_error(LN_INTERNAL, "the object store could not %s \"%s\" in bucket \"%s\": %s", what, key,
			 store->bucket, reason);
}

/* Whether object `key` exists; *size gets its size. */
bool
s3_head(const S3Store *store, const char *key, int64 *size)
{
	S3Result r;
	curl_off_t length = -1;

	s3_request(store, "HEAD", key, NULL, NIL, NULL, 0, false, MAX_SMALL, &r);
	if (r.status == 404)
		return false;
	if (r.status != 200)
		raise_for(store, &r, "look up", key);
	curl_easy_getinfo(s3_easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
	if (size != NULL)
		*size = (int64)length;
	return true;
}

/* The bytes of object `key` (at most `max_len`), or NULL if there is none. */
char *
s3_get(const S3Store *store, const char *key, size_t max_len, size_t *len)
{
	S3Result r;

	s3_request(store, "GET", key, NULL, NIL, NULL, 0, false, Min(max_len, MAX_RESPONSE), &r);
	if (r.status == 404 && strcmp(s3_store_code(&r), "NoSuchBucket") != 0)
		return NULL;
	if (r.status != 200)
		raise_for(store, &r, "read", key);
	if (len != NULL)
		*len = r.len;
	return r.body;
}

void
s3_put(const S3Store *store, const char *key, const char *bytes, size_t len)
{
	S3Result r;

	s3_request(store, "PUT", key, NULL, NIL, bytes, len, false, MAX_SMALL, &r);
	if (r.status != 200)
		raise_for(store, &r, "write", key);
}

bool
s3_put_quietly(const S3Store *store, const char *key, const char *bytes, size_t len, char **error,
			   bool *no_answer)
{
	S3Result r;

	s3_request(store, "PUT", key, NULL, NIL, bytes, len, true, MAX_SMALL, &r);
	*error = r.error;
	*no_answer = r.error != NULL && (r.status == 0 || r.status >= 500);
	return r.error == NULL;
}

/*
 * Copy object `from_key` to `to_key` in the store (a server-side copy: the
 * bytes do not pass through the catalog).  A missing source raises LN013.
 *
 * Not conditional (x-amz-copy-source-if-match): curl 7.88 orders the signed
 * headers by "name:value" rather than by name, which puts that header
 * before x-amz-copy-source, and S3 would refuse the signature.
 */
void
s3_copy(const S3Store *store, const char *from_key, const char *to_key)
{
	StringInfoData source;
	S3Result r;

	initStringInfo(&source);
	appendStringInfo(&source, "x-amz-copy-source: /%s/", store->bucket);
	s3_append_encoded(&source, from_key, true);
	s3_request(store, "PUT", to_key, NULL, list_make1(source.data), NULL, 0, false, MAX_SMALL, &r);
	/* a copy can fail after its 200: the error is then in the body */
	if (r.status == 200 && strstr(r.body, "<Error>") == NULL)
		return;
	if (r.status == 404 && strcmp(s3_store_code(&r), "NoSuchKey") == 0)
		ln_error(LN_INVALID_INPUT, "staging manifest \"%s\" does not exist in bucket \"%s\"",
				 from_key, store->bucket);
	/* an error after the 200 is one of the store's (InternalError, SlowDown): retry later */
	if (r.status == 200)
		ln_error_detail(LN_SERVICE_UNAVAILABLE, "Retry once the object store is available again.",
						"the object store of bucket \"%s\" failed to copy to \"%s\": %s",
						store->bucket, to_key, s3_store_reason(&r));
	raise_for(store, &r, "copy to", to_key);
}

/* Send one DeleteObjects request for `keys` (a thousand at most). */
static void
post_delete(const S3Store *store, char **keys, int n, bool quiet, S3Result *r)
{
	StringInfo xml = s3_delete_request(keys, n);

	Assert(n <= DELETE_BATCH);
	s3_request(store, "POST", NULL, "delete=", s3_delete_headers(xml), xml->data, xml->len, quiet,
			   MAX_LISTING, r);
}

/* Delete object `key` (none there is no error). */
void
s3_delete(const S3Store *store, const char *key)
{
	S3Result r;

	s3_request(store, "DELETE", key, NULL, NIL, NULL, 0, false, MAX_SMALL, &r);
	if (r.status != 204 && r.status != 200 && r.status != 404)
		raise_for(store, &r, "delete", key);
}

/*
 * Delete `keys` (at most a thousand) with one request, raising nothing;
 * false with *error if not all were deleted, and *no_answer if the store
 * did not answer at all.
 */
bool
s3_delete_keys_quietly(const S3Store *store, char **keys, int n, char **error, bool *no_answer)
{
	S3Result r;

	*error = NULL;
	*no_answer = false;
	if (n == 0)
		return true;
	post_delete(store, keys, n, true, &r);
	*no_answer = r.error != NULL && (r.status == 0 || r.status >= 500);
	if (r.error == NULL && r.status == 200)
		*error = s3_delete_failure(store, &r);
	else
		*error = r.error ? r.error : psprintf("HTTP status %ld", r.status);
	return *error == NULL;
}

/*
 * Delete object `key`, raising nothing; false with *error if it failed, and
 * *no_answer if the store did not answer at all.
 */
bool
s3_delete_quietly(const S3Store *store, const char *key, char **error, bool *no_answer)
{
	S3Result r;

	s3_request(store, "DELETE", key, NULL, NIL, NULL, 0, true, MAX_SMALL, &r);
	*error = r.error;
	*no_answer = r.error != NULL && (r.status == 0 || r.status >= 500);
	return r.error == NULL;
}

/*
 * The keys that start with `prefix`, in the store's (byte) order, at most
 * `max_keys` (then one more, so that the caller sees there are more).
 */
int
s3_list(const S3Store *store, const char *prefix, int max_keys, char ***keys)
{
	int n = 0;
	int cap = 64;
	char *token = NULL;
	char *previous;

	*keys = palloc(sizeof(char *) * cap);
	do
	{
		StringInfoData query;
		S3Result r;
		const char *at;
		char *key;
		char *truncated;

		CHECK_FOR_INTERRUPTS();
		/* parameters in canonical order: the signer takes the query as given */
		initStringInfo(&query);
		if (token != NULL)
		{
			appendStringInfoString(&query, "continuation-token=");
			s3_append_encoded(&query, token, false);
			appendStringInfoChar(&query, '&');
		}
		appendStringInfoString(&query, "list-type=2&prefix=");
		s3_append_encoded(&query, prefix, false);
		s3_request(store, "GET", NULL, query.data, NIL, NULL, 0, false, MAX_LISTING, &r);
		if (r.status != 200)
			raise_for(store, &r, "list", prefix);
		at = r.body;
		while ((key = s3_xml_element(r.body, &at, "Key")) != NULL)
		{
			/* a store that answers keys outside the prefix is not to be trusted with deletes */
			if (strncmp(key, prefix, strlen(prefix)) != 0)
				ln_error(LN_INTERNAL,
						 "the object store listed \"%s\" for prefix \"%s\" in bucket \"%s\"", key,
						 prefix, store->bucket);
			if (n == cap)
				*keys = repalloc(*keys, sizeof(char *) * (cap *= 2));
			(*keys)[n++] = key;
		}
		at = r.body;
		truncated = s3_xml_element(r.body, &at, "IsTruncated");
		at = r.body;
		previous = token;
		token = truncated && strcmp(truncated, "true") == 0
					? s3_xml_element(r.body, &at, "NextContinuationToken")
					: NULL;
		/* a store that hands out the same page again would have this run for ever */
		if (token != NULL && previous != NULL && strcmp(token, previous) == 0)
			ln_error(LN_INTERNAL,
					 "the object store answered the same continuation token twice listing \"%s\" "
					 "in bucket \"%s\"",
					 prefix, store->bucket);
	} while (token != NULL && n <= max_keys);
	return n;
}

/*
 * Delete every object whose key starts with `prefix` (which ends with '/'),
 * a thousand per request.  Returns NULL, or why not everything was deleted.
 */
char *
s3_delete_prefix(const S3Store *store, const char *prefix)
{
	MemoryContext round_cxt = AllocSetContextCreate(CurrentMemoryContext, "lance_namespace delete",
													ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(round_cxt);
	char *last_first = NULL; /* the first key of the round before, in the caller's context */
	char *reason = NULL;

	for (;;)
	{
		char **keys;
		int n = s3_list(store, prefix, DELETE_BATCH - 1, &keys);
		S3Result r;

		if (n == 0)
			break;
		/* a key the store lists again after its deletion would have this loop run for ever */
		if (last_first != NULL && strcmp(keys[0], last_first) == 0)
		{
			reason =
				psprintf("the object store still lists \"%s\" in bucket \"%s\" after deleting it",
						 keys[0], store->bucket);
			break;
		}
		last_first = MemoryContextStrdup(old, keys[0]);
		post_delete(store, keys, Min(n, DELETE_BATCH), false, &r);
		if (r.status != 200)
			raise_for(store, &r, "delete objects below", prefix);
		if ((reason = s3_delete_failure(store, &r)) != NULL)
			break;
		MemoryContextReset(round_cxt);
		CHECK_FOR_INTERRUPTS();
	}
	MemoryContextSwitchTo(old);
	if (reason != NULL)
		reason = pstrdup(reason);
	MemoryContextDelete(round_cxt);
	return reason;
}
