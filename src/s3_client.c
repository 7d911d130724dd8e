/*
 * s3_client.c
 *		Requests to an S3-compatible object store.
 *
 * libcurl (Debian 12: 7.88) sends the requests and signs them with AWS
 * Signature V4 itself (CURLOPT_AWS_SIGV4).  Two gaps of that version's
 * signer are worked around by how requests are written, not by signing by
 * hand: it signs the query string as it is given, so every query is given
 * in canonical form (parameters sorted, values percent-encoded, "delete="
 * rather than "delete"); and it signs the path as given, so every key is
 * sent percent-encoded byte by byte (all but A-Z a-z 0-9 - _ . ~ and '/'),
 * which is what S3 computes.  test/node/s3server.mjs checks the signature
 * of every request the tests send against aws4, a maintained signer.
 *
 * Each request runs in curl's multi interface, polled every 100 ms, so that
 * a query cancel or statement_timeout stops it at once: the transfer is
 * dropped and the interrupt raised.  A connect and a total timeout bound
 * every call, retries included.  Only failures that left nothing changed or
 * requests that are idempotent (all of ours: whole-object PUT, copy, GET,
 * HEAD, DELETE, list, batch delete) are retried: a refused or reset
 * connection and 500, 502, 503 and 504 answers.
 *
 * Nothing palloc'd is made while curl runs and nothing raises while curl
 * holds memory: a response is gathered with malloc and copied out, and the
 * handles are released, before any error is raised.
 */
#include "postgres.h"

#include <curl/curl.h>

#include "common/base64.h"
#include "common/cryptohash.h"
#include "common/md5.h"
#include "common/sha2.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "error.h"
#include "request.h"
#include "s3_client.h"

/* lance_namespace.storage_connect_timeout and storage_timeout, in milliseconds */
static int connect_timeout_ms = 5000;
static int total_timeout_ms = 30000;

#define MAX_ATTEMPTS 3
#define MAX_RESPONSE (256 * 1024 * 1024)
#define DELETE_BATCH 1000
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static CURL *easy = NULL;
static CURLM *multi = NULL;

void
s3_init(void)
{
	DefineCustomIntVariable("lance_namespace.storage_connect_timeout",
							"How long a connection to an object store may take.", NULL,
							&connect_timeout_ms, 5000, 100, 600000, PGC_USERSET, GUC_UNIT_MS, NULL,
							NULL, NULL);
	DefineCustomIntVariable("lance_namespace.storage_timeout",
							"How long one object store call may take, retries included.", NULL,
							&total_timeout_ms, 30000, 100, 3600000, PGC_USERSET, GUC_UNIT_MS, NULL,
							NULL, NULL);
}

/* Storage option names that hold secrets: never listed, never logged. */
bool
s3_option_is_secret(const char *name)
{
	return strstr(name, "secret") != NULL || strstr(name, "token") != NULL ||
		   strstr(name, "password") != NULL || strstr(name, "account_key") != NULL ||
		   strstr(name, "service_account_key") != NULL;
}

/* The first of `names` the options give, or NULL. */
static const char *
option(const LnMap *options, const char *const *names)
{
	for (; *names != NULL; names++)
	{
		const char *value = ln_map_get(options, *names);

		if (value != NULL && value[0] != '\0')
			return value;
	}
	return NULL;
}

static bool
option_true(const char *value)
{
	return value != NULL && (pg_strcasecmp(value, "true") == 0 || strcmp(value, "1") == 0);
}

/*
 * How to reach `bucket` with Lance's storage options: the names Lance and
 * its object_store take (aws_endpoint, aws_region, aws_access_key_id,
 * aws_secret_access_key, aws_session_token, allow_http,
 * aws_virtual_hosted_style_request), with or without "aws_".  Raises LN013
 * for options the catalog cannot work with.
 */
