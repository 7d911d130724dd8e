/*
 * json_edge.h
 *		The JSON edge: jsonb requests to C structs, C structs to jsonb
 *		responses.  The only part of the extension that knows JSON.
 *		json_decode.c defines the decoders and json_encode.c the encoders.
 */
#ifndef LN_JSON_EDGE_H
#define LN_JSON_EDGE_H

#include "utils/jsonb.h"

#include "../common/types.h"

extern void json_decode_request(Jsonb *request, uint64 known_fields, LnRequest *req);
extern void json_decode_http_request(const char *body, const LnId *path_id, const LnMap *query,
									 const LnMap *headers, uint64 known_fields, LnRequest *req);
extern LnMap json_decode_headers(Jsonb *headers);
extern int json_request_member_names(uint64 members, const char ***names);
extern Jsonb *json_encode_response(const LnResponse *resp);
extern char *json_encode_response_text(const LnResponse *resp);
extern Jsonb *json_encode_map(const LnMap *map);
extern char *json_ref_file(const LnRefContents *contents, bool branch);
extern bool json_parse_ref_file(const char *text, bool branch, LnRefContents *out);
extern void json_decode_grant(Jsonb *request, bool with_grantee, LnId *id, char **role,
							  char **privilege);
extern Jsonb *json_encode_grant(const LnId *id, const char *role, const char *privilege,
								bool changed, const char *transaction_id);
extern void json_decode_storage_setting(Jsonb *request, bool with_options, char **location,
										LnMap *options, LnMap *vend, bool *take_over);
extern LnMap json_decode_option_text(const char *text);
extern void json_decode_role_limits(Jsonb *request, bool for_set, char **role, double *rate,
									int *burst);
extern char *json_map_text(const LnMap *map);
extern LnMap json_decode_vend_text(const char *text);
extern Jsonb *json_encode_vend(const LnMap *vend);
extern char *json_encode_session_policy(const char *bucket_arn, const char *prefix,
										const char *objects_arn, bool write, char **denied,
										int ndenied);
extern Jsonb *json_encode_storage_settings(int n, char **locations, const LnMap *options,
										   const LnMap *vends, bool one);
extern Jsonb *json_encode_grants(const LnId *id, int n, char **roles, char **privileges);

#endif /* LN_JSON_EDGE_H */
