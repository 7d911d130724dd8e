/*
 * s3_internal.h
 *		What the files behind s3_client.h share: writing a request
 *		(s3_sign.c), reading an answer (s3_xml.c) and sending it
 *		(s3_transport.c).  Included by those files and s3_objects.c alone.
 *
 * They call one way only: s3_objects.c and s3_sts.c (the token service)
 * call s3_transport.c, and all three call s3_sign.c and s3_xml.c, which call
 * none of them.  This header has no
 * source file of its own, so that including it ties no file to another.
 */
#ifndef LN_S3_INTERNAL_H
#define LN_S3_INTERNAL_H

#include "postgres.h"

#include <curl/curl.h>

#include "lib/stringinfo.h"
#include "nodes/pg_list.h"

#include "s3_client.h"

#define MAX_LISTING	 (16 * 1024 * 1024) /* a page of a thousand keys, or their deletion */
#define DELETE_BATCH 1000

/* s3_sign.c: what a request is made of */
extern void s3_append_encoded(StringInfo buf, const char *s, bool keep_slash);
extern char *s3_object_url(const S3Store *store, const char *key, const char *query);
extern struct curl_slist *s3_build_headers(const S3Store *store, const char *method,
										   const char *body, size_t body_len, List *extra);
extern StringInfo s3_delete_request(char **keys, int n);
extern List *s3_delete_headers(StringInfo xml);

/* s3_xml.c: what an answer says */
extern char *s3_xml_element(const char *xml, const char **at, const char *tag);
extern char *s3_store_code(const S3Result *r);
extern char *s3_store_reason(const S3Result *r);
extern char *s3_delete_failure(const S3Store *store, const S3Result *r);

/* s3_transport.c: sending it */
extern CURL *s3_easy; /* the handle of the request waited for: s3_head reads its answer's length */
extern void s3_request(const S3Store *store, const char *method, const char *key, const char *query,
					   List *headers_in, const char *body, size_t body_len, bool quiet,
					   size_t max_len, S3Result *r);
extern void s3_send(const S3Store *store, const char *service, const char *url, const char *who,
					const char *method, List *headers_in, const char *body, size_t body_len,
					bool quiet, size_t max_len, S3Result *r);

#endif /* LN_S3_INTERNAL_H */