void
s3_store_from_options(const char *bucket, const LnMap *options, S3Store *store)
{
	static const char *const endpoint_names[] = {"aws_endpoint", "endpoint", "aws_endpoint_url",
												 "endpoint_url", NULL};
	static const char *const region_names[] = {"aws_region", "region", "aws_default_region", NULL};
	static const char *const key_names[] = {"aws_access_key_id", "access_key_id", NULL};
	static const char *const secret_names[] = {"aws_secret_access_key", "secret_access_key", NULL};
	static const char *const token_names[] = {"aws_session_token", "session_token", "aws_token",
											  "token", NULL};
	static const char *const http_names[] = {"allow_http", "aws_allow_http", NULL};
	static const char *const virtual_names[] = {"aws_virtual_hosted_style_request",
												"virtual_hosted_style_request", NULL};
	const char *endpoint = option(options, endpoint_names);
	size_t len;

	store->bucket = pstrdup(bucket);
	store->region =
		pstrdup(option(options, region_names) ? option(options, region_names) : "us-east-1");
	store->access_key_id = (char *)option(options, key_names);
	store->secret_access_key = (char *)option(options, secret_names);
	store->session_token = (char *)option(options, token_names);
	if (store->access_key_id == NULL || store->secret_access_key == NULL)
		ln_error_detail(LN_INVALID_INPUT,
						"Give aws_access_key_id and aws_secret_access_key in the options.",
						"the storage options of bucket \"%s\" have no access key: the catalog "
						"signs its own requests to the store",
						bucket);
	if (strspn(store->region, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(store->region))
		ln_error(LN_INVALID_INPUT, "storage option aws_region \"%s\" is not a region name",
				 store->region);
	store->virtual_hosted = option_true(option(options, virtual_names));
	if (endpoint == NULL)
	{
		/* AWS itself: virtual-hosted style is what it asks of new buckets */
		store->endpoint = psprintf("https://s3.%s.amazonaws.com", store->region);
		store->virtual_hosted = true;
	}
	else
	{
		store->endpoint = pstrdup(endpoint);
		len = strlen(store->endpoint);
		while (len > 0 && store->endpoint[len - 1] == '/')
			store->endpoint[--len] = '\0';
		if (pg_strncasecmp(store->endpoint, "https://", 8) != 0 &&
			pg_strncasecmp(store->endpoint, "http://", 7) != 0)
			ln_error(LN_INVALID_INPUT,
					 "storage option aws_endpoint \"%s\" is not an http:// or https:// URL",
					 endpoint);
		if (strchr(store->endpoint + (store->endpoint[4] == 's' ? 8 : 7), '/') != NULL ||
			strpbrk(store->endpoint, "?# \t\r\n") != NULL)
			ln_error(LN_INVALID_INPUT,
					 "storage option aws_endpoint \"%s\" must be only a scheme, host and port",
					 endpoint);
		if (pg_strncasecmp(store->endpoint, "http://", 7) == 0 &&
			!option_true(option(options, http_names)))
			ln_error_detail(LN_INVALID_INPUT, "Set allow_http to \"true\", or use https.",
							"storage option aws_endpoint \"%s\" is plain http", endpoint);
	}
}

/* Append `s` percent-encoded as S3 signs it; '/' kept when `keep_slash`. */
static void
append_encoded(StringInfo buf, const char *s, bool keep_slash)
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

static char *
object_url(const S3Store *store, const char *key, const char *query)
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
		append_encoded(&url, key, true);
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
	n = pg_b64_encode((const char *)digest, MD5_DIGEST_LENGTH, out,
					  pg_b64_enc_len(MD5_DIGEST_LENGTH));
	out[n] = '\0';
	return out;
}

/* A response gathered with malloc while curl runs (no palloc may raise in there). */
typedef struct Gathered
{
	char *data;
	size_t len;
	size_t cap;
	bool too_large;
} Gathered;

