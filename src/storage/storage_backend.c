/*
 * storage_backend.c
 *		storage.h's entry points: each picks the backend of the table's
 *		location (S3 for "s3://", else local) and calls it.  Every entry
 *		point that writes or removes on storage asks the write guard first,
 *		so that a catalog that is not the one of record (a restored copy)
 *		never touches the live catalog's tables, whatever the backend.
 */
#include "postgres.h"

#include "../common/error.h"
#include "location.h"
#include "s3_client.h"
#include "storage.h"
#include "storage_internal.h"

static const StorageBackend local_backend = {
	.is_managed = local_is_managed,
	.check_location = local_check_location,
	.sweep_table = local_sweep_table,
	.check_manifest = local_check_manifest,
	.materialize_manifest = local_materialize_manifest,
	.remove_table_data = local_remove_table_data,
	.read_ref = local_read_ref,
	.write_ref = local_write_ref,
	.delete_ref = local_delete_ref,
	.list_refs = local_list_refs,
	.read_table_manifest = local_read_table_manifest,
	.manifest_exists = local_manifest_exists,
	.write_branch_manifest = local_write_branch_manifest,
	.branch_exists = local_branch_exists,
	.delete_branch_data = local_delete_branch_data,
};

/* An S3 location has no links to check: its spelling names a bucket, no user or port. */
static void
s3_check_location(const char *location)
{
	storage_check_location_spelling(location);
}

/* An S3 copy appears whole or not at all: no temporary objects to sweep. */
static void
s3_sweep_table(const char *location pg_attribute_unused(), int *removed pg_attribute_unused(),
			   int *restored pg_attribute_unused())
{
}

static const StorageBackend s3_backend = {
	.is_managed = s3_manages,
	.check_location = s3_check_location,
	.sweep_table = s3_sweep_table,
	.check_manifest = s3_check_manifest,
	.materialize_manifest = s3_materialize_manifest,
	.remove_table_data = s3_remove_table_data,
	.read_ref = s3_read_ref,
	.write_ref = s3_write_ref,
	.delete_ref = s3_delete_ref,
	.list_refs = s3_list_refs,
	.read_table_manifest = s3_read_table_manifest,
	.manifest_exists = s3_manifest_exists,
	.write_branch_manifest = s3_write_branch_manifest,
	.branch_exists = s3_branch_exists,
	.delete_branch_data = s3_delete_branch_data,
};

static StorageWriteGuard write_guard = NULL;

void
storage_set_write_guard(StorageWriteGuard guard)
{
	write_guard = guard;
}

/* Raise (through the guard) if this catalog may not write on storage. */
static void
require_may_write(void)
{
	if (write_guard != NULL)
		write_guard();
}

static const StorageBackend *
backend_of(const char *location)
{
	return pg_strncasecmp(location, "s3://", 5) == 0 ? &s3_backend : &local_backend;
}

/*
 * True if `leaf` is a final manifest's name, V1 ("<version>.manifest") or
 * V2 (20 digits, ".manifest"): a staging manifest must not be one.  Once
 * the version commits, the staging file is removed: named so, it would be
 * another version's committed manifest.
 */
static bool
is_final_manifest_name(const char *leaf)
{
	size_t digits = strspn(leaf, "0123456789");

	return digits > 0 && strcmp(leaf + digits, ".manifest") == 0;
}

/* True if `location` is one of the local backend's (not an object store's). */
bool
storage_is_local(const char *location)
{
	return backend_of(location) == &local_backend;
}

/*
 * True if the catalog manages the versions of a table at `location`: a local
 * path strictly below one of lance_namespace.local_roots, or an S3 location
 * strictly below a storage setting.
 */
bool
storage_is_managed(const char *location)
{
	return backend_of(location)->is_managed(location);
}

/*
 * The prefix under which the catalog manages versions that is `location`'s
 * folder or holds it, in location_folder_key's spelling: the storage setting
 * that covers an S3 location, the local root a local path is or is below.
 * NULL if there is none.  (A table exactly at a local root is not managed,
 * but the tables below that folder are.)
 */
char *
storage_managing_prefix(const char *location)
{
	if (backend_of(location) == &s3_backend)
		return s3_managing_prefix(location);
	return storage_local_root_near(location_local_path(location), false);
}

/* A local root strictly below `location`'s folder, or NULL (the catalog finds S3 settings). */
char *
storage_local_root_below(const char *location)
{
	return storage_local_root_near(location_local_path(location), true);
}

/*
 * LN013 if `location` is an S3 location whose authority holds more than a
 * bucket (location_s3_authority_extra).  Every place a location is accepted
 * checks it: a table's, a namespace's "location" property, a storage setting.
 */
void
storage_check_location_spelling(const char *location)
{
	const char *extra = location_s3_authority_extra(location);

	/* never the user part: it may hold a password */
	if (extra != NULL)
		ln_error_detail(LN_INVALID_INPUT,
						"Give an S3 URI: s3://bucket/prefix; the store's address and credentials "
						"go in a storage setting.",
						"location \"%s\" names %s: an S3 location names a bucket alone",
						location_for_message(location), extra);
}

void
storage_check_location(const char *location)
{
	backend_of(location)->check_location(location);
}

void
storage_sweep_table(const char *location, int *removed, int *restored)
{
	require_may_write();
	backend_of(location)->sweep_table(location, removed, restored);
}

/*
 * Check a version's staging manifest before anything is written, and fill
 * `copy` with what storage_materialize_manifest needs.  `size` is the
 * staging manifest's size as the writer gave it, or -1.
 */
