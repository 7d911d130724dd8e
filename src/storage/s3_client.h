/*
 * s3_client.h
 *		Requests to an S3-compatible object store: libcurl, signed with AWS
 *		Signature V4, with timeouts, retries of what is safe to retry, and
 *		cancellation.  It knows buckets and keys, nothing of tables.
 *
 * s3_client.c makes the S3Store; the calls on objects are in s3_objects.c,
 * the token service's AssumeRole in s3_sts.c, s3_init and
 * s3_delete_keys_later in s3_transport.c (s3_internal.h tells how those
 * files lie).
 */
#ifndef LN_S3_CLIENT_H
#define LN_S3_CLIENT_H

#include "datatype/timestamp.h"

#include "../common/types.h"

/* How to reach one bucket: made from a storage setting's options. */
typedef struct S3Store
{
	char *bucket;
	char *endpoint; /* scheme://host[:port], no trailing slash */
	char *region;
	char *access_key_id;
	char *secret_access_key;
	char *session_token; /* NULL: none */
	bool virtual_hosted; /* bucket.host/key rather than host/bucket/key */
} S3Store;

/* What a request answered; body is palloc'd. */
typedef struct S3Result
{
	long status; /* HTTP status; 0 when a quiet request got no answer */
	char *body;
	size_t len;
	char *error; /* a quiet request's failure, for a log line */
} S3Result;

/* Temporary credentials of the token service (s3_sts.c); palloc'd. */
typedef struct S3Credentials
{
	char *access_key_id;
	char *secret_access_key;
	char *session_token;
	TimestampTz expires_at;
} S3Credentials;

/* An AssumeRole request, signed with a store's keys in its region. */
typedef struct S3AssumeRole
{
	const char *endpoint; /* the token service: scheme://host[:port] */
	const char *role_arn;
	const char *external_id; /* NULL: none */
	int duration_seconds;
	const char *session_name;
	const char *policy; /* the inline session policy, JSON */
} S3AssumeRole;

extern void s3_init(void);
extern bool s3_option_given(const LnMap *options, const char *what);
extern void s3_check_no_controls(const char *name, const char *value);
extern void s3_assume_role(const S3Store *store, const S3AssumeRole *request, S3Credentials *out);
extern void s3_store_from_options(const char *bucket, const LnMap *options, S3Store *store);
extern bool s3_option_is_secret(const char *name);

extern bool s3_head(const S3Store *store, const char *key, int64 *size);
extern char *s3_get(const S3Store *store, const char *key, size_t max_len, size_t *len);
extern void s3_put(const S3Store *store, const char *key, const char *bytes, size_t len);
extern void s3_copy(const S3Store *store, const char *from_key, const char *to_key);
extern void s3_delete(const S3Store *store, const char *key);
extern bool s3_delete_keys_quietly(const S3Store *store, char **keys, int n, char **error,
								   bool *no_answer);
extern bool s3_delete_quietly(const S3Store *store, const char *key, char **error, bool *no_answer);
extern bool s3_put_quietly(const S3Store *store, const char *key, const char *bytes, size_t len,
						   char **error, bool *no_answer);
extern int s3_list(const S3Store *store, const char *prefix, int max_keys, char ***keys);
extern char *s3_delete_prefix(const S3Store *store, const char *prefix);
extern void s3_delete_keys_later(const S3Store *store, char **keys, int n);

#endif /* LN_S3_CLIENT_H */
