/*
 * location.c
 *		Locations, paths and URIs: derive a new table's location, encode and
 *		decode percent escapes, and resolve a location to the canonical
 *		local path it names.  Every other module calls these rather than
 *		spelling out its own encoding.
 */
#include "postgres.h"

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "../common/error.h"
#include "location.h"

/* lance_namespace.root: where tables go when no namespace on their path has a location. */
static char *root_location = NULL;

void
location_init(void)
{
	/* Superuser only: it decides where every writer puts table data. */
	DefineCustomStringVariable("lance_namespace.root",
							   "Root location for tables declared without a location.",
							   "A local path or object store URI; a table's folder goes below "
							   "it, one folder per namespace.",
							   &root_location, "", PGC_SUSET, 0, NULL, NULL, NULL);
}

/* The root location, or NULL when none is set. */
const char *
location_root(void)
{
	return root_location != NULL && root_location[0] != '\0' ? root_location : NULL;
}

static bool
is_safe_path_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
		   c == '_' || c == '.';
}

/*
 * True if `name` can be one path segment of a derived location.  Names may
 * hold any character, and are percent-encoded (append_path_segment), but an
 * S3 location's path and a file URI are read with their escapes decoded
 * (location_folder_key, as Lance reads them): a '/' in a name is a folder
 * boundary there, and a name made only of dots, or a part of one between
 * '/'s that is "." or "..", would then stay in or climb out of its folder
 * ("%2E%2E" is read as ".." by URI parsers too).  Such a name derives no
 * location.
 */
