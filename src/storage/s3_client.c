/*
 * s3_client.c
 *		Requests to an S3-compatible object store.
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
 * handles are released, before any error is raised.  The deletion of
 * staging objects after a commit runs in the background (Background): sent
 * whole at once, its answer read by later requests.
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
#include "catalog/pg_collation.h"
#include "utils/builtins.h"
#include "utils/formatting.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "../common/error.h"
#include "s3_client.h"

/* lance_namespace.storage_connect_timeout and storage_timeout, in milliseconds */
static int connect_timeout_ms = 5000;
static int total_timeout_ms = 30000;

#define MAX_ATTEMPTS	 3
#define MAX_RESPONSE	 (256 * 1024 * 1024)
#define MAX_SMALL		 (1024 * 1024)		/* an answer with no object in it */
#define MAX_LISTING		 (16 * 1024 * 1024) /* a page of a thousand keys, or their deletion */
#define QUIET_TIMEOUT_MS 5000
/* a background request runs only while later requests do: its answer may be read late */
#define BACKGROUND_TIMEOUT_MS 600000
#define DELETE_BATCH		  1000
#define EMPTY_SHA256		  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

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

/*
 * Storage option names that hold secrets: never listed, never logged.  In
 * any case (Lance takes AWS_SECRET_ACCESS_KEY as well), and broadly: a key
 * of any store (but a key's id), a token, a password, a credential, a SAS.
 */
bool
s3_option_is_secret(const char *name)
{
	char *lower = str_tolower(name, strlen(name), DEFAULT_COLLATION_OID);
	size_t len = strlen(lower);
	bool secret;

	secret = strstr(lower, "secret") != NULL || strstr(lower, "token") != NULL ||
			 strstr(lower, "password") != NULL || strstr(lower, "credential") != NULL ||
			 strstr(lower, "private") != NULL || strstr(lower, "sas") != NULL ||
			 (len >= 3 && strcmp(lower + len - 3, "key") == 0);
	pfree(lower);
	return secret;
}

/* The first of `names` the options give, in any case (as Lance takes them), or NULL. */
static const char *
option(const LnMap *options, const char *const *names)
{
	for (; *names != NULL; names++)
		for (int i = 0; i < options->len; i++)
			if (pg_strcasecmp(options->keys[i], *names) == 0 && options->values[i][0] != '\0')
				return options->values[i];
	return NULL;
}

static bool
option_true(const char *value)
{
	return value != NULL && (pg_strcasecmp(value, "true") == 0 || strcmp(value, "1") == 0);
}

