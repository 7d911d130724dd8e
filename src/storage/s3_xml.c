/*
 * s3_xml.c
 *		Reading the XML answers of the store: the text of an element, the
 *		code and message of an error answer, the first failure of a
 *		DeleteObjects answer.
 *
 * An element is found by its tags, not with an XML parser, and its text is
 * returned palloc'd with its entities decoded.  Both the transport, which
 * judges an error answer by its code, and the calls, which read listings
 * and batch deletes, read answers here; this file sends nothing.
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"

#include "s3_client.h"
#include "s3_internal.h"

/* The text of element <tag> in an S3 XML answer from `*at` on, entities decoded; NULL if none. */
char *
s3_xml_element(const char *xml, const char **at, const char *tag)
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
char *
s3_store_code(const S3Result *r)
{
	const char *at = r->body;
	char *code = r->body ? s3_xml_element(r->body, &at, "Code") : NULL;

	return code ? code : pstrdup("");
}

/* "Code: Message" of an S3 error answer, or the HTTP status. */
char *
s3_store_reason(const S3Result *r)
{
	const char *at = r->body;
	char *code = r->body ? s3_xml_element(r->body, &at, "Code") : NULL;
	char *message;

	at = r->body;
	message = r->body ? s3_xml_element(r->body, &at, "Message") : NULL;
	if (code == NULL)
		return psprintf("HTTP status %ld", r->status);
	return message ? psprintf("%s: %s", code, message) : code;
}

/* Why a DeleteObjects answer of 200 says a key was not deleted (its first <Error>), or NULL. */
char *
s3_delete_failure(const S3Store *store, const S3Result *r)
{
	const char *at = r->body;
	char *error = s3_xml_element(r->body, &at, "Error");
	const char *e;
	char *key;
	char *code;

	if (error == NULL)
		return NULL;
	e = error;
	key = s3_xml_element(error, &e, "Key");
	e = error;
	code = s3_xml_element(error, &e, "Code");
	return psprintf("could not delete \"%s\" in bucket \"%s\": %s", key ? key : "?", store->bucket,
					code ? code : "error");
}
