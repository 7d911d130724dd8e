/*
 * shared_stats.h
 *		What lance_stats() reports that no table holds: the background
 *		worker's last round per database and the object stores' recent
 *		errors, in shared memory while the library is preloaded.
 */
#ifndef LN_SHARED_STATS_H
#define LN_SHARED_STATS_H

#include "datatype/timestamp.h"

/* How many databases' rounds, and how many (bucket, code) error counters, are kept. */
#define LN_STATS_MAX_DATABASES	  64
#define LN_STATS_MAX_STORE_ERRORS 128
#define LN_STATS_TEXT			  128

/* One database's last round of the background worker. */
typedef struct LnWorkerRound
{
	Oid database;
	TimestampTz started_at;
	TimestampTz finished_at; /* 0: the round ended in an error */
	int drops;				 /* queued drops worked through */
	int undo_steps;			 /* storage undo steps done */
	int swept;				 /* crash leftovers removed or put back; -1: no sweep */
	int reconciled;			 /* versions removed whose manifest the client cleaned up */
	int64 reconcile_after;	 /* the table id the next round reconciles after */
	TimestampTz error_at;	 /* the last round that failed (0: none since the start) */
	char error[LN_STATS_TEXT * 2];
} LnWorkerRound;

/* Errors of one object store bucket by one code, since the server started. */
typedef struct LnStoreErrors
{
	Oid database;
	char bucket[LN_STATS_TEXT];
	char code[LN_STATS_TEXT / 2];
	int64 count;
	TimestampTz last_at;
} LnStoreErrors;

extern void shared_stats_init(void);
extern bool shared_stats_available(void);
extern void shared_stats_record_round(const LnWorkerRound *round);
extern void shared_stats_record_store_error(const char *bucket, const char *code);
extern int64 shared_stats_reconcile_after(Oid database);
extern int shared_stats_rounds(LnWorkerRound *out, int max);
extern int shared_stats_store_errors(Oid database, LnStoreErrors *out, int max);

#endif /* LN_SHARED_STATS_H */
