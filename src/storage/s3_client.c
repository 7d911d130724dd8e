/*
 * s3_client.c
 *		How to reach a bucket: the S3Store made from a storage setting's
 *		options, and which of those options are secrets.
 *
 * The options are checked here, before any request is made with them.
 * The calls to the store that s3_client.h declares are in s3_objects.c,
 * over s3_transport.c, s3_sign.c and s3_xml.c; those files take S3Store
 * from s3_client.h, so this file, which the header is named after, calls
 * none of them.
 */
#include "postgres.h"

#include "catalog/pg_collation.h"
#include "utils/formatting.h"

#include "../common/error.h"
#include "s3_client.h"

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

/*
 * Whether the options name the store's region (`what` "region") or
 * endpoint ("endpoint"), by any name Lance takes for it.
 */
bool
s3_option_given(const LnMap *options, const char *what)
{
	static const char *const endpoint_names[] = {"aws_endpoint", "endpoint", "aws_endpoint_url",
												 "endpoint_url", NULL};
	static const char *const region_names[] = {"aws_region", "region", "aws_default_region", NULL};

	return option(options, strcmp(what, "region") == 0 ? region_names : endpoint_names) != NULL;
}

/* An option that goes into a request (a header, the URL, the signature): no control characters. */
void
s3_check_no_controls(const char *name, const char *value)
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
	s3_check_no_controls("aws_endpoint", endpoint);
	/* not echoed: what stands before the '@' may be a password */
	if (endpoint != NULL && strchr(endpoint, '@') != NULL)
		ln_error_detail(LN_INVALID_INPUT,
						"Give the keys as aws_access_key_id and aws_secret_access_key.",
						"storage option aws_endpoint holds a user name or password");
	s3_check_no_controls("aws_access_key_id", store->access_key_id);
	s3_check_no_controls("aws_secret_access_key", store->secret_access_key);
	s3_check_no_controls("aws_session_token", store->session_token);
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