static size_t
gather(char *ptr, size_t size, size_t nmemb, void *arg)
{
	Gathered *g = (Gathered *)arg;
	size_t n = size * nmemb;

	if (g->len + n > MAX_RESPONSE)
	{
		g->too_large = true;
		return 0;
	}
	if (g->len + n + 1 > g->cap)
	{
		size_t cap = Max(g->cap * 2, g->len + n + 1);
		char *data = realloc(g->data, Max(cap, 8192));

		if (data == NULL)
			return 0;
		g->data = data;
		g->cap = Max(cap, 8192);
	}
	memcpy(g->data + g->len, ptr, n);
	g->len += n;
	return n;
}

/* Body of a request with one: sent from memory. */
typedef struct Sending
{
	const char *data;
	size_t len;
	size_t off;
} Sending;

static size_t
send_body(char *buffer, size_t size, size_t nitems, void *arg)
{
	Sending *s = (Sending *)arg;
	size_t n = Min(size * nitems, s->len - s->off);

	memcpy(buffer, s->data + s->off, n);
	s->off += n;
	return n;
}

/* Whether an interrupt waits that this backend would act on now. */
static bool
interrupt_waiting(void)
{
	return InterruptPending && INTERRUPTS_CAN_BE_PROCESSED();
}

typedef struct Attempt
{
	CURLcode code;
	long status;
	bool cancelled;
	char curl_error[CURL_ERROR_SIZE];
} Attempt;

/*
 * Set up `handle` for one request; false if memory ran out.  `sigv4` gets
 * a malloc'd string the caller frees once the request is over.
 */
static bool
configure(CURL *handle, const char *method, const char *url, struct curl_slist *headers,
		  const S3Store *store, Sending *sending, long timeout_ms, char **sigv4)
{
	curl_easy_reset(handle);
	curl_easy_setopt(handle, CURLOPT_URL, url);
	curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(handle, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, (long)Min(connect_timeout_ms, timeout_ms));
	curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(handle, CURLOPT_USERNAME, store->access_key_id);
	curl_easy_setopt(handle, CURLOPT_PASSWORD, store->secret_access_key);
	/* "aws:amz:<region>:s3": the provider, the region and service of the credential scope */
	*sigv4 = malloc(strlen(store->region) + 16);
	if (*sigv4 == NULL)
		return false;
	sprintf(*sigv4, "aws:amz:%s:s3", store->region);
	curl_easy_setopt(handle, CURLOPT_AWS_SIGV4, *sigv4);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(handle, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0)
	{
		curl_easy_setopt(handle, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(handle, CURLOPT_READFUNCTION, send_body);
		curl_easy_setopt(handle, CURLOPT_READDATA, sending);
		curl_easy_setopt(handle, CURLOPT_INFILESIZE_LARGE, (curl_off_t)sending->len);
		if (strcmp(method, "POST") == 0)
			curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, "POST");
	}
	else if (strcmp(method, "GET") != 0)
		curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, method);
	return true;
}

/*
 * Requests sent after a commit whose answers nobody waits for (deleting
 * staging objects): they run alongside later requests of this backend, and
 * whatever is left at exit gets a second to finish.  All malloc'd.
 */
typedef struct Background
{
	CURL *handle;
	struct curl_slist *headers;
	char *sigv4;
	Sending sending;
	char *body;
	Gathered got;
	char *what;
	struct Background *next;
} Background;

static Background *background = NULL;
static int nbackground = 0;

#define MAX_BACKGROUND 16

static void
free_background(Background *b)
{
	curl_multi_remove_handle(multi, b->handle);
	curl_easy_cleanup(b->handle);
	curl_slist_free_all(b->headers);
	free(b->sigv4);
	free(b->body);
	free(b->got.data);
	free(b->what);
	free(b);
}

