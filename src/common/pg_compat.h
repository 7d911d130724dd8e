/*
 * pg_compat.h
 *		What differs between the PostgreSQL major versions the extension
 *		builds against, 15 to 18, in one place.
 *
 * The source uses the newest release's names; for an older release this
 * header maps them to what that release calls them.  Where one way of
 * doing a thing works on every version at no cost, the source takes it
 * and nothing here is needed.
 */
#ifndef LN_PG_COMPAT_H
#define LN_PG_COMPAT_H

#include "postgres.h"

#if PG_VERSION_NUM < 150000
#error "lance_namespace needs PostgreSQL 15 or later"
#endif

/*
 * 18 marks a function that never returns with pg_noreturn before its
 * declaration, and dropped pg_attribute_noreturn(), the attribute older
 * releases have, which GCC and Clang take in the same place.
 */
#ifndef pg_noreturn
#define pg_noreturn pg_attribute_noreturn()
#endif

/*
 * 17 moved a backend's local transaction id into its virtual transaction
 * id (MyProc->vxid.lxid).  Uses storage/proc.h.
 */
#if PG_VERSION_NUM >= 170000
#define LN_MY_LXID() (MyProc->vxid.lxid)
#else
#define LN_MY_LXID() (MyProc->lxid)
#endif

/*
 * 17 also named a backend's slot a ProcNumber rather than a BackendId: the
 * process of a virtual transaction id, and its local transaction id.
 */
#if PG_VERSION_NUM >= 170000
#define LN_VXID_PROC(vxid) ProcNumberGetProc((vxid).procNumber)
#define LN_PROC_LXID(proc) ((proc)->vxid.lxid)
#else
#define LN_VXID_PROC(vxid) BackendIdGetProc((vxid).backendId)
#define LN_PROC_LXID(proc) ((proc)->lxid)
#endif

/* 16 renamed the look-up of a backend's status by its 1-based index. */
#if PG_VERSION_NUM >= 160000
#define LN_LOCAL_BEENTRY(index) pgstat_get_local_beentry_by_index(index)
#else
#define LN_LOCAL_BEENTRY(index) pgstat_fetch_stat_local_beentry(index)
#endif

/* 17 renamed the shared transaction counters (access/transam.h). */
#if PG_VERSION_NUM < 170000
#define TransamVariables ShmemVariableCache
#endif

/*
 * 17's makeJsonLexContextCstringLen fills a lexer it is given or, given
 * NULL, allocates one as older releases do (common/jsonapi.h).
 */
#if PG_VERSION_NUM >= 170000
#define ln_make_json_lex_context(json, len, encoding, need_escapes)                                \
	makeJsonLexContextCstringLen(NULL, (json), (len), (encoding), (need_escapes))
#else
#define ln_make_json_lex_context(json, len, encoding, need_escapes)                                \
	makeJsonLexContextCstringLen((char *)(json), (len), (encoding), (need_escapes))
#endif

/*
 * 18's pg_b64_encode takes bytes (const uint8 *), older releases' take
 * chars (common/base64.h).
 */
#if PG_VERSION_NUM >= 180000
#define ln_b64_encode(src, len, dst, dstlen)                                                       \
	pg_b64_encode((const uint8 *)(src), (len), (dst), (dstlen))
#else
#define ln_b64_encode(src, len, dst, dstlen)                                                       \
	pg_b64_encode((const char *)(src), (len), (dst), (dstlen))
#endif

/*
 * Since 16 the JSON parser's semantic actions answer whether to go on
 * (JSON_SUCCESS); before, they answer nothing and stop it by raising an
 * error.  Ours raise theirs either way: an action is declared
 * LN_JSON_ACTION_RESULT and ends with return LN_JSON_ACTION_DONE.
 */
#if PG_VERSION_NUM >= 160000
#define LN_JSON_ACTION_RESULT JsonParseErrorType
#define LN_JSON_ACTION_DONE	  JSON_SUCCESS
#else
#define LN_JSON_ACTION_RESULT void
#define LN_JSON_ACTION_DONE
#endif

/*
 * The catalog's statements search pg_catalog alone, from
 * LN_PUSH_CATALOG_SEARCH_PATH(level) to LN_POP_CATALOG_SEARCH_PATH(level)
 * (an int the push sets); an error's (sub)transaction abort ends it too.
 * Before 17 an override of the search path does it: nothing is looked up
 * anew, neither the catalog's path nor the caller's after it.  17 has no
 * overrides left: there search_path is set as a function's SET clause sets
 * it, at a setting level of its own (pg_temp comes after pg_catalog, for
 * relations only, which every statement names with their schema).  On 15
 * the setting would cost about a tenth of a quick call such as
 * lance_describe_namespace.  Uses catalog/namespace.h and utils/guc.h.
 */
#if PG_VERSION_NUM >= 170000
#define LN_PUSH_CATALOG_SEARCH_PATH(level)                                                         \
	do                                                                                             \
	{                                                                                              \
		(level) = NewGUCNestLevel();                                                               \
		(void)set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,  \
								GUC_ACTION_SAVE, true, 0, false);                                  \
	} while (0)
#define LN_POP_CATALOG_SEARCH_PATH(level) AtEOXact_GUC(true, (level))
#else
#define LN_PUSH_CATALOG_SEARCH_PATH(level)                                                         \
	do                                                                                             \
	{                                                                                              \
		OverrideSearchPath catalog_path = {                                                        \
			.schemas = NIL, .addCatalog = true, .addTemp = false, .generation = 0};                \
                                                                                                   \
		(level) = 0;                                                                               \
		PushOverrideSearchPath(&catalog_path);                                                     \
	} while (0)
#define LN_POP_CATALOG_SEARCH_PATH(level) ((void)(level), PopOverrideSearchPath())
#endif

#endif /* LN_PG_COMPAT_H */