/* An option that goes into a request (a header, the URL, the signature): no control characters. */
static void
check_no_controls(const char *name, const char *value)
{
	if (value == NULL)
		return;
	for (const unsigned char *c = (const unsigned char *)value; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			ln_error(LN_INVALID_INPUT, "storage option %s holds a control character", name);
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
	check_no_controls("aws_endpoint", endpoint);
	/* not echoed: what stands before the '@' may be a password */
	if (endpoint != NULL && strchr(endpoint, '@') != NULL)
		ln_error_detail(LN_INVALID_INPUT,
						"Give the keys as aws_access_key_id and aws_secret_access_key.",
						"storage option aws_endpoint holds a user name or password");
	check_no_controls("aws_access_key_id", store->access_key_id);
	check_no_controls("aws_secret_access_key", store->secret_access_key);
	check_no_controls("aws_session_token", store->session_token);
	/* a key id without its secret, or the other way round, is a mistake; neither is anonymous */
	if ((store->access_key_id == NULL) != (store->secret_access_key == NULL))
		ln_error_detail(LN_INVALID_INPUT,
						"Give both aws_access_key_id and aws_secret_access_key, or neither.",
						"the storage options of bucket \"%s\" have %s without %s", bucket,
						store->access_key_id ? "an access key id" : "a secret access key",
						store->access_key_id ? "its secret" : "its id");
	if (strspn(store->region, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(store->region))
		ln_error(LN_INVALID_INPUT, "storage option aws_region \"%s\" is not a region name",
				 store->region);
	store->virtual_hosted = option_true(option(options, virtual_names));
	if (endpoint == NULL)
	{
		/*
		 * AWS itself: virtual-hosted style is what it asks of new buckets,
		 * but for a bucket with a '.' in its name, which no certificate of
		 * AWS's covers as a host name.
		 */
		store->endpoint = psprintf("https://s3.%s.amazonaws.com", store->region);
		store->virtual_hosted = strchr(bucket, '.') == NULL;
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
			strpbrk(store->endpoint, "?# ") != NULL)
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
	size_t limit; /* the most this answer may hold */
	bool too_large;
} Gathered;

static size_t
gather(char *ptr, size_t size, size_t nmemb, void *arg)
{
	Gathered *g = (Gathered *)arg;
	size_t n = size * nmemb;

	if (g->len + n > g->limit)
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

/* curl rewinds a body to send it again (a kept-alive connection that was closed). */
static int
seek_body(void *arg, curl_off_t offset, int origin)
{
	Sending *s = (Sending *)arg;

	if (origin != SEEK_SET || offset < 0 || (size_t)offset > s->len)
		return CURL_SEEKFUNC_CANTSEEK;
	s->off = (size_t)offset;
	return CURL_SEEKFUNC_OK;
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
	/* a key is sent as it is: "a/./b" is no other object's name */
	curl_easy_setopt(handle, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, (long)Min(connect_timeout_ms, timeout_ms));
	curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers);
	/* *sigv4 is malloc'd even unsigned: the caller frees it either way */
	*sigv4 = malloc(strlen(store->region) + 16);
	if (*sigv4 == NULL)
		return false;
	sprintf(*sigv4, "aws:amz:%s:s3", store->region);
	/* without keys the requests go unsigned: a bucket open to anonymous access */
	if (store->access_key_id != NULL)
	{
		curl_easy_setopt(handle, CURLOPT_USERNAME, store->access_key_id);
		curl_easy_setopt(handle, CURLOPT_PASSWORD, store->secret_access_key);
		/* "aws:amz:<region>:s3": the provider, the region and service of the credential scope */
		curl_easy_setopt(handle, CURLOPT_AWS_SIGV4, *sigv4);
	}
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(handle, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0)
	{
		curl_easy_setopt(handle, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(handle, CURLOPT_READFUNCTION, send_body);
		curl_easy_setopt(handle, CURLOPT_READDATA, sending);
		curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, seek_body);
		curl_easy_setopt(handle, CURLOPT_SEEKDATA, sending);
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

/*
 * A background failure, logged later (log_background_failure) at a point
 * where no curl state is held: logging may raise.
 */
static char background_failure[512];

static void
log_background_failure(void)
{
	if (background_failure[0] == '\0')
		return;
	elog(LOG, "lance_namespace: %s; lance_namespace leaves it", background_failure);
	background_failure[0] = '\0';
}

/* A background request is over: note a failure, forget it. */
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
		/*
		 * Its answer is read only when later requests run: a request sent
		 * whole whose answer came too late to be read is no failure.  A
		 * batch delete answers 200 with per-key errors in its body.
		 */
		if ((code != CURLE_OK &&
			 !(code == CURLE_OPERATION_TIMEDOUT && b->sending.off >= b->sending.len)) ||
			(code == CURLE_OK &&
			 (status != 200 ||
			  (b->got.data != NULL && memmem(b->got.data, b->got.len, "<Error>", 7) != NULL))))
			snprintf(background_failure, sizeof(background_failure),
					 "%s failed (%s, HTTP status %ld)", b->what, curl_easy_strerror(code), status);
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
	log_background_failure();
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

/* The <Code> of an S3 error answer, or "" (a HEAD answer has no body). */
static char *
store_code(const S3Result *r)
{
	const char *at = r->body;
	char *code = r->body ? xml_element(r->body, &at, "Code") : NULL;

	return code ? code : pstrdup("");
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
		   a->code == CURLE_RECV_ERROR || a->code == CURLE_GOT_NOTHING ||
		   a->code == CURLE_SEND_FAIL_REWIND;
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

/*
 * Send one request, retrying what may be retried within the total timeout.
 * `headers_in` are extra "Name: value" lines.  Without `quiet`, a store that
 * cannot be reached raises LN017 and an interrupt is raised; with it,
 * nothing raises (commit and abort callbacks) and r->error says what failed.
 * Any status the store answered is the caller's to judge.
 */
static void
s3_request(const S3Store *store, const char *method, const char *key, const char *query,
		   List *headers_in, const char *body, size_t body_len, bool quiet, size_t max_len,
		   S3Result *r)
{
	char *url = object_url(store, key, query);
	/*
	 * In a commit or abort callback interrupts are held: a call there gets 5
	 * seconds at most, so that an undo never waits long on a store.
	 */
	TimestampTz deadline = TimestampTzPlusMilliseconds(
		GetCurrentTimestamp(), quiet ? Min(total_timeout_ms, QUIET_TIMEOUT_MS) : total_timeout_ms);
	struct curl_slist *headers;
	Attempt attempt;
	Gathered got = {NULL, 0, 0, max_len, false};

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
	memset(&attempt, 0, sizeof(attempt));
	attempt.code = CURLE_OPERATION_TIMEDOUT; /* should the time be up before the first */

	for (int i = 0; i < MAX_ATTEMPTS;)
	{
		long left = (long)((deadline - GetCurrentTimestamp()) / 1000);

		if (left <= 0)
			break;
		free(got.data);
		memset(&got, 0, sizeof(got));
		got.limit = max_len;
		exchange(method, url, headers, store, body, body_len, left, &got, &attempt);
		if (attempt.cancelled)
		{
			/*
			 * Serve the interrupt with nothing of curl's held: a cancel
			 * raises; one that raises nothing (a check of the client's
			 * connection, a barrier) has the attempt made again.
			 */
			free(got.data);
			memset(&got, 0, sizeof(got));
			curl_slist_free_all(headers);
			headers = NULL;
			CHECK_FOR_INTERRUPTS();
			headers = build_headers(store, method, body, body_len, headers_in);
			attempt.cancelled = false;
			continue;
		}
		if (!retryable(&attempt) || ++i == MAX_ATTEMPTS)
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
	log_background_failure();

	/* copy out, free curl's memory: from here on raising is safe */
	if (got.data != NULL)
	{
		r->body = palloc_extended(got.len + 1, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
		if (r->body != NULL)
		{
			memcpy(r->body, got.data, got.len);
			r->body[got.len] = '\0';
			r->len = got.len;
		}
		free(got.data);
		if (r->body == NULL)
			ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	}
	else
		r->body = pstrdup("");
	if (got.too_large)
	{
		r->error =
			psprintf("the answer of the object store to %s is over %zu bytes", method, max_len);
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
	if (!quiet &&
		(r->status == 429 || (r->status >= 500 && strcmp(store_code(r), "SlowDown") == 0)))
		ln_error_detail(LN_THROTTLING, "Retry more slowly.",
						"the object store of bucket \"%s\" asks for fewer requests: %s",
						store->bucket, store_reason(r));
	if (!quiet && r->status >= 500)
		ln_error_detail(LN_SERVICE_UNAVAILABLE, "Retry once the object store is available again.",
						"the object store of bucket \"%s\" is unavailable: %s", store->bucket,
						store_reason(r));
	if (quiet && r->status >= 300 && !(r->status == 404 && strcmp(method, "DELETE") == 0))
		r->error = psprintf("%s", store_reason(r));
}

/*
 * Raise the Lance error for an answer that is no success, by the store's
 * error code: access denied is the store's to grant (LN015, with its
 * reason); a missing bucket, a key the store cannot take, or a bucket
 * reached in the wrong region or at the wrong endpoint are locations or
 * settings that cannot work (LN013); a conflicting operation on the bucket
 * is LN014; anything else the catalog did not expect (LN018, logged).
 */
static void
pg_attribute_noreturn()
	raise_for(const S3Store *store, const S3Result *r, const char *what, const char *key)
{
	char *reason = store_reason(r);
	char *code = store_code(r);

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
	curl_easy_getinfo(easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
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
	if (r.status == 404 && strcmp(store_code(&r), "NoSuchBucket") != 0)
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
	append_encoded(&source, from_key, true);
	s3_request(store, "PUT", to_key, NULL, list_make1(source.data), NULL, 0, false, MAX_SMALL, &r);
	/* a copy can fail after its 200: the error is then in the body */
	if (r.status == 200 && strstr(r.body, "<Error>") == NULL)
		return;
	if (r.status == 404 && strcmp(store_code(&r), "NoSuchKey") == 0)
		ln_error(LN_INVALID_INPUT, "staging manifest \"%s\" does not exist in bucket \"%s\"",
				 from_key, store->bucket);
	/* an error after the 200 is one of the store's (InternalError, SlowDown): retry later */
	if (r.status == 200)
		ln_error_detail(LN_SERVICE_UNAVAILABLE, "Retry once the object store is available again.",
						"the object store of bucket \"%s\" failed to copy to \"%s\": %s",
						store->bucket, to_key, store_reason(&r));
	raise_for(store, &r, "copy to", to_key);
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
static List *
delete_headers(StringInfo xml)
{
	return list_make2(psprintf("Content-MD5: %s", md5_base64(xml->data, xml->len)),
					  "Content-Type: application/xml");
}

/* Send one DeleteObjects request for `keys` (a thousand at most). */
static void
post_delete(const S3Store *store, char **keys, int n, bool quiet, S3Result *r)
{
	StringInfo xml = delete_request(keys, n);

	Assert(n <= DELETE_BATCH);
	s3_request(store, "POST", NULL, "delete=", delete_headers(xml), xml->data, xml->len, quiet,
			   MAX_LISTING, r);
}

/* Why a DeleteObjects answer of 200 says a key was not deleted (its first <Error>), or NULL. */
static char *
delete_failure(const S3Store *store, const S3Result *r)
{
	const char *at = r->body;
	char *error = xml_element(r->body, &at, "Error");
	const char *e;
	char *key;
	char *code;

	if (error == NULL)
		return NULL;
	e = error;
	key = xml_element(error, &e, "Key");
	e = error;
	code = xml_element(error, &e, "Code");
	return psprintf("could not delete \"%s\" in bucket \"%s\": %s", key ? key : "?", store->bucket,
					code ? code : "error");
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
		*error = delete_failure(store, &r);
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
			append_encoded(&query, token, false);
			appendStringInfoChar(&query, '&');
		}
		appendStringInfoString(&query, "list-type=2&prefix=");
		append_encoded(&query, prefix, false);
		s3_request(store, "GET", NULL, query.data, NIL, NULL, 0, false, MAX_LISTING, &r);
		if (r.status != 200)
			raise_for(store, &r, "list", prefix);
		at = r.body;
		while ((key = xml_element(r.body, &at, "Key")) != NULL)
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
		truncated = xml_element(r.body, &at, "IsTruncated");
		at = r.body;
		previous = token;
		token = truncated && strcmp(truncated, "true") == 0
					? xml_element(r.body, &at, "NextContinuationToken")
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
		/* everything palloc'd first: nothing may raise once malloc'd memory is held */
		StringInfo xml = delete_request(keys + start, count);
		List *extra = delete_headers(xml);
		char *url = object_url(store, NULL, "delete=");
		char *what = psprintf("deleting %d staging objects in bucket \"%s\"", count, store->bucket);
		struct curl_slist *headers = build_headers(store, "POST", xml->data, xml->len, extra);
		Background *b = calloc(1, sizeof(Background));
		TimestampTz deadline;
		int running;

		if (b == NULL || (b->handle = curl_easy_init()) == NULL ||
			(b->body = malloc(xml->len)) == NULL || (b->what = strdup(what)) == NULL)
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
		if (!configure(b->handle, "POST", url, headers, store, &b->sending, BACKGROUND_TIMEOUT_MS,
					   &b->sigv4))
		{
			free_background(b);
			continue;
		}
		b->got.limit = MAX_LISTING;
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
		deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
											   Min(connect_timeout_ms, QUIET_TIMEOUT_MS));
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
		/* bounded: with too many in flight, wait for them, for a while */
		deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), QUIET_TIMEOUT_MS);
		while (nbackground > MAX_BACKGROUND && running > 0 && GetCurrentTimestamp() < deadline)
		{
			curl_multi_poll(multi, NULL, 0, 100, NULL);
			curl_multi_perform(multi, &running);
			(void)collect(NULL, NULL);
		}
		log_background_failure();
	}
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
		if ((reason = delete_failure(store, &r)) != NULL)
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
