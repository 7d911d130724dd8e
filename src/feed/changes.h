/*
 * changes.h
 *		The commit log: one entry per call that changed the catalog.
 */
#ifndef LN_CHANGES_H
#define LN_CHANGES_H

#include "../common/types.h"

extern void changes_init(void);
extern void changes_begin(void);
extern void changes_touch(const LnId *id, int len, bool is_namespace, int64 version,
						  int64 object_id);
extern void changes_queue_drop(const char *location);
extern void changes_set_properties(const LnMap *properties);
extern char *changes_record(const char *operation, const LnMap *context, const LnMap *headers,
							const char *key_id);

extern char *changes_read_json(Oid schema, int64 after, int limit);

/* A backend's hold on a change-log entry, in any database. */
typedef struct ChangeEntryHold
{
	int pid;
	Oid database;
	int64 number;
} ChangeEntryHold;

extern int changes_idle_bound(void);
extern int changes_entry_holds(ChangeEntryHold **holds);

#endif /* LN_CHANGES_H */