/* A background request is over: log a failure, forget it. */
static void
finish_background(CURL *handle, CURLcode code)
{
	Background **link = &background;

	for (; *link != NULL; link = &(*link)->next)
	{
		Background *b = *link;
		long status = 0;

		if (b->handle != handle)
			continue;
		if (code == CURLE_OK)
			curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
		/* a batch delete answers 200 with per-key errors in its body */
		if (code != CURLE_OK || status != 200 ||
			(b->got.data != NULL && memmem(b->got.data, b->got.len, "<Error>", 7) != NULL))
			elog(LOG, "lance_namespace: %s failed (%s, HTTP status %ld); lance_namespace leaves it",
				 b->what, curl_easy_strerror(code), status);
		*link = b->next;
		nbackground--;
		free_background(b);
		return;
	}
}

/* Collect what finished; `main` (if not NULL) is the request waited for: true once it is done. */
static bool
collect(CURL *main, CURLcode *main_code)
{
	CURLMsg *msg;
	int left;
	bool done = false;

	while ((msg = curl_multi_info_read(multi, &left)) != NULL)
	{
		if (msg->msg != CURLMSG_DONE)
			continue;
		if (msg->easy_handle == main)
		{
			*main_code = msg->data.result;
			done = true;
		}
		else
			finish_background(msg->easy_handle, msg->data.result);
	}
	return done;
}

/* At exit: give background requests a second, then drop them. */
static void
end_background(int code pg_attribute_unused(), Datum arg pg_attribute_unused())
{
	int running = 1;

	for (int i = 0; i < 10 && background != NULL && running > 0; i++)
	{
		curl_multi_perform(multi, &running);
		(void)collect(NULL, NULL);
		curl_multi_poll(multi, NULL, 0, 100, NULL);
	}
	while (background != NULL)
	{
		Background *b = background;

		background = b->next;
		free_background(b);
	}
}

/*
 * One HTTP exchange, polled so that an interrupt stops it, and driving the
 * background requests meanwhile.  Fills `got` (malloc'd) and `attempt`;
 * raises nothing.
 */
static void
exchange(const char *method, const char *url, struct curl_slist *headers, const S3Store *store,
		 const char *body, size_t body_len, long timeout_ms, Gathered *got, Attempt *attempt)
{
	Sending sending = {body, body_len, 0};
	char *sigv4 = NULL;
	int running;

	memset(attempt, 0, sizeof(*attempt));
	attempt->code = CURLE_FAILED_INIT;
	if (!configure(easy, method, url, headers, store, &sending, timeout_ms, &sigv4))
		return;
	curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, attempt->curl_error);
	curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, gather);
	curl_easy_setopt(easy, CURLOPT_WRITEDATA, got);

	if (curl_multi_add_handle(multi, easy) != CURLM_OK)
	{
		free(sigv4);
		return;
	}
	for (;;)
	{
		if (curl_multi_perform(multi, &running) != CURLM_OK)
			break;
		if (collect(easy, &attempt->code))
			break;
		if (curl_multi_poll(multi, NULL, 0, 100, NULL) != CURLM_OK)
			break;
		if (interrupt_waiting())
		{
			attempt->cancelled = true;
			break;
		}
	}
	if (attempt->code == CURLE_OK)
		curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &attempt->status);
	curl_multi_remove_handle(multi, easy);
	free(sigv4);
}

