/*
 * s3_transport.c
 *		Sending requests to an S3-compatible object store with libcurl:
 *		timeouts, retries, cancellation, and the requests run in the
 *		background.
 *
 * curl signs each request (CURLOPT_AWS_SIGV4), as s3_sign.c writes it.
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

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "../common/error.h"
#include "../common/shared_stats.h"
#include "s3_client.h"
#include "s3_internal.h"

/* lance_namespace.storage_connect_timeout and storage_timeout, in milliseconds */
static int connect_timeout_ms = 5000;
static int total_timeout_ms = 30000;

#define MAX_ATTEMPTS	 3
#define QUIET_TIMEOUT_MS 5000
/*
 * A call made while interrupts are held (the copy that makes a final
 * manifest: a cancel waits for its outcome) gets this at most, whatever
 * storage_timeout (which anyone may set to an hour) says: a cancel or a
 * terminate must not wait longer.
 */
#define HELD_TIMEOUT_MS 60000
/* a background request runs only while later requests do: its answer may be read late */
#define BACKGROUND_TIMEOUT_MS 600000

CURL *s3_easy = NULL;
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
		  const S3Store *store, const char *service, Sending *sending, long timeout_ms,
		  char **sigv4)
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
	*sigv4 = malloc(strlen(store->region) + strlen(service) + 16);
	if (*sigv4 == NULL)
		return false;
	sprintf(*sigv4, "aws:amz:%s:%s", store->region, service);
	/* without keys the requests go unsigned: a bucket open to anonymous access */
	if (store->access_key_id != NULL)
	{
		curl_easy_setopt(handle, CURLOPT_USERNAME, store->access_key_id);
		curl_easy_setopt(handle, CURLOPT_PASSWORD, store->secret_access_key);
		/* "aws:amz:<region>:<service>": the provider, the region and service of the scope */
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
		 const char *service, const char *body, size_t body_len, long timeout_ms, Gathered *got,
		 Attempt *attempt)
{
	Sending sending = {body, body_len, 0};
	char *sigv4 = NULL;
	int running;

	memset(attempt, 0, sizeof(*attempt));
	attempt->code = CURLE_FAILED_INIT;
	if (!configure(s3_easy, method, url, headers, store, service, &sending, timeout_ms, &sigv4))
		return;
	curl_easy_setopt(s3_easy, CURLOPT_ERRORBUFFER, attempt->curl_error);
	curl_easy_setopt(s3_easy, CURLOPT_WRITEFUNCTION, gather);
	curl_easy_setopt(s3_easy, CURLOPT_WRITEDATA, got);

	if (curl_multi_add_handle(multi, s3_easy) != CURLM_OK)
	{
		free(sigv4);
		return;
	}
	for (;;)
	{
		if (curl_multi_perform(multi, &running) != CURLM_OK)
			break;
		if (collect(s3_easy, &attempt->code))
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
		curl_easy_getinfo(s3_easy, CURLINFO_RESPONSE_CODE, &attempt->status);
	curl_multi_remove_handle(multi, s3_easy);
	free(sigv4);
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
 * Send one request, retrying what may be retried within the total timeout.
 * `headers_in` are extra "Name: value" lines.  Without `quiet`, a store that
 * cannot be reached raises LN017 and an interrupt is raised; with it,
 * nothing raises (commit and abort callbacks) and r->error says what failed.
 * Any status the store answered is the caller's to judge.
 */
void
s3_request(const S3Store *store, const char *method, const char *key, const char *query,
		   List *headers_in, const char *body, size_t body_len, bool quiet, size_t max_len,
		   S3Result *r)
{
	s3_send(store, "s3", s3_object_url(store, key, query),
			psprintf("the object store of bucket \"%s\"", store->bucket), method, headers_in, body,
			body_len, quiet, max_len, r);
}

/*
 * Whether an answer counts as an error of the store for lance_stats(): not
 * the answers that are part of the catalog's work (a 404 of a look-up, a 412
 * of a put-if-absent that lost, 304), but refusals, throttling and failures.
 */
static bool
is_store_error(long status)
{
	return status >= 400 && status != 404 && status != 412 && status != 409;
}

/*
 * Send one request to `url`, signed for `service` with the store's keys (the
 * object store's "s3", the token service's "sts"), as s3_request does; `who`
 * names the service in messages.
 */
void
s3_send(const S3Store *store, const char *service, const char *url, const char *who,
		const char *method, List *headers_in, const char *body, size_t body_len, bool quiet,
		size_t max_len, S3Result *r)
{
	/*
	 * In a commit or abort callback interrupts are held: a call there gets 5
	 * seconds at most, so that an undo never waits long on a store.
	 */
	TimestampTz deadline = TimestampTzPlusMilliseconds(
		GetCurrentTimestamp(), quiet					   ? Min(total_timeout_ms, QUIET_TIMEOUT_MS)
							   : InterruptHoldoffCount > 0 ? Min(total_timeout_ms, HELD_TIMEOUT_MS)
														   : total_timeout_ms);
	struct curl_slist *headers;
	Attempt attempt;
	Gathered got = {NULL, 0, 0, max_len, false};

	memset(r, 0, sizeof(*r));
	if (s3_easy == NULL && (s3_easy = curl_easy_init()) == NULL)
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
	headers = s3_build_headers(store, method, body, body_len, headers_in);
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
		exchange(method, url, headers, store, service, body, body_len, left, &got, &attempt);
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
			headers = s3_build_headers(store, method, body, body_len, headers_in);
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
		if (!attempt.cancelled)
			shared_stats_record_store_error(store->bucket, "NoAnswer");
		if (!quiet)
			ln_error_detail(LN_SERVICE_UNAVAILABLE,
							psprintf("Retry once %s is reachable again.", who),
							"%s did not answer: %s", who, r->error);
		return;
	}
	r->status = attempt.status;
	if (is_store_error(r->status))
		shared_stats_record_store_error(store->bucket, s3_store_code(r)[0]
														   ? s3_store_code(r)
														   : psprintf("HTTP %ld", r->status));
	if (!quiet &&
		(r->status == 429 || (r->status >= 500 && strcmp(s3_store_code(r), "SlowDown") == 0)))
		ln_error_detail(LN_THROTTLING, "Retry more slowly.", "%s asks for fewer requests: %s", who,
						s3_store_reason(r));
	if (!quiet && r->status >= 500)
		ln_error_detail(LN_SERVICE_UNAVAILABLE, psprintf("Retry once %s is available again.", who),
						"%s is unavailable: %s", who, s3_store_reason(r));
	if (quiet && r->status >= 300 && !(r->status == 404 && strcmp(method, "DELETE") == 0))
		r->error = psprintf("%s", s3_store_reason(r));
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

	if (s3_easy == NULL || multi == NULL)
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
		StringInfo xml = s3_delete_request(keys + start, count);
		List *extra = s3_delete_headers(xml);
		char *url = s3_object_url(store, NULL, "delete=");
		char *what = psprintf("deleting %d staging objects in bucket \"%s\"", count, store->bucket);
		struct curl_slist *headers = s3_build_headers(store, "POST", xml->data, xml->len, extra);
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
		if (!configure(b->handle, "POST", url, headers, store, "s3", &b->sending,
					   BACKGROUND_TIMEOUT_MS, &b->sigv4))
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
