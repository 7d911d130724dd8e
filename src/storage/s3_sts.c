/*
 * s3_sts.c
 *		The token service's AssumeRole: temporary credentials for a role,
 *		limited by an inline session policy, signed (Signature V4, service
 *		"sts") with a storage setting's own keys.
 *
 * The request is a form POST to the service's root, sent by s3_transport.c
 * as the object store's requests are (timeouts, retries of what is safe to
 * retry, cancellation); the answer is XML, read with s3_xml.c.  An error of
 * the service becomes a Lance error by its code: unreachable or unavailable
 * 17 (the transport raises it), throttled 21, denied 15, a request the
 * service cannot take (a malformed role, a policy too large) 13.  No
 * message holds a secret: the service's own messages name the role and
 * the caller's identity, never a key.
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

#include "../common/error.h"
#include "../common/pg_compat.h"
#include "s3_client.h"
#include "s3_internal.h"

#define MAX_STS_ANSWER (64 * 1024)

/* Append form field `name`=`value`, the value percent-encoded. */
static void
append_field(StringInfo form, const char *name, const char *value)
{
	if (form->len > 0)
		appendStringInfoChar(form, '&');
	appendStringInfo(form, "%s=", name);
	s3_append_encoded(form, value, false);
}

/* An ISO 8601 time of the service ("2026-01-01T00:15:00Z", fractions allowed); false if not one. */
static bool
parse_expiration(const char *text, TimestampTz *out)
{
	struct pg_tm tm;
	int n = 0;

	memset(&tm, 0, sizeof(tm));
	if (sscanf(text, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
			   &tm.tm_min, &tm.tm_sec, &n) != 6 ||
		n == 0)
		return false;
	/* what follows the seconds: a fraction, then Z (the service answers in UTC) */
	text += n;
	if (*text == '.')
		text += 1 + strspn(text + 1, "0123456789");
	if (strcmp(text, "Z") != 0 && strcmp(text, "+00:00") != 0)
		return false;
	return tm2timestamp(&tm, 0, NULL, out) == 0;
}

/*
 * Raise the Lance error for an answer of the token service that is no
 * success (the transport raised already for one it could not get, or a
 * 5xx).
 */
pg_noreturn static void
raise_for(const S3Result *r, const char *who)
{
	char *code = s3_store_code(r);
	char *reason = s3_store_reason(r);

	if (r->status == 429 || strcmp(code, "Throttling") == 0 ||
		strcmp(code, "ThrottlingException") == 0 || strcmp(code, "RequestLimitExceeded") == 0)
		ln_error_detail(LN_THROTTLING, "Retry more slowly.", "%s asks for fewer requests: %s", who,
						reason);
	if (r->status == 401 || r->status == 403 || strcmp(code, "AccessDenied") == 0 ||
		strcmp(code, "InvalidClientTokenId") == 0 || strcmp(code, "SignatureDoesNotMatch") == 0 ||
		strcmp(code, "ExpiredToken") == 0)
		ln_error_detail(LN_PERMISSION_DENIED,
						"Check the keys of the storage setting and the role's trust policy.",
						"%s refused to issue credentials: %s", who, reason);
	if (r->status == 400)
		ln_error_detail(LN_INVALID_INPUT, "Check vend.role_arn and the storage setting.",
						"%s cannot take the request for credentials: %s", who, reason);
	ln_error(LN_INTERNAL, "%s answered HTTP status %ld: %s", who, r->status, reason);
}

/*
 * AssumeRole with `store`'s keys, in its region: temporary credentials for
 * `request->role_arn` that the session policy limits.  Raises a Lance error
 * when the service does not give them.
 */
void
s3_assume_role(const S3Store *store, const S3AssumeRole *request, S3Credentials *out)
{
	S3Store sts = *store;
	StringInfoData form;
	S3Result r;
	const char *at;
	char *who = psprintf("the token service at %s", request->endpoint);
	char *expiration;

	sts.endpoint = (char *)request->endpoint;
	sts.virtual_hosted = false;
	/* the fields in the order AWS's own clients send them; the signature covers the body */
	initStringInfo(&form);
	append_field(&form, "Action", "AssumeRole");
	append_field(&form, "DurationSeconds", psprintf("%d", request->duration_seconds));
	if (request->external_id != NULL)
		append_field(&form, "ExternalId", request->external_id);
	append_field(&form, "Policy", request->policy);
	append_field(&form, "RoleArn", request->role_arn);
	append_field(&form, "RoleSessionName", request->session_name);
	append_field(&form, "Version", "2011-06-15");

	s3_send(&sts, "sts", psprintf("%s/", request->endpoint), who, "POST",
			list_make1("Content-Type: application/x-www-form-urlencoded; charset=utf-8"), form.data,
			form.len, false, MAX_STS_ANSWER, &r);
	if (r.status != 200)
		raise_for(&r, who);

	at = r.body;
	out->access_key_id = s3_xml_element(r.body, &at, "AccessKeyId");
	at = r.body;
	out->secret_access_key = s3_xml_element(r.body, &at, "SecretAccessKey");
	at = r.body;
	out->session_token = s3_xml_element(r.body, &at, "SessionToken");
	at = r.body;
	expiration = s3_xml_element(r.body, &at, "Expiration");
	if (out->access_key_id == NULL || out->secret_access_key == NULL ||
		out->session_token == NULL || expiration == NULL ||
		!parse_expiration(expiration, &out->expires_at))
		ln_error(LN_INTERNAL, "%s answered AssumeRole without credentials and their expiry", who);
	/* they go into requests' headers: a value that would end a header is no credential */
	s3_check_no_controls("AccessKeyId", out->access_key_id);
	s3_check_no_controls("SessionToken", out->session_token);
}
