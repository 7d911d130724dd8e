/*
 * s3_sign.c
 *		How a request is written for AWS Signature V4: its URL with the key
 *		percent-encoded, its headers with the payload hash, and the body of
 *		a DeleteObjects request.
 *
 * libcurl (Debian 12: 7.88) sends the requests and signs them with AWS
 * Signature V4 itself (CURLOPT_AWS_SIGV4).  The gaps of that version's
 * signer are worked around by how requests are written, not by signing by
 * hand: it signs the query string as it is given, so every query is given
 * in canonical form (parameters sorted, values percent-encoded, "delete="
 * rather than "delete"); it signs the path as given, so every key is sent
 * percent-encoded byte by byte (all but A-Z a-z 0-9 - _ . ~ and '/'), which
 * is what S3 computes; it signs a header that only removes a default one
 * ("Expect:") and orders signed headers by "name:value", so neither such a
 * header nor x-amz-copy-source-if-match is sent.  test/node/s3server.mjs
 * checks the signature of every request the tests send against aws4, a
 * maintained signer.  A setting without keys sends its requests unsigned.
 */
#include "postgres.h"

#include <curl/curl.h>

#include "common/base64.h"
#include "common/cryptohash.h"
#include "common/md5.h"
#include "common/sha2.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"

#include "../common/pg_compat.h"
#include "s3_client.h"
#include "s3_internal.h"

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* Append `s` percent-encoded as S3 signs it; '/' kept when `keep_slash`. */
void
s3_append_encoded(StringInfo buf, const char *s, bool keep_slash)
{
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
	{
		if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
			*c == '-' || *c == '_' || *c == '.' || *c == '~' || (keep_slash && *c == '/'))
			appendStringInfoChar(buf, (char)*c);
		else
			appendStringInfo(buf, "%%%02X", *c);
	}
}

char *
s3_object_url(const S3Store *store, const char *key, const char *query)
{
	StringInfoData url;
	const char *host = strstr(store->endpoint, "://") + 3;

	initStringInfo(&url);
	if (store->virtual_hosted)
		appendStringInfo(&url, "%.*s%s.%s/", (int)(host - store->endpoint), store->endpoint,
						 store->bucket, host);
	else
		appendStringInfo(&url, "%s/%s/", store->endpoint, store->bucket);
	if (key != NULL)
		s3_append_encoded(&url, key, true);
	if (query != NULL)
		appendStringInfo(&url, "?%s", query);
	return url.data;
}

static void
hex_digest(pg_cryptohash_type type, const char *data, size_t len, uint8 *out, size_t out_len)
{
	pg_cryptohash_ctx *ctx = pg_cryptohash_create(type);

	if (ctx == NULL || pg_cryptohash_init(ctx) < 0 ||
		pg_cryptohash_update(ctx, (const uint8 *)data, len) < 0 ||
		pg_cryptohash_final(ctx, out, out_len) < 0)
	{
		pg_cryptohash_free(ctx);
		ereport(ERROR, (errmsg("could not compute a digest for an object store request")));
	}
	pg_cryptohash_free(ctx);
}

static char *
sha256_hex(const char *data, size_t len)
{
	uint8 digest[PG_SHA256_DIGEST_LENGTH];
	char *hex = palloc(PG_SHA256_DIGEST_LENGTH * 2 + 1);

	if (len == 0)
		return pstrdup(EMPTY_SHA256);
	hex_digest(PG_SHA256, data, len, digest, sizeof(digest));
	hex_encode((const char *)digest, PG_SHA256_DIGEST_LENGTH, hex);
	hex[PG_SHA256_DIGEST_LENGTH * 2] = '\0';
	return hex;
}

static char *
md5_base64(const char *data, size_t len)
{
	uint8 digest[MD5_DIGEST_LENGTH];
	char *out = palloc(pg_b64_enc_len(MD5_DIGEST_LENGTH) + 1);
	int n;

	hex_digest(PG_MD5, data, len, digest, sizeof(digest));
	n = ln_b64_encode(digest, MD5_DIGEST_LENGTH, out, pg_b64_enc_len(MD5_DIGEST_LENGTH));
	out[n] = '\0';
	return out;
}

/*
 * The headers of a request: the payload hash (signed, as S3 requires), the
 * session token, a content type for a body, and `extra`.  malloc'd by curl:
 * the caller frees them with curl_slist_free_all.
 */
struct curl_slist *
s3_build_headers(const S3Store *store, const char *method, const char *body, size_t body_len,
				 List *extra)
{
	List *lines = list_make1(psprintf("x-amz-content-sha256: %s", sha256_hex(body, body_len)));
	struct curl_slist *headers = NULL;
	ListCell *lc;

	if (body != NULL && strcmp(method, "PUT") == 0)
		lines = lappend(lines, "Content-Type: application/octet-stream");
	if (store->session_token != NULL && store->access_key_id != NULL)
		lines = lappend(lines, psprintf("x-amz-security-token: %s", store->session_token));
	lines = list_concat(lines, extra);
	foreach (lc, lines)
	{
		struct curl_slist *more = curl_slist_append(headers, (char *)lfirst(lc));

		if (more == NULL)
		{
			curl_slist_free_all(headers);
			ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
		}
		headers = more;
	}
	return headers;
}

/* The body of a DeleteObjects request for `keys`. */
StringInfo
s3_delete_request(char **keys, int n)
{
	StringInfo xml = makeStringInfo();

	appendStringInfoString(xml, "<Delete><Quiet>true</Quiet>");
	for (int i = 0; i < n; i++)
	{
		appendStringInfoString(xml, "<Object><Key>");
		for (const char *c = keys[i]; *c; c++)
		{
			if (*c == '&')
				appendStringInfoString(xml, "&amp;");
			else if (*c == '<')
				appendStringInfoString(xml, "&lt;");
			else if (*c == '>')
				appendStringInfoString(xml, "&gt;");
			else if ((unsigned char)*c < 0x20)
				/* XML would read a raw CR as LF: another key */
				appendStringInfo(xml, "&#x%X;", (unsigned char)*c);
			else
				appendStringInfoChar(xml, *c);
		}
		appendStringInfoString(xml, "</Key></Object>");
	}
	appendStringInfoString(xml, "</Delete>");
	return xml;
}

/* The headers a DeleteObjects request with body `xml` needs besides the usual. */
List *
s3_delete_headers(StringInfo xml)
{
	return list_make2(psprintf("Content-MD5: %s", md5_base64(xml->data, xml->len)),
					  "Content-Type: application/xml");
}