/* The text of element <tag> in an S3 XML answer from `*at` on, entities decoded; NULL if none. */
static char *
xml_element(const char *xml, const char **at, const char *tag)
{
	char *open = psprintf("<%s>", tag);
	char *close = psprintf("</%s>", tag);
	const char *start = strstr(*at, open);
	const char *end;
	StringInfoData out;

	(void)xml;
	if (start == NULL)
		return NULL;
	start += strlen(open);
	end = strstr(start, close);
	if (end == NULL)
		return NULL;
	*at = end + strlen(close);
	initStringInfo(&out);
	for (const char *c = start; c < end; c++)
	{
		static const struct
		{
			const char *entity;
			char c;
		} entities[] = {
			{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
		bool done = false;

		if (*c == '&')
		{
			for (size_t i = 0; i < lengthof(entities); i++)
				if (strncmp(c, entities[i].entity, strlen(entities[i].entity)) == 0)
				{
					appendStringInfoChar(&out, entities[i].c);
					c += strlen(entities[i].entity) - 1;
					done = true;
					break;
				}
			if (!done && c[1] == '#')
			{
				char *semi;
				long code = c[2] == 'x' ? strtol(c + 3, &semi, 16) : strtol(c + 2, &semi, 10);

				if (*semi == ';' && code > 0 && code < 0x110000)
				{
					char utf8[8];
					int n;

					unicode_to_utf8((pg_wchar)code, (unsigned char *)utf8);
					n = pg_utf_mblen((unsigned char *)utf8);
					appendBinaryStringInfo(&out, utf8, n);
					c = semi;
					done = true;
				}
			}
		}
		if (!done)
			appendStringInfoChar(&out, *c);
	}
	return out.data;
}

/* "Code: Message" of an S3 error answer, or the HTTP status. */
static char *
store_reason(const S3Result *r)
{
	const char *at = r->body;
	char *code = r->body ? xml_element(r->body, &at, "Code") : NULL;
	char *message;

	at = r->body;
	message = r->body ? xml_element(r->body, &at, "Message") : NULL;
	if (code == NULL)
		return psprintf("HTTP status %ld", r->status);
	return message ? psprintf("%s: %s", code, message) : code;
}

static bool
retryable(const Attempt *a)
{
	if (a->code == CURLE_OK)
		return a->status == 500 || a->status == 502 || a->status == 503 || a->status == 504;
	return a->code == CURLE_COULDNT_CONNECT || a->code == CURLE_SEND_ERROR ||
		   a->code == CURLE_RECV_ERROR || a->code == CURLE_GOT_NOTHING;
}

/*
 * The headers of a request: the payload hash (signed, as S3 requires), the
 * session token, a content type for a body, and `extra`.  malloc'd by curl:
 * the caller frees them with curl_slist_free_all.
 */
static struct curl_slist *
build_headers(const S3Store *store, const char *method, const char *body, size_t body_len,
			  List *extra)
{
	List *lines = list_make1(psprintf("x-amz-content-sha256: %s", sha256_hex(body, body_len)));
	struct curl_slist *headers = NULL;
	ListCell *lc;

	if (body != NULL && strcmp(method, "PUT") == 0)
		lines = lappend(lines, "Content-Type: application/octet-stream");
	if (store->session_token != NULL)
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

/*
 * Send one request, retrying what may be retried within the total timeout.
 * `headers_in` are extra "Name: value" lines.  Without `quiet`, a store that
 * cannot be reached raises LN017 and an interrupt is raised; with it,
 * nothing raises (commit and abort callbacks) and r->error says what failed.
 * Any status the store answered is the caller's to judge.
 */
static void
s3_request(const S3Store *store, const char *method, const char *key, const char *query,
		   List *headers_in, const char *body, size_t body_len, bool quiet, S3Result *r)
{
	char *url = object_url(store, key, query);
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), total_timeout_ms);
	struct curl_slist *headers;
	Attempt attempt;
	Gathered got = {NULL, 0, 0, false};

	memset(r, 0, sizeof(*r));
	if (easy == NULL && (easy = curl_easy_init()) == NULL)
	{
		if (quiet)
		{
			r->error = pstrdup("could not start libcurl");
			return;
		}
		ereport(ERROR, (errmsg("could not start libcurl")));
	}
	if (multi == NULL && (multi = curl_multi_init()) == NULL)
	{
		if (quiet)
		{
			r->error = pstrdup("could not start libcurl");
			return;
		}
		ereport(ERROR, (errmsg("could not start libcurl")));
	}

	/* a header list is malloc'd: built whole before anything can raise, freed below */
	headers = build_headers(store, method, body, body_len, headers_in);

	for (int i = 0; i < MAX_ATTEMPTS; i++)
	{
		long left = (long)((deadline - GetCurrentTimestamp()) / 1000);

		if (left <= 0)
			break;
		free(got.data);
		memset(&got, 0, sizeof(got));
		exchange(method, url, headers, store, body, body_len, left, &got, &attempt);
		if (attempt.cancelled || !retryable(&attempt) || i == MAX_ATTEMPTS - 1)
			break;
		/*
		 * Retry at once the first time (most often a kept-alive connection
		 * the store had closed), then after 200 ms; an interrupt ends the
		 * wait.
		 */
		for (int slept = 0; slept < (i == 0 ? 0 : 200) && !interrupt_waiting(); slept += 10)
			pg_usleep(10000L);
		if (interrupt_waiting())
		{
			attempt.cancelled = true;
			break;
		}
	}
	curl_slist_free_all(headers);

	/* copy out, free curl's memory: from here on raising is safe */
	if (got.data != NULL)
	{
		r->body = palloc(got.len + 1);
		memcpy(r->body, got.data, got.len);
		r->body[got.len] = '\0';
		r->len = got.len;
		free(got.data);
	}
	else
		r->body = pstrdup("");
	if (attempt.cancelled)
	{
		CHECK_FOR_INTERRUPTS();
		r->error = pstrdup("interrupted");
		return;
	}
	if (got.too_large)
	{
		r->error = psprintf("the answer of the object store to %s is over %d MB", method,
							MAX_RESPONSE / (1024 * 1024));
		if (!quiet)
			ln_error(LN_INVALID_TABLE_STATE, "%s", r->error);
		return;
	}
	if (attempt.code != CURLE_OK)
	{
		r->error = psprintf("%s", attempt.curl_error[0] ? attempt.curl_error
														: curl_easy_strerror(attempt.code));
		if (!quiet)
			ln_error_detail(
				LN_SERVICE_UNAVAILABLE, "Retry once the object store is reachable again.",
				"the object store of bucket \"%s\" did not answer: %s", store->bucket, r->error);
		return;
	}
	r->status = attempt.status;
	if (!quiet && (r->status >= 500 || r->status == 429))
		ln_error_detail(LN_SERVICE_UNAVAILABLE, "Retry once the object store is available again.",
						"the object store of bucket \"%s\" is unavailable: %s", store->bucket,
						store_reason(r));
	if (quiet && r->status >= 300 && !(r->status == 404 && strcmp(method, "DELETE") == 0))
		r->error = psprintf("%s", store_reason(r));
}

/*
 * Raise the Lance error for an answer that is no success: access denied is
 * the store's to grant (LN015, with its reason), a missing bucket is a
 * location that cannot work (LN013), anything else the catalog did not
 * expect (LN018).
 */
static void
pg_attribute_noreturn()
	raise_for(const S3Store *store, const S3Result *r, const char *what, const char *key)
{
	char *reason = store_reason(r);

	if (r->status == 403 || r->status == 401)
		ln_error_detail(LN_PERMISSION_DENIED,
						"Check the access key and the policy of the storage setting.",
						"the object store refused to %s \"%s\" in bucket \"%s\": %s", what, key,
						store->bucket, reason);
	if (r->status == 404 && strstr(reason, "NoSuchBucket") != NULL)
		ln_error(LN_INVALID_INPUT, "bucket \"%s\" does not exist (%s \"%s\")", store->bucket, what,
				 key);
	ln_error(LN_INTERNAL, "the object store could not %s \"%s\" in bucket \"%s\": %s", what, key,
			 store->bucket, reason);
}

/* Whether object `key` exists; *size gets its size. */
bool
s3_head(const S3Store *store, const char *key, int64 *size)
{
	S3Result r;
	curl_off_t length = -1;

	s3_request(store, "HEAD", key, NULL, NIL, NULL, 0, false, &r);
	if (r.status == 404)
		return false;
	if (r.status != 200)
		raise_for(store, &r, "look up", key);
	curl_easy_getinfo(easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
	if (size != NULL)
		*size = (int64)length;
	return true;
}

/* The bytes of object `key`, or NULL if there is none. */
char *
s3_get(const S3Store *store, const char *key, size_t *len)
{
	S3Result r;

	s3_request(store, "GET", key, NULL, NIL, NULL, 0, false, &r);
	if (r.status == 404 && strstr(r.body, "NoSuchBucket") == NULL)
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

	s3_request(store, "PUT", key, NULL, NIL, bytes, len, false, &r);
	if (r.status != 200)
		raise_for(store, &r, "write", key);
}

bool
s3_put_quietly(const S3Store *store, const char *key, const char *bytes, size_t len, char **error,
			   bool *no_answer)
{
	S3Result r;

	s3_request(store, "PUT", key, NULL, NIL, bytes, len, true, &r);
	*error = r.error;
	*no_answer = r.error != NULL && r.status == 0;
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
	append_encoded(&source, from_key, true);
	s3_request(store, "PUT", to_key, NULL, list_make1(source.data), NULL, 0, false, &r);
	/* a copy can fail after its 200: the error is then in the body */
	if (r.status == 200 && strstr(r.body, "<Error>") == NULL)
		return;
	if (r.status == 404 && strstr(r.body, "NoSuchKey") != NULL)
		ln_error(LN_INVALID_INPUT, "staging manifest \"%s\" does not exist in bucket \"%s\"",
				 from_key, store->bucket);
	if (r.status == 200)
		r.status = 500;
	raise_for(store, &r, "copy to", to_key);
}

/*
 * Delete object `key`, raising nothing; false with *error if it failed, and
 * *no_answer if the store did not answer at all.
 */
bool
s3_delete_quietly(const S3Store *store, const char *key, char **error, bool *no_answer)
{
	S3Result r;

	s3_request(store, "DELETE", key, NULL, NIL, NULL, 0, true, &r);
	*error = r.error;
	*no_answer = r.error != NULL && r.status == 0;
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
			append_encoded(&query, token, false);
			appendStringInfoChar(&query, '&');
		}
		appendStringInfoString(&query, "list-type=2&prefix=");
		append_encoded(&query, prefix, false);
		s3_request(store, "GET", NULL, query.data, NIL, NULL, 0, false, &r);
		if (r.status != 200)
			raise_for(store, &r, "list", prefix);
		at = r.body;
		while ((key = xml_element(r.body, &at, "Key")) != NULL)
		{
			if (n == cap)
				*keys = repalloc(*keys, sizeof(char *) * (cap *= 2));
			(*keys)[n++] = key;
		}
		at = r.body;
		truncated = xml_element(r.body, &at, "IsTruncated");
		at = r.body;
		token = truncated && strcmp(truncated, "true") == 0
					? xml_element(r.body, &at, "NextContinuationToken")
					: NULL;
	} while (token != NULL && n <= max_keys);
	return n;
}

