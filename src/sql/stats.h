/*-------------------------------------------------------------------------
 *
 * stats.h
 *		lance_stats()'s answer for the REST binding (GET /v1/stats).
 *
 *-------------------------------------------------------------------------
 */
#ifndef LN_SQL_STATS_H
#define LN_SQL_STATS_H

/* lance_stats()'s answer as JSON text; an administrator's call (code 15 for others). */
extern char *stats_json_text(void);

#endif
