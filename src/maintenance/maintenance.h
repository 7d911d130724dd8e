/*
 * maintenance.h
 *		Removing dropped tables' data and sweeping crash leftovers.
 */
#ifndef LN_MAINTENANCE_H
#define LN_MAINTENANCE_H

extern int maintenance_process_drops(bool wait);
extern int maintenance_sweep(void);
extern int maintenance_finish_undo(void);
extern int maintenance_reconcile_versions(int64 after, int max_tables, int64 *next_after);

#endif /* LN_MAINTENANCE_H */