/* The body of a DeleteObjects request for `keys`. */
static StringInfo
delete_request(char **keys, int n)
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
			else
				appendStringInfoChar(xml, *c);
		}
		appendStringInfoString(xml, "</Key></Object>");
	}
	appendStringInfoString(xml, "</Delete>");
	return xml;
}

/*
 * Delete `keys` after a commit without waiting for the answer: one
 * DeleteObjects request per thousand keys, run in the background (see
 * Background).  With too many requests already in flight, it waits for
 * this one.  Raises nothing but running out of memory; a failure is logged.
 */
void
s3_delete_keys_later(const S3Store *store, char **keys, int n)
{
	static bool exit_callback = false;

	if (easy == NULL || multi == NULL)
		return; /* no request was made: nothing can be to delete */
	if (!exit_callback)
	{
		on_proc_exit(end_background, (Datum)0);
		exit_callback = true;
	}
	for (int start = 0; start < n; start += DELETE_BATCH)
	{
		int count = Min(n - start, DELETE_BATCH);
		StringInfo xml = delete_request(keys + start, count);
		struct curl_slist *headers =
			build_headers(store, "POST", xml->data, xml->len,
						  list_make2(psprintf("Content-MD5: %s", md5_base64(xml->data, xml->len)),
									 "Content-Type: application/xml"));
		char *url = object_url(store, NULL, "delete=");
		Background *b = calloc(1, sizeof(Background));
		TimestampTz deadline;
		int running;

		if (b == NULL || (b->handle = curl_easy_init()) == NULL ||
			(b->body = malloc(xml->len)) == NULL ||
			(b->what = strdup(psprintf("deleting %d staging objects in bucket \"%s\"", count,
									   store->bucket))) == NULL)
		{
			if (b != NULL && b->handle != NULL)
				curl_easy_cleanup(b->handle);
			if (b != NULL)
			{
				free(b->body);
				free(b);
			}
			curl_slist_free_all(headers);
			continue; /* left for Lance's cleanup of old files */
		}
		memcpy(b->body, xml->data, xml->len);
		b->headers = headers;
		b->sending.data = b->body;
		b->sending.len = xml->len;
		if (!configure(b->handle, "POST", url, headers, store, &b->sending, total_timeout_ms,
					   &b->sigv4))
		{
			free_background(b);
			continue;
		}
		curl_easy_setopt(b->handle, CURLOPT_WRITEFUNCTION, gather);
		curl_easy_setopt(b->handle, CURLOPT_WRITEDATA, &b->got);
		if (curl_multi_add_handle(multi, b->handle) != CURLM_OK)
		{
			free_background(b);
			continue;
		}
		b->next = background;
		background = b;
		nbackground++;
		/*
		 * Send it now, whole: the store acts on it whether or not this
		 * backend ever reads the answer (later requests do).  Bounded by the
		 * connect timeout: a store that takes no request gets none.
		 */
		deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), connect_timeout_ms);
		for (;;)
		{
			curl_multi_perform(multi, &running);
			(void)collect(NULL, NULL);
			/* b is gone once its answer came (collect freed it), and is newest while it is not */
			if (background != b || b->sending.off >= b->sending.len ||
				GetCurrentTimestamp() >= deadline)
				break;
			curl_multi_poll(multi, NULL, 0, 10, NULL);
		}
		/* bounded: with too many in flight, wait for them */
		while (nbackground > MAX_BACKGROUND && running > 0)
		{
			curl_multi_poll(multi, NULL, 0, 100, NULL);
			curl_multi_perform(multi, &running);
			(void)collect(NULL, NULL);
		}
	}
}

