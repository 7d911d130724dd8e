/*
 * storage.h
 *		Manifests, tags and branches of the tables whose versions the
 *		catalog manages, on local storage or in an S3 bucket: path safety,
 *		materializing a staged manifest at its final name, and undoing that
 *		when the transaction rolls back.  Paths below are the file system's
 *		for a local table and keys in the bucket for an S3 one.
 */
#ifndef LN_STORAGE_H
#define LN_STORAGE_H

#include "../common/types.h"

/* A staged manifest checked and ready to be materialized. */
typedef struct ManifestCopy
{
	char *staging_file; /* file system path of the staging manifest */
	char *final_file;	/* file system path of the final manifest */
	char *final_path;	/* the final path in the form the client sent */
	char *location;		/* the table's location */
	char *branch;		/* the version's branch, "" for main */
	int64 version;
	int64 size;
	bool already_final; /* the client sent the final name itself */
} ManifestCopy;

/*
 * A step of a rollback's undo that could not be done when the transaction
 * ended, kept until it is (storage_spool.c): remove what the transaction
 * made, or put back what it replaced or removed.
 */
#define UNDO_REMOVE	  'r'
#define UNDO_PUT_BACK 'p'

typedef struct StorageUndoStep
{
	char action;	 /* UNDO_REMOVE or UNDO_PUT_BACK */
	bool s3;		 /* an object in a store; else a file under a local root */
	char *location;	 /* S3: the table's location; local: the local root */
	char *path;		 /* the object's key or the file's path */
	char *set_aside; /* local put-back: where the original waits */
	char *branch;	 /* a final manifest: its branch ("" main) and version; */
	int64 version;	 /* else NULL and -1 */
	uint64 dev;		 /* local removal: the file made, removed only if it is still there */
	uint64 ino;
	char *content; /* S3 put-back: the content to put back */
	size_t content_len;
	bool check_left; /* S3: done only while the object holds what the transaction left: */
	char *left;		 /* these bytes, or (NULL) no object */
	size_t left_len;
	uint64 xid; /* the transaction that rolled back (full id), 0 if none */
} StorageUndoStep;

/* A spooled step taken over by a maintenance round. */
typedef struct StorageSpooled
{
	char *name;	  /* "<spool file>#<n>": the same record is never taken twice */
	char *record; /* its bytes, as the catalog keeps them */
	size_t len;
	StorageUndoStep step;
} StorageSpooled;

/*
 * How storage finds the storage setting that covers a folder key
 * (location_folder_key; the longest matching prefix): its prefix, options
 * and vend members (json_decode_storage_setting's flat map).  Set at start
 * by the module that reads the catalog, so that storage need not know it.
 */
typedef bool (*StorageSettingsFinder)(const char *folder, char **prefix, LnMap *options,
									  LnMap *vend);

/*
 * How storage asks, before it writes or removes anything on storage,
 * whether this catalog may (the catalog of record; a restored copy may
 * not): it raises if not.  Set at start by the module that reads the
 * catalog, as the settings finder is.
 */
typedef void (*StorageWriteGuard)(void);

extern void storage_init(void);
extern void storage_set_settings_finder(StorageSettingsFinder finder);
extern void storage_set_write_guard(StorageWriteGuard guard);
extern void storage_forget_settings(void);
extern bool storage_vend_options(const char *location, LnPrivilege privilege, LnMap *options);
extern bool storage_option_is_secret(const char *name);
extern void storage_check_setting(const char *location, const LnMap *options, const LnMap *vend);
extern bool storage_is_managed(const char *location);
extern char *storage_managing_prefix(const char *location);
extern char *storage_local_root_below(const char *location);
extern int storage_local_root_list(char ***roots);
extern bool storage_is_local(const char *location);
extern void storage_check_location(const char *location);
extern void storage_check_location_spelling(const char *location);
extern bool storage_has_local_roots(void);
extern int storage_spool_read(StorageSpooled **records);
extern bool storage_undo_decode(const char *record, size_t len, StorageUndoStep *step);
extern bool storage_undo_try_lock(const StorageUndoStep *step);
extern void storage_undo_unlock(const StorageUndoStep *step);
extern char *storage_undo_endpoint(const StorageUndoStep *step);
extern bool storage_retry_undo(const StorageUndoStep *step, char **error);
extern void storage_sweep_table(const char *location, int *removed, int *restored);
extern void storage_lock_folder(const char *path, bool exclusive);
extern bool storage_try_lock_folder(const char *path, bool exclusive, bool wait);
extern void storage_check_manifest(const char *location, const char *branch, int64 version,
								   bool v1_naming, const char *manifest_path, int64 size,
								   ManifestCopy *copy);
extern void storage_materialize_manifest(const ManifestCopy *copy);
extern char *storage_remove_table_data(const char *location, bool *later);
extern char *storage_read_ref(const char *location, const char *kind, const char *name);
extern bool storage_write_ref(const char *location, const char *kind, const char *name,
							  const char *content, bool create);
extern bool storage_delete_ref(const char *location, const char *kind, const char *name);
extern int storage_list_refs(const char *location, const char *kind, char ***names);
extern char *storage_read_table_manifest(const char *location, const char *manifest_path,
										 size_t *len);
extern char *storage_write_branch_manifest(const char *location, const char *branch, int64 version,
										   const char *bytes, size_t len, const char *like_path);
extern bool storage_branch_exists(const char *location, const char *branch);
extern bool storage_manifest_exists(const char *location, const char *manifest_path);
extern void storage_delete_branch_data(const char *location, const char *branch, bool has_children);

#endif /* LN_STORAGE_H */