void
storage_check_manifest(const char *location, const char *branch, int64 version, bool v1_naming,
					   const char *manifest_path, int64 size, ManifestCopy *copy)
{
	const char *leaf = strrchr(manifest_path, '/');

	/* a commit to a managed table answers the guard's error before anything else */
	require_may_write();
	backend_of(location)->check_manifest(location, branch, version, v1_naming, manifest_path, size,
										 copy);
	copy->location = pstrdup(location);
	if (!copy->already_final && is_final_manifest_name(leaf ? leaf + 1 : manifest_path))
		ln_error_detail(LN_INVALID_INPUT,
						"Write the manifest to a staging name (the final name and a suffix).",
						"manifest_path \"%s\" is the final name of another version, not a staging "
						"manifest",
						manifest_path);
}

void
storage_materialize_manifest(const ManifestCopy *copy)
{
	require_may_write();
	backend_of(copy->location)->materialize_manifest(copy);
}

char *
storage_remove_table_data(const char *location, bool *later)
{
	require_may_write();
	*later = false;
	return backend_of(location)->remove_table_data(location, later);
}

char *
storage_read_ref(const char *location, const char *kind, const char *name)
{
	return backend_of(location)->read_ref(location, kind, name);
}

bool
storage_write_ref(const char *location, const char *kind, const char *name, const char *content,
				  bool create)
{
	require_may_write();
	return backend_of(location)->write_ref(location, kind, name, content, create);
}

bool
storage_delete_ref(const char *location, const char *kind, const char *name)
{
	require_may_write();
	return backend_of(location)->delete_ref(location, kind, name);
}

int
storage_list_refs(const char *location, const char *kind, char ***names)
{
	return backend_of(location)->list_refs(location, kind, names);
}

char *
storage_read_table_manifest(const char *location, const char *manifest_path, size_t *len)
{
	return backend_of(location)->read_table_manifest(location, manifest_path, len);
}

/*
 * Whether the manifest the catalog records at `manifest_path` for a managed
 * table exists: false only when storage says it does not (a missing file or
 * object, or a missing folder on its way); anything else that keeps it from
 * telling (a store out of reach, an unreadable folder, a missing bucket)
 * raises, so that a caller never takes "could not look" for "gone".
 */
bool
storage_manifest_exists(const char *location, const char *manifest_path)
{
	return backend_of(location)->manifest_exists(location, manifest_path);
}

char *
storage_write_branch_manifest(const char *location, const char *branch, int64 version,
							  const char *bytes, size_t len, const char *like_path)
{
	require_may_write();
	return backend_of(location)->write_branch_manifest(location, branch, version, bytes, len,
													   like_path);
}

bool
storage_branch_exists(const char *location, const char *branch)
{
	return backend_of(location)->branch_exists(location, branch);
}

void
storage_delete_branch_data(const char *location, const char *branch, bool has_children)
{
	require_may_write();
	backend_of(location)->delete_branch_data(location, branch, has_children);
}

bool
storage_option_is_secret(const char *name)
{
	return s3_option_is_secret(name);
}

/*
 * Check a storage setting before it is kept: an S3 location with a bucket,
 * options the catalog can reach the store with, and what it vends
 * (storage_vend.c).  LN013 if not.
 */
void
storage_check_setting(const char *location, const LnMap *options, const LnMap *vend)
{
	char *bucket;
	char *key;
	S3Store store;

	storage_check_location_spelling(location);
	if (!location_s3_parse(location, &bucket, &key))
		ln_error_detail(LN_INVALID_INPUT, "Give an S3 URI: s3://bucket or s3://bucket/prefix.",
						"storage location \"%s\" is not an S3 location", location);
	s3_store_from_options(bucket, options, &store);
	storage_check_vend(&store, vend);
}

/*
 * For a final manifest's removal: take its name's partition lock without
 * waiting, exclusively where a writer of that version holds it shared
 * (storage_lock_final_name), so that the removal never meets a writer in
 * flight; the caller releases it (storage_undo_unlock) right after the
 * step.  False if a writer holds it: the step waits.  Other steps need no
 * lock.
 */
bool
storage_undo_try_lock(const StorageUndoStep *step)
{
	if (step->version < 0 || step->action != UNDO_REMOVE)
		return true;
	return storage_try_lock_final_name(step->s3 ? s3_final_name_of(step) : step->path);
}

/* Release what storage_undo_try_lock took (see storage_unlock_final_name for why it is safe). */
void
storage_undo_unlock(const StorageUndoStep *step)
{
	if (step->version < 0 || step->action != UNDO_REMOVE)
		return;
	storage_unlock_final_name(step->s3 ? s3_final_name_of(step) : step->path);
}

/*
 * The store an S3 step reaches (its setting's endpoint and bucket), for a
 * round to stop the steps of a store after its first failure; NULL for a
 * local step or one no setting covers.
 */
char *
storage_undo_endpoint(const StorageUndoStep *step)
{
	return step->s3 ? s3_undo_endpoint(step) : NULL;
}

/*
 * Do one spooled step now.  True when it is done (or has nothing left to
 * do: what it would remove or replace has changed since); false with
 * *error when it is to be tried again.  Only the catalog's own errors
 * (SQLSTATE class LN) are caught; a cancel goes through.
 */
bool
storage_retry_undo(const StorageUndoStep *step, char **error)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile bool done = true;

	/* a step changes storage as any write does: outside the catch, it raises */
	require_may_write();
	PG_TRY();
	{
		if (step->s3)
			s3_retry_undo(step);
		else
			local_retry_undo(step);
	}
	PG_CATCH();
	{
		ErrorData *edata = ln_error_take(cxt);

		*error = pstrdup(edata->message);
		FreeErrorData(edata);
		done = false;
	}
	PG_END_TRY();
	return done;
}