/*
 * Delete every object whose key starts with `prefix` (which ends with '/'),
 * a thousand per request.  Returns NULL, or why not everything was deleted.
 */
char *
s3_delete_prefix(const S3Store *store, const char *prefix)
{
	for (;;)
	{
		char **keys;
		int n = s3_list(store, prefix, DELETE_BATCH - 1, &keys);
		StringInfo xml;
		S3Result r;
		const char *at;
		char *error;

		if (n == 0)
			return NULL;
		n = Min(n, DELETE_BATCH);
		xml = delete_request(keys, n);
		s3_request(store, "POST", NULL, "delete=",
				   list_make2(psprintf("Content-MD5: %s", md5_base64(xml->data, xml->len)),
							  "Content-Type: application/xml"),
				   xml->data, xml->len, false, &r);
		if (r.status != 200)
			raise_for(store, &r, "delete objects below", prefix);
		at = r.body;
		if ((error = xml_element(r.body, &at, "Error")) != NULL)
		{
			const char *e = error;
			char *key = xml_element(error, &e, "Key");

			e = error;
			return psprintf("could not delete \"%s\" in bucket \"%s\": %s", key ? key : "?",
							store->bucket, xml_element(error, &e, "Code") ?: "error");
		}
		CHECK_FOR_INTERRUPTS();
	}
}