static bool
name_is_path_segment(const char *name)
{
	const char *c = name;

	if (strspn(name, ".") == strlen(name))
		return false;
	for (;;)
	{
		size_t len = strcspn(c, "/");

		if ((len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		if (c[len] == '\0')
			return true;
		c += len + 1;
	}
}

/*
 * Append one object name as one path segment: everything but letters,
 * digits, '-', '_' and '.' percent-encoded, so that no name adds a folder in
 * a plain path.  The caller checked name_is_path_segment.
 */
static void
append_path_segment(StringInfo buf, const char *name)
{
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
	{
		if (is_safe_path_byte(*c))
			appendStringInfoChar(buf, (char)*c);
		else
			appendStringInfo(buf, "%%%02X", *c);
	}
}

/*
 * Append `base` without its trailing slashes, then a folder per name of
 * `below`; false, with the name in *refused, if a name cannot be a folder.
 */
static bool
append_folders(StringInfo buf, const char *base, const LnId *below, const char **refused)
{
	size_t base_len = strlen(base);

	while (base_len > 0 && base[base_len - 1] == '/')
		base_len--;
	appendBinaryStringInfo(buf, base, base_len);
	for (int i = 0; i < below->len; i++)
	{
		if (!name_is_path_segment(below->names[i]))
		{
			*refused = below->names[i];
			return false;
		}
		appendStringInfoChar(buf, '/');
		append_path_segment(buf, below->names[i]);
	}
	return true;
}

/*
 * The location a namespace's tables go below: `base`, then a folder per
 * namespace in `below_base`.  NULL if a name there cannot be a folder
 * (name_is_path_segment): nothing is derived through such a namespace.
 */
char *
location_for_namespace(const char *base, const LnId *below_base)
{
	StringInfoData buf;
	const char *refused;

	initStringInfo(&buf);
	if (!append_folders(&buf, base, below_base, &refused))
		return NULL;
	/* the file system's root keeps its slash */
	if (buf.len == 0 && base[0] == '/')
		appendStringInfoChar(&buf, '/');
	return buf.data;
}

/*
 * The location for a newly declared table: `base`, then a folder per
 * namespace in `below_base`, then a folder for the table.  The table's folder
 * carries a random suffix, so that a table dropped and declared again under
 * the same name never finds the old table's files (LanceDB refuses to create
 * a table where data already exists).  A name that cannot be a folder
 * (name_is_path_segment) is LN013: the table needs a location of its own.
 */
char *
location_for_new_table(const char *base, const LnId *below_base, const char *table_name)
{
	StringInfoData buf;
	uint32 suffix;
	const char *refused = table_name;

	if (!pg_strong_random(&suffix, sizeof(suffix)))
		ln_error(LN_INTERNAL, "could not generate a random table folder suffix");

	initStringInfo(&buf);
	if (!append_folders(&buf, base, below_base, &refused) || !name_is_path_segment(table_name))
		ln_error_detail(LN_INVALID_INPUT, "Give the table a location.",
						"cannot derive a table location through the name \"%s\"", refused);
	appendStringInfoChar(&buf, '/');
	append_path_segment(&buf, table_name);
	appendStringInfo(&buf, "_%08x.lance", suffix);
	return buf.data;
}

/*
 * True if folder key `folder` (location_folder_key) is `parent` or below it,
 * folder by folder: "s3://lake/cat" is below "s3://lake", "s3://lake2" is
 * not; every local path is below "/".
 */
bool
location_folder_within(const char *folder, const char *parent)
{
	size_t len = strlen(parent);

	if (strncmp(folder, parent, len) != 0)
		return false;
	return folder[len] == '\0' || folder[len] == '/' || (len > 0 && parent[len - 1] == '/');
}

/*
 * A complete URI for a location: URIs are kept as they are, and an absolute
 * local path becomes a file:// URI.  A relative location has no URI of its
 * own and is returned unchanged.
 */
char *
location_to_uri(const char *location)
{
	StringInfoData buf;

	if (location[0] != '/')
		return pstrdup(location);

	initStringInfo(&buf);
	appendStringInfoString(&buf, "file://");
	for (const unsigned char *c = (const unsigned char *)location; *c; c++)
	{
		if (is_safe_path_byte(*c) || *c == '/' || *c == '~')
			appendStringInfoChar(&buf, (char)*c);
		else
			appendStringInfo(&buf, "%%%02X", *c);
	}
	return buf.data;
}

/*
 * Decode %XX escapes in the first `len` bytes of `s`, and '+' as a space if
 * plus_is_space (form encoding).  NULL if an escape decodes to a NUL byte,
 * which no C string can hold.  Escapes may decode to any other byte: the
 * caller checks the result's encoding where it becomes a name.
 */
char *
location_percent_decode(const char *s, size_t len, bool plus_is_space)
{
	char *out = palloc(len + 1);
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
	{
		if (s[i] == '%' && i + 2 < len && isxdigit((unsigned char)s[i + 1]) &&
			isxdigit((unsigned char)s[i + 2]))
		{
			char hex[3] = {s[i + 1], s[i + 2], '\0'};

			out[n] = (char)strtol(hex, NULL, 16);
			if (out[n++] == '\0')
				return NULL;
			i += 2;
		}
		else
			out[n++] = plus_is_space && s[i] == '+' ? ' ' : s[i];
	}
	out[n] = '\0';
	return out;
}

/* True if no component of `path` is "." or ".." or empty (a "//"). */
bool
location_path_is_plain(const char *path)
{
	const char *c = path;

	while (*c == '/')
		c++;
	while (*c)
	{
		size_t len = strcspn(c, "/");

		if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += len;
		if (*c == '/')
			c++;
	}
	return true;
}

/*
 * Resolve "." and ".." and collapse "//" in an absolute path, by its
 * spelling alone: "/r/a/../b" is "/r/b", and ".." at the top stays at "/".
 * This matches the file system because no managed location may pass through
 * a symbolic link (storage_check_location), so that two spellings of one
 * folder always compare equal.
 */
static char *
normalize_path(const char *path)
{
	char *out = palloc(strlen(path) + 2);
	size_t len = 0;
	const char *c = path;

	while (*c)
	{
		size_t seg;

		while (*c == '/')
			c++;
		seg = strcspn(c, "/");
		if (seg == 0 || (seg == 1 && c[0] == '.'))
			;
		else if (seg == 2 && c[0] == '.' && c[1] == '.')
		{
			while (len > 0 && out[len - 1] != '/')
				len--;
			if (len > 0)
				len--; /* the slash before the removed name */
		}
		else
		{
			out[len++] = '/';
			memcpy(out + len, c, seg);
			len += seg;
		}
		c += seg;
	}
	if (len == 0)
		out[len++] = '/';
	out[len] = '\0';
	return out;
}

/*
 * The absolute file system path a location names, normalized (see
 * normalize_path), or NULL if it names none: an object store URI, a
 * relative path, or a file URI of another host.  A file URI is read as
 * Lance reads it (the scheme in any case; file:///p, file:/p and
 * file://localhost/p alike) and percent-decoded.
 */
char *
location_local_path(const char *location)
{
	if (pg_strncasecmp(location, "file:", 5) == 0)
	{
		const char *path = location + 5;

		if (strncmp(path, "//", 2) == 0)
		{
			const char *authority = path + 2;
			size_t authority_len = strcspn(authority, "/");

			if (authority_len != 0 &&
				!(authority_len == 9 && pg_strncasecmp(authority, "localhost", 9) == 0))
				return NULL;
			path = authority + authority_len;
		}
		if (path[0] != '/')
			return NULL;
		location = location_percent_decode(path, strlen(path), false);
		/* escapes can spell any byte: a path that is not text names no folder we keep */
		if (location == NULL || !pg_verify_mbstr(PG_UTF8, location, strlen(location), true))
			return NULL;
	}
	if (location[0] != '/')
		return NULL;
	return normalize_path(location);
}

/*
 * What an S3 location's authority (between "s3://" and the first '/', '?'
 * or '#') holds besides a bucket, as a phrase for a message: a user
 * ("user@bucket") or a port ("bucket:443").  NULL if none, or if `location`
 * is no S3 location.  An S3 location names a bucket, not a host: the store's
 * address and credentials come from storage settings, and a user or port
 * here would be silently dropped (or read as part of the bucket's name).
 */
const char *
location_s3_authority_extra(const char *location)
{
	size_t len;

	if (pg_strncasecmp(location, "s3://", 5) != 0)
		return NULL;
	len = strcspn(location + 5, "/?#");
	if (memchr(location + 5, '@', len) != NULL)
		return "a user (\"user@\")";
	if (memchr(location + 5, ':', len) != NULL)
		return "a port (\":port\")";
	return NULL;
}

/*
 * `location` as a message may show it: an S3 location's user part (all of
 * its authority up to the last '@', which may hold a password) shown as
 * "****".  Other locations are shown as they are.
 */
char *
location_for_message(const char *location)
{
	size_t len;
	const char *at = NULL;

	if (pg_strncasecmp(location, "s3://", 5) != 0)
		return pstrdup(location);
	len = strcspn(location + 5, "/?#");
	for (size_t i = 0; i < len; i++)
		if (location[5 + i] == '@')
			at = location + 5 + i;
	if (at == NULL)
		return pstrdup(location);
	return psprintf("%.5s****%s", location, at);
}

/*
 * Split an S3 location "s3://bucket/key" into its bucket and its object key
 * prefix: percent-decoded as Lance decodes the URI's path, "." and ".."
 * resolved and "//" collapsed as on disk, no leading or trailing slash ("" for
 * the bucket itself).  False if it is no S3 location, or one whose bucket or
 * key is not plain text.
 */
bool
location_s3_parse(const char *location, char **bucket, char **key)
{
	const char *rest;
	size_t bucket_len;
	char *path;

	if (pg_strncasecmp(location, "s3://", 5) != 0)
		return false;
	rest = location + 5;
	bucket_len = strcspn(rest, "/?#");
	/*
	 * S3's rules for bucket names: 3 to 63 lower-case letters, digits, '.'
	 * and '-', beginning and ending with a letter or digit, no "..".
	 */
	if (bucket_len < 3 || bucket_len > 63 ||
		strspn(rest, "abcdefghijklmnopqrstuvwxyz0123456789.-") < bucket_len ||
		!isalnum((unsigned char)rest[0]) || !isalnum((unsigned char)rest[bucket_len - 1]))
		return false;
	for (size_t i = 0; i + 1 < bucket_len; i++)
		if (rest[i] == '.' && rest[i + 1] == '.')
			return false;
	if (rest[bucket_len] != '\0' && rest[bucket_len] != '/')
		return false;
	path = location_percent_decode(rest + bucket_len, strlen(rest + bucket_len), false);
	if (path == NULL || !pg_verify_mbstr(PG_UTF8, path, strlen(path), true))
		return false;
	path = normalize_path(psprintf("/%s", path));
	*bucket = pnstrdup(rest, bucket_len);
	*key = pstrdup(path + 1);
	return true;
}

/*
 * The folder a location names, in one spelling for comparing locations
 * however written: the canonical local path (location_local_path), or
 * "s3://bucket/key" for an S3 location; NULL for any other.
 */
char *
location_folder_key(const char *location)
{
	char *bucket;
	char *key;

	if (location_s3_parse(location, &bucket, &key))
		return psprintf("s3://%s%s%s", bucket, key[0] ? "/" : "", key);
	return location_local_path(location);
}

/*
 * Whether `location`, which location_folder_key cannot place, is a URI of a
 * store the catalog never manages (gs://, az://, memory://, ...): a scheme,
 * "://", and no white space or control character at either end.  Not a
 * spelling a client reads as S3 or as a local path where the catalog does
 * not (s3a://, s3n://, http(s):// of an S3 endpoint, file:// with a host, a
 * relative path), which could name a managed prefix the catalog cannot
 * see.
 */
bool
location_is_other_store(const char *location)
{
	static const char *const near_managed[] = {"s3", "s3a", "s3n", "http", "https", "file", NULL};
	size_t len = strlen(location);
	size_t scheme_len =
		strspn(location, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");

	if (len == 0 || (unsigned char)location[0] <= ' ' || (unsigned char)location[len - 1] <= ' ' ||
		scheme_len == 0 || !isalpha((unsigned char)location[0]) ||
		strncmp(location + scheme_len, "://", 3) != 0)
		return false;
	for (int i = 0; near_managed[i] != NULL; i++)
		if (strlen(near_managed[i]) == scheme_len &&
			pg_strncasecmp(location, near_managed[i], scheme_len) == 0)
			return false;
	return true;
}

/*
 * lance_catalog.local_path(location): for comparing table folders however
 * spelled (location_folder_key; the name is older than S3 support).
 */
PG_FUNCTION_INFO_V1(lance_local_path);
Datum
lance_local_path(PG_FUNCTION_ARGS)
{
	char *path = location_folder_key(text_to_cstring(PG_GETARG_TEXT_PP(0)));

	if (path == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(path));
}
