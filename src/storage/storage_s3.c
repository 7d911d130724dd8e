/*
 * storage_s3.c
 *		The S3 backend: manifests, tags and branches of tables whose
 *		location is below an S3 storage setting (lance_set_storage), with
 *		the guarantees of the local backend.
 *
 * A staged manifest is copied to its final name with a server-side copy
 * while the caller's transaction holds the version's key; the final object
 * is deleted again if the transaction or savepoint aborts, and the staging
 * object once it commits.  Ref changes wait for the commit as on disk: they
 * are kept in memory and written at pre-commit, each with what it replaced
 * kept to put back if the commit still fails.  A branch's objects are
 * deleted after the commit that deleted it.
 *
 * The storage setting of a location is looked up once per transaction (the
 * finder _PG_init gave this file).  The undo keeps its own copy of how to reach
 * the store: commit and abort callbacks cannot read the catalog.
 */
#include "postgres.h"

#include <inttypes.h>

#include "access/xact.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "../common/error.h"
#include "location.h"
#include "s3_client.h"
#include "storage.h"
#include "storage_internal.h"

/* One table's place in the store. */
typedef struct S3Table
{
	S3Store store;
	char *location; /* the table's location */
	char *key;		/* the table's key prefix, no trailing slash */
	char *setting;	/* the location of the setting that covers it (a folder key) */
	LnMap options;	/* that setting's options */
	LnMap vend;		/* and how callers are handed credentials (storage_vend.c) */
} S3Table;

/* What a transaction did in a store, undone newest first on abort. */
typedef struct S3Undo
{
	S3Store store;
	char *location; /* the table's, to reach the store again if the undo waits */
	char *created;	/* made here: deleted on abort */
	char *branch;	/* `created` is a final manifest: its branch and version */
	int64 version;	/* (-1 otherwise) */
	bool ref;		/* a ref change: `written` is what the commit left there */
	char *written;	/* (NULL: nothing, a deletion) */
	size_t written_len;
	char *remove_on_commit; /* served its purpose once the change commits */
	char *previous;			/* with `replaced`: the content it had, put back on abort */
	size_t previous_len;
	char *replaced;		   /* an object overwritten or deleted here */
	char **keys_on_commit; /* a branch's objects, listed at pre-commit: deleted once the */
	int nkeys_on_commit;   /* change commits (a key written later in it is taken out) */
	bool queued;		   /* remove_on_commit: its deletion is under way */
	SubTransactionId subid;
	struct S3Undo *next;
} S3Undo;

/* A ref change waiting for the commit; newest first. */
typedef struct S3Pending
{
	S3Store store;
	char *location; /* the table's */
	char *key;
	char *folder; /* the prefix listed for its kind; NULL for a branch's tree */
	char *name;
	char *content; /* NULL: a removal */
	size_t len;
	bool create;
	SubTransactionId subid;
	struct S3Pending *next;
} S3Pending;

typedef struct CachedTable
{
	char *location;
	bool found;
	S3Table table;
	struct CachedTable *next;
} CachedTable;

/* A ref is a small JSON object; a bigger one is no ref of Lance's */
#define MAX_REF_SIZE (1024 * 1024)
/* Objects a branch's deletion deletes at most (its versions' manifests) */
#define MAX_BRANCH_OBJECTS 100000

static S3Undo *undo_list = NULL;
static S3Pending *pending = NULL;
static CachedTable *cache = NULL;
static StorageSettingsFinder finder = NULL;

void
storage_set_settings_finder(StorageSettingsFinder f)
{
	finder = f;
}

/* Forget the settings looked up in this transaction (lance_set_storage changed them). */
void
storage_forget_settings(void)
{
	cache = NULL;
}

static char *
top_strdup(const char *s)
{
	return s ? MemoryContextStrdup(TopTransactionContext, s) : NULL;
}

static void
copy_store(S3Store *to, const S3Store *from)
{
	to->bucket = top_strdup(from->bucket);
	to->endpoint = top_strdup(from->endpoint);
	to->region = top_strdup(from->region);
	to->access_key_id = top_strdup(from->access_key_id);
	to->secret_access_key = top_strdup(from->secret_access_key);
	to->session_token = top_strdup(from->session_token);
	to->virtual_hosted = from->virtual_hosted;
}

static bool
same_store(const S3Store *a, const S3Store *b)
{
	/* an anonymous store has no key id */
	return strcmp(a->endpoint, b->endpoint) == 0 && strcmp(a->bucket, b->bucket) == 0 &&
		   (a->access_key_id == NULL || b->access_key_id == NULL
				? a->access_key_id == b->access_key_id
				: strcmp(a->access_key_id, b->access_key_id) == 0);
}

/* A copy of `from` in TopTransactionContext. */
static void
copy_map(LnMap *to, const LnMap *from)
{
	to->len = from->len;
	to->keys = MemoryContextAlloc(TopTransactionContext, sizeof(char *) * (from->len + 1));
	to->values = MemoryContextAlloc(TopTransactionContext, sizeof(char *) * (from->len + 1));
	for (int i = 0; i < from->len; i++)
	{
		to->keys[i] = top_strdup(from->keys[i]);
		to->values[i] = top_strdup(from->values[i]);
	}
}

/*
 * The cache lives in TopTransactionContext, and goes with it however the
 * transaction ends (commit, abort, PREPARE).
 */
static void
forget_cache(void *arg pg_attribute_unused())
{
	cache = NULL;
}

/* Where table `location` is in its store: false if it is no S3 location or no setting covers it. */
static bool
find_table(const char *location, S3Table *out)
{
	char *bucket;
	char *key;
	char *prefix;
	LnMap options;
	LnMap vend;
	CachedTable *c;
	MemoryContext old;

	for (c = cache; c != NULL; c = c->next)
		if (strcmp(c->location, location) == 0)
		{
			*out = c->table;
			return c->found;
		}
	if (!location_s3_parse(location, &bucket, &key))
		return false;

	old = MemoryContextSwitchTo(TopTransactionContext);
	if (cache == NULL)
	{
		MemoryContextCallback *callback = palloc0(sizeof(MemoryContextCallback));

		callback->func = forget_cache;
		MemoryContextRegisterResetCallback(TopTransactionContext, callback);
	}
	c = palloc0(sizeof(CachedTable));
	c->location = pstrdup(location);
	MemoryContextSwitchTo(old);

	c->found = finder != NULL && finder(location_folder_key(location), &prefix, &options, &vend);
	if (c->found)
	{
		S3Store store;

		s3_store_from_options(bucket, &options, &store);
		copy_store(&c->table.store, &store);
		c->table.location = top_strdup(location);
		c->table.key = top_strdup(key);
		c->table.setting = top_strdup(prefix);
		copy_map(&c->table.options, &options);
		copy_map(&c->table.vend, &vend);
	}
	c->next = cache;
	cache = c;
	*out = c->table;
	return c->found;
}

static void
require_table(const char *location, S3Table *t)
{
	if (!find_table(location, t))
		ln_error(LN_INVALID_INPUT, "no storage setting covers \"%s\"", location);
}

bool
s3_manages(const char *location)
{
	S3Table t;

	return find_table(location, &t);
}

/* The prefix of the setting that covers `location` (a folder key), or NULL. */
char *
s3_managing_prefix(const char *location)
{
	S3Table t;

	return find_table(location, &t) ? pstrdup(t.setting) : NULL;
}

/*
 * The setting that covers table `location` as this transaction looked it up
 * (storage_vend.c hands out what it says): the store, the table's key, the
 * setting's location, options and vend members, kept in
 * TopTransactionContext (read them, do not change them).  False if none does.
 */
bool
s3_table_setting(const char *location, S3Store *store, char **key, char **setting, LnMap *options,
				 LnMap *vend)
{
	S3Table t;

	if (!find_table(location, &t))
		return false;
	*store = t.store;
	*key = t.key;
	*setting = t.setting;
	*options = t.options;
	*vend = t.vend;
	return true;
}

static S3Undo *
new_undo(const S3Store *store, const char *location)
{
	S3Undo *u = MemoryContextAllocZero(TopTransactionContext, sizeof(S3Undo));

	copy_store(&u->store, store);
	u->location = top_strdup(location);
	u->version = -1;
	u->subid = GetCurrentSubTransactionId();
	u->next = undo_list;
	undo_list = u;
	return u;
}

/* A key relative to the bucket from a path Lance sends: "s3://bucket/k", "/k" or "k". */
static char *
bucket_key_of(const S3Table *t, const char *path)
{
	char *prefix = psprintf("s3://%s/", t->store.bucket);

	if (strncmp(path, prefix, strlen(prefix)) == 0)
		return pstrdup(path + strlen(prefix));
	while (path[0] == '/')
		path++;
	return pstrdup(path);
}

void
s3_check_manifest(const char *location, const char *branch, int64 version, bool v1_naming,
				  const char *manifest_path, int64 size, ManifestCopy *copy)
{
	S3Table t;
	char *versions;
	char *staging;
	char *slash;
	char *final_name;

	require_table(location, &t);
	versions =
		branch ? psprintf("%s/tree/%s/_versions", t.key, branch) : psprintf("%s/_versions", t.key);
	staging = bucket_key_of(&t, manifest_path);
	slash = strrchr(staging, '/');
	if (slash == NULL || !location_path_is_plain(staging) || slash[1] == '\0' ||
		strlen(versions) != (size_t)(slash - staging) ||
		strncmp(staging, versions, slash - staging) != 0)
		ln_error_detail(
			LN_INVALID_INPUT,
			psprintf("The table's manifests live in s3://%s/%s.", t.store.bucket, versions),
			"manifest_path \"%s\" is not an object in the table's _versions folder", manifest_path);
	/*
	 * A writer that gives the staging object's size (Lance does) is taken
	 * at its word, one request fewer per commit: the copy finds a missing
	 * object, and a wrong size harms only readers of the versions the
	 * writer could write anyway.  Without one, the object is looked up.
	 */
	if (size < 0 && !s3_head(&t.store, staging, &size))
		ln_error(LN_INVALID_INPUT, "staging manifest \"%s\" does not exist", manifest_path);

	if (v1_naming)
		final_name = psprintf(INT64_FORMAT ".manifest", version);
	else
		final_name =
			psprintf("%020llu.manifest", (unsigned long long)(PG_UINT64_MAX - (uint64)version));
	copy->location = pstrdup(location);
	copy->branch = pstrdup(branch ? branch : "");
	copy->version = version;
	copy->staging_file = staging;
	copy->final_file = psprintf("%s/%s", versions, final_name);
	copy->final_path = psprintf("%.*s%s", (int)(strrchr(manifest_path, '/') - manifest_path + 1),
								manifest_path, final_name);
	copy->size = size;
	copy->already_final = strcmp(slash + 1, final_name) == 0;
}

/*
 * Copy a checked manifest to its final name.  As on disk, the name's
 * partition is held until the transaction ends, and a writer that finds
 * the object there waits for every other writer of the partition before it
 * replaces it (storage_local.c), so that the undo of a writer that rolled
 * back never deletes the object of the next one.  A copy that fails may
 * still have made the object, and its undo deletes the name: until the
 * copy has succeeded, the exact name is locked too.
 *
 * The copy is waited for, interrupts held: a cancel (statement_timeout,
 * pg_cancel_backend, a client gone) that gave up on a copy in flight would
 * have the undo delete the name while the store may still make the object,
 * over the manifest the next writer of the version commits.  The wait is
 * bounded by lance_namespace.storage_timeout, and the cancel takes effect
 * once the copy's outcome is known, with the undo deleting what it made.
 */
void
s3_materialize_manifest(const ManifestCopy *copy)
{
	S3Table t;
	S3Undo *u;
	char *name;

	if (copy->already_final)
		return;
	require_table(copy->location, &t);
	name = psprintf("s3://%s/%s", t.store.bucket, copy->final_file);
	storage_lock_final_name(name);
	storage_lock_final_name_exact(name);
	/* an object there is an orphan: its writer may still be undoing (looked up only then) */
	if (storage_final_name_shared(name) && s3_head(&t.store, copy->final_file, NULL))
		storage_wait_final_name(name);
	/* recorded first: a copy that fails after the store made the object is undone too */
	u = new_undo(&t.store, copy->location);
	u->created = top_strdup(copy->final_file);
	u->branch = top_strdup(copy->branch);
	u->version = copy->version;
	HOLD_INTERRUPTS();
	s3_copy(&t.store, copy->staging_file, copy->final_file);
	RESUME_INTERRUPTS();
	u->remove_on_commit = top_strdup(copy->staging_file);
	storage_unlock_final_name_exact(name);
	CHECK_FOR_INTERRUPTS();
}

/*
 * Delete a dropped table's objects: everything below its key prefix.
 * Returns NULL on success, else why not; *later if the store could not be
 * reached or asked for fewer requests, when the drop is to be tried again.
 */
char *
s3_remove_table_data(const char *location, bool *later)
{
	S3Table t;
	MemoryContext cxt = CurrentMemoryContext;
	char *reason = NULL;

	if (!find_table(location, &t))
		return psprintf("\"%s\" is not below a storage setting", location);
	/* a bucket, or a prefix that has a setting of its own, is never one table's */
	if (t.key[0] == '\0' || strcmp(t.setting, location_folder_key(location)) == 0)
		return psprintf("\"%s\" is a storage setting's location, not a table's", location);
	PG_TRY();
	{
		reason = s3_delete_prefix(&t.store, psprintf("%s/", t.key));
	}
	PG_CATCH();
	{
		/* the store's answer is the drop's reason; a cancel or running out of memory is not */
		ErrorData *edata = ln_error_take(cxt);

		reason = pstrdup(edata->message);
		/* a store out of reach or throttling: the drop waits for the next round */
		*later = edata->sqlerrcode == MAKE_SQLSTATE('L', 'N', '0', '1', '7') ||
				 edata->sqlerrcode == MAKE_SQLSTATE('L', 'N', '0', '2', '1');
		FreeErrorData(edata);
	}
	PG_END_TRY();
	return reason;
}

/* Refs, as storage_refs.c keeps them: _refs/<kind>/<name, '/' and '%' escaped>.json */
static char *
refs_prefix(const S3Table *t, const char *kind)
{
	return psprintf("%s/_refs/%s/", t->key, kind);
}

static char *
ref_key(const S3Table *t, const char *kind, const char *name)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoString(&buf, refs_prefix(t, kind));
	for (const char *c = name; *c; c++)
	{
		if (*c == '/' || *c == '%')
			appendStringInfo(&buf, "%%%02X", (unsigned char)*c);
		else
			appendStringInfoChar(&buf, *c);
	}
	appendStringInfoString(&buf, ".json");
	return buf.data;
}

static S3Pending *
pending_change(const S3Table *t, const char *key)
{
	for (S3Pending *p = pending; p != NULL; p = p->next)
		if (strcmp(p->key, key) == 0 && strcmp(p->store.bucket, t->store.bucket) == 0 &&
			strcmp(p->store.endpoint, t->store.endpoint) == 0)
			return p;
	return NULL;
}

static void
add_pending(const S3Table *t, const char *key, const char *folder, const char *name,
			const char *content, size_t len, bool create)
{
	S3Pending *p = MemoryContextAllocZero(TopTransactionContext, sizeof(S3Pending));

	copy_store(&p->store, &t->store);
	p->location = top_strdup(t->location);
	p->key = top_strdup(key);
	p->folder = top_strdup(folder);
	p->name = top_strdup(name);
	if (content != NULL)
	{
		p->content = MemoryContextAlloc(TopTransactionContext, len + 1);
		memcpy(p->content, content, len);
		p->content[len] = '\0';
	}
	p->len = len;
	p->create = create;
	p->subid = GetCurrentSubTransactionId();
	p->next = pending;
	pending = p;
}

static bool
ref_exists(const S3Table *t, const char *key)
{
	S3Pending *p = pending_change(t, key);

	if (p != NULL)
		return p->content != NULL;
	return s3_head(&t->store, key, NULL);
}

char *
s3_read_ref(const char *location, const char *kind, const char *name)
{
	S3Table t;
	char *key;
	S3Pending *p;

	require_table(location, &t);
	key = ref_key(&t, kind, name);
	if ((p = pending_change(&t, key)) != NULL)
		return p->content ? pstrdup(p->content) : NULL;
	return s3_get(&t.store, key, MAX_REF_SIZE, NULL);
}

bool
s3_write_ref(const char *location, const char *kind, const char *name, const char *content,
			 bool create)
{
	S3Table t;
	char *key;

	require_table(location, &t);
	key = ref_key(&t, kind, name);
	if (ref_exists(&t, key) == create)
		return false;
	add_pending(&t, key, refs_prefix(&t, kind), name, content, strlen(content), create);
	return true;
}

bool
s3_delete_ref(const char *location, const char *kind, const char *name)
{
	S3Table t;
	char *key;

	require_table(location, &t);
	key = ref_key(&t, kind, name);
	if (!ref_exists(&t, key))
		return false;
	add_pending(&t, key, refs_prefix(&t, kind), name, NULL, 0, false);
	return true;
}

static int
compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The maximum number of refs of one kind a table may have in the store. */
#define MAX_REFS 100000

int
s3_list_refs(const char *location, const char *kind, char ***names)
{
	S3Table t;
	char *prefix;
	char **keys;
	int nkeys;
	int n = 0;

	require_table(location, &t);
	prefix = refs_prefix(&t, kind);
	nkeys = s3_list(&t.store, prefix, MAX_REFS, &keys);
	if (nkeys > MAX_REFS)
		ln_error(LN_INVALID_TABLE_STATE, "table \"%s\" has more than %d %s", location, MAX_REFS,
				 kind);
	*names = palloc(sizeof(char *) * (nkeys + 1));
	for (int i = 0; i < nkeys; i++)
	{
		const char *leaf = keys[i] + strlen(prefix);
		size_t len = strlen(leaf);
		char *name;

		if (strchr(leaf, '/') != NULL || len <= 5 || strcmp(leaf + len - 5, ".json") != 0)
			continue;
		if ((name = location_percent_decode(leaf, len - 5, false)) != NULL)
			(*names)[n++] = name;
	}
	/* what this transaction creates and removes */
	for (S3Pending *p = pending; p != NULL; p = p->next)
	{
		int k;

		if (p->folder == NULL || strcmp(p->folder, prefix) != 0 || pending_change(&t, p->key) != p)
			continue;
		for (k = 0; k < n && strcmp((*names)[k], p->name) != 0; k++)
			;
		if (p->content != NULL && k == n)
		{
			*names = repalloc(*names, sizeof(char *) * (n + 2));
			(*names)[n++] = pstrdup(p->name);
		}
		else if (p->content == NULL && k < n)
			(*names)[k] = (*names)[--n];
	}
	qsort(*names, n, sizeof(char *), compare_names);
	return n;
}

bool
s3_branch_exists(const char *location, const char *branch)
{
	S3Table t;
	char **keys;
	char *tree;

	if (s3_read_ref(location, "branches", branch) != NULL)
		return true;
	require_table(location, &t);
	tree = psprintf("%s/tree/%s/", t.key, branch);
	for (S3Pending *p = pending; p != NULL; p = p->next)
		if (p->content == NULL && p->folder == NULL && strcmp(p->key, tree) == 0)
			return false;
	return s3_list(&t.store, psprintf("%s_versions/", tree), 0, &keys) > 0;
}

void
s3_delete_branch_data(const char *location, const char *branch, bool has_children)
{
	S3Table t;

	if (has_children)
		return;
	require_table(location, &t);
	add_pending(&t, psprintf("%s/tree/%s/", t.key, branch), NULL, NULL, NULL, 0, false);
}

char *
s3_read_table_manifest(const char *location, const char *manifest_path, size_t *len)
{
	S3Table t;
	char *key;
	char *bytes;

	require_table(location, &t);
	key = bucket_key_of(&t, manifest_path);
	if (!location_path_is_plain(key) || strncmp(key, t.key, strlen(t.key)) != 0 ||
		key[strlen(t.key)] != '/')
		ln_error(LN_INVALID_TABLE_STATE, "manifest \"%s\" is not in the table's folder",
				 manifest_path);
	bytes = s3_get(&t.store, key, SIZE_MAX, len);
	if (bytes == NULL)
		ln_error(LN_INVALID_TABLE_STATE, "manifest \"%s\" does not exist", manifest_path);
	return bytes;
}

/*
 * Whether a managed table's manifest exists: a listing of its exact key (a
 * HEAD answers a missing bucket as it answers a missing object, 404
 * without a body; a listing of a missing bucket raises).  The exact key
 * sorts before any longer one (a staging manifest of the same name).
 */
bool
s3_manifest_exists(const char *location, const char *manifest_path)
{
	S3Table t;
	char *key;
	char **keys;

	require_table(location, &t);
	key = bucket_key_of(&t, manifest_path);
	if (!location_path_is_plain(key) || strncmp(key, t.key, strlen(t.key)) != 0 ||
		key[strlen(t.key)] != '/')
		ln_error(LN_INVALID_TABLE_STATE, "manifest \"%s\" is not in the table's folder",
				 manifest_path);
	return s3_list(&t.store, key, 1, &keys) > 0 && strcmp(keys[0], key) == 0;
}

char *
s3_write_branch_manifest(const char *location, const char *branch, int64 version, const char *bytes,
						 size_t len, const char *like_path)
{
	S3Table t;
	char *key;

	require_table(location, &t);
	key = psprintf("%s/tree/%s/_versions/%020" PRIu64 ".manifest", t.key, branch,
				   PG_UINT64_MAX - (uint64)version);
	add_pending(&t, key, NULL, NULL, bytes, len, true);
	if (strncmp(like_path, "s3://", 5) == 0)
		return psprintf("s3://%s/%s", t.store.bucket, key);
	return like_path[0] == '/' ? psprintf("/%s", key) : key;
}

/*
 * Take `key` out of the branch objects an earlier change of this
 * transaction deletes after the commit: a later change wrote it.  True if
 * it was there.
 */
static bool
unschedule_deletion(const S3Store *store, const char *key)
{
	bool found = false;

	for (S3Undo *u = undo_list; u != NULL; u = u->next)
		for (int i = 0; i < u->nkeys_on_commit; i++)
			if (strcmp(u->keys_on_commit[i], key) == 0 && same_store(&u->store, store))
			{
				u->keys_on_commit[i] = u->keys_on_commit[--u->nkeys_on_commit];
				found = true;
				break;
			}
	return found;
}

/*
 * Keep the object p->key holds now (at most `max` bytes), if any, in `u`,
 * to put it back if the commit fails after it was replaced.
 */
static void
keep_previous(S3Undo *u, const S3Pending *p, size_t max)
{
	size_t len;
	char *previous = s3_get(&p->store, p->key, max, &len);

	if (previous == NULL)
		return;
	u->previous = MemoryContextAllocHuge(TopTransactionContext, len + 1);
	memcpy(u->previous, previous, len);
	u->previous_len = len;
	u->replaced = top_strdup(p->key);
}

/* Write one pending change at pre-commit, keeping what it replaces for an abort. */
static void
apply_pending(const S3Pending *p)
{
	S3Undo *u = new_undo(&p->store, p->location);

	if (p->folder == NULL && p->content == NULL)
	{
		/*
		 * A branch's objects: those there now are deleted once the commit
		 * is certain.  The branch's folder lock, held until then, keeps a
		 * new branch of that name out meanwhile.
		 */
		char **keys;
		int n = s3_list(&p->store, p->key, MAX_BRANCH_OBJECTS, &keys);

		if (n > MAX_BRANCH_OBJECTS)
			ln_error(LN_INVALID_TABLE_STATE, "\"%s\" holds more than %d objects", p->key,
					 MAX_BRANCH_OBJECTS);
		u->keys_on_commit = MemoryContextAlloc(TopTransactionContext, sizeof(char *) * (n + 1));
		for (int i = 0; i < n; i++)
			u->keys_on_commit[i] = top_strdup(keys[i]);
		u->nkeys_on_commit = n;
		return;
	}
	if (!p->create)
		keep_previous(u, p, MAX_REF_SIZE);
	/*
	 * An object that a branch deleted in this transaction left is no other
	 * writer's: it is replaced, and put back as it was if the commit fails.
	 */
	else if (unschedule_deletion(&p->store, p->key))
		keep_previous(u, p, SIZE_MAX);
	else if (s3_head(&p->store, p->key, NULL))
		ln_error(LN_CONCURRENT_MODIFICATION,
				 "\"%s\" was created by another writer while this transaction ran",
				 p->name ? p->name : p->key);
	(void)unschedule_deletion(&p->store, p->key);
	/* what this change leaves: an undo that waits acts only while it is still there */
	u->ref = true;
	if (p->content != NULL)
	{
		u->written = MemoryContextAllocHuge(TopTransactionContext, p->len + 1);
		memcpy(u->written, p->content, p->len);
		u->written_len = p->len;
	}
	if (p->content == NULL)
	{
		s3_delete(&p->store, p->key);
		return;
	}
	if (u->replaced == NULL)
		u->created = top_strdup(p->key);
	s3_put(&p->store, p->key, p->content, p->len);
}

void
s3_apply_pending(void)
{
	S3Pending *oldest_first = NULL;

	while (pending != NULL)
	{
		S3Pending *p = pending;

		pending = p->next;
		p->next = oldest_first;
		oldest_first = p;
	}
	pending = oldest_first;
	while (pending != NULL)
	{
		S3Pending *p = pending;

		pending = p->next;
		apply_pending(p);
	}
}

bool
s3_has_pending(void)
{
	return pending != NULL || undo_list != NULL;
}

/*
 * In one commit or abort round, a store that did not answer is not asked
 * again: with a thousand objects to undo, each call would wait for its
 * timeout.  What an abort leaves undone is spooled for the next maintenance
 * round (storage_spool.c); what a commit leaves is said in the log (a staging
 * object is Lance's leftover to clean).
 */
static char *silent_endpoint = NULL;
/*
 * And a round as a whole stops after 30 seconds: the commit's answer, and
 * every lock of the transaction, wait for it, with interrupts held.
 */
#define ROUND_MS 30000
static TimestampTz round_deadline;
static bool round_warned; /* one warning per round is enough */

static void
begin_round(void)
{
	silent_endpoint = NULL;
	round_warned = false;
	round_deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), ROUND_MS);
}

static bool
store_silent(const S3Undo *u, const char *what, const char *key)
{
	if (GetCurrentTimestamp() >= round_deadline)
	{
		if (!round_warned)
			ereport(WARNING, (errmsg("lance_namespace: did not %s \"%s\" in bucket \"%s\" (nor "
									 "what followed): the commit's work on object stores ran out "
									 "of time",
									 what, key, u->store.bucket)));
		round_warned = true;
		return true;
	}
	if (silent_endpoint == NULL || strcmp(silent_endpoint, u->store.endpoint) != 0)
		return false;
	ereport(WARNING, (errmsg("lance_namespace: did not %s \"%s\" in bucket \"%s\": the store did "
							 "not answer; the next maintenance round retries an undo",
							 what, key, u->store.bucket)));
	return true;
}

static void
warn(const char *what, const S3Undo *u, const char *key, const char *error, bool no_answer)
{
	if (no_answer)
		silent_endpoint = u->store.endpoint;
	ereport(WARNING, (errmsg("lance_namespace: could not %s \"%s\" in bucket \"%s\": %s", what, key,
							 u->store.bucket, error)));
}

/* Keep a step the undo could not do for the next maintenance round (storage_spool.c). */
static void
spool_step(const S3Undo *u, char action)
{
	StorageUndoStep step = {0};

	step.action = action;
	step.s3 = true;
	step.location = u->location;
	step.path = action == UNDO_REMOVE ? u->created : u->replaced;
	step.branch = action == UNDO_REMOVE && u->version >= 0 ? u->branch : NULL;
	step.version = action == UNDO_REMOVE ? u->version : -1;
	if (action == UNDO_PUT_BACK)
	{
		step.content = u->previous;
		step.content_len = u->previous_len;
	}
	step.check_left = u->ref;
	step.left = u->written;
	step.left_len = u->written_len;
	storage_spool_add(&step);
}

/* Undo one step on abort; raises nothing.  What the store did not do is spooled. */
static void
undo_on_abort(const S3Undo *u)
{
	char *error;
	bool no_answer;
	bool done;

	if (u->created != NULL)
	{
		done = false;
		if (!store_silent(u, "delete after a rollback", u->created))
		{
			done = s3_delete_quietly(&u->store, u->created, &error, &no_answer);
			if (!done)
				warn("delete after a rollback", u, u->created, error, no_answer);
		}
		if (!done)
			spool_step(u, UNDO_REMOVE);
	}
	if (u->replaced != NULL)
	{
		done = false;
		if (!store_silent(u, "put back after a rollback", u->replaced))
		{
			done = s3_put_quietly(&u->store, u->replaced, u->previous, u->previous_len, &error,
								  &no_answer);
			if (!done)
				warn("put back after a rollback", u, u->replaced, error, no_answer);
		}
		if (!done)
			spool_step(u, UNDO_PUT_BACK);
	}
}

static void
finish_on_commit(const S3Undo *u)
{
	char *error;
	bool no_answer;

	/* waited for: the branch's folder lock goes only after this, with the transaction's */
	for (int start = 0; start < u->nkeys_on_commit; start += 1000)
	{
		if (store_silent(u, "delete", u->keys_on_commit[start]))
			return;
		if (!s3_delete_keys_quietly(&u->store, u->keys_on_commit + start,
									Min(1000, u->nkeys_on_commit - start), &error, &no_answer))
			warn("delete a branch's objects", u, u->keys_on_commit[start], error, no_answer);
	}
}

/* Run a step where no error may escape: a failure is a warning. */
static void
run_quietly(void (*step)(const S3Undo *), const S3Undo *u)
{
	MemoryContext cxt = CurrentMemoryContext;

	PG_TRY();
	{
		step(u);
	}
	PG_CATCH();
	{
		ErrorData *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		ereport(WARNING, (errmsg("lance_namespace: %s", edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
}

/*
 * After a commit, the staging objects of its versions have served: they are
 * deleted in the background, one request per store and thousand keys, so
 * that the commit's answer does not wait for the store.
 */
static void
delete_staging_objects(const S3Undo *first pg_attribute_unused())
{
	for (S3Undo *u = undo_list; u != NULL; u = u->next)
	{
		char **keys;
		int n = 0;
		int cap = 64;

		if (u->remove_on_commit == NULL || u->queued)
			continue;
		if (store_silent(u, "delete", u->remove_on_commit))
			continue;
		keys = palloc(sizeof(char *) * cap);
		for (S3Undo *v = u; v != NULL; v = v->next)
		{
			if (v->remove_on_commit == NULL || v->queued || !same_store(&u->store, &v->store))
				continue;
			if (n == cap)
				keys = repalloc(keys, sizeof(char *) * (cap *= 2));
			keys[n++] = v->remove_on_commit;
			v->queued = true;
		}
		s3_delete_keys_later(&u->store, keys, n);
	}
}

void
s3_end_transaction(bool commit)
{
	begin_round();
	if (commit && undo_list != NULL)
		run_quietly(delete_staging_objects, undo_list);
	for (S3Undo *u = undo_list; u != NULL; u = u->next)
		run_quietly(commit ? finish_on_commit : undo_on_abort, u);
	undo_list = NULL;
	pending = NULL;
	cache = NULL;
}

void
s3_end_subtransaction(bool commit, SubTransactionId mySubid, SubTransactionId parentSubid)
{
	S3Undo **link = &undo_list;
	S3Pending **plink = &pending;

	begin_round();
	/* a setting changed in the subtransaction is changed no more */
	if (!commit)
		cache = NULL;
	while (*link != NULL)
	{
		S3Undo *u = *link;

		if (u->subid != mySubid)
			link = &u->next;
		else if (commit)
		{
			u->subid = parentSubid;
			link = &u->next;
		}
		else
		{
			run_quietly(undo_on_abort, u);
			*link = u->next;
		}
	}
	while (*plink != NULL)
	{
		S3Pending *p = *plink;

		if (p->subid != mySubid)
			plink = &p->next;
		else if (commit)
		{
			p->subid = parentSubid;
			plink = &p->next;
		}
		else
			*plink = p->next;
	}
}

/*
 * The name a spooled removal of a final manifest locks, as
 * s3_materialize_manifest locked it.
 */
char *
s3_final_name_of(const StorageUndoStep *step)
{
	char *bucket;
	char *key;

	if (!location_s3_parse(step->location, &bucket, &key))
		return pstrdup(step->path);
	return psprintf("s3://%s/%s", bucket, step->path);
}

/* The store of a spooled step ("<endpoint>/<bucket>"), NULL if no setting covers it. */
char *
s3_undo_endpoint(const StorageUndoStep *step)
{
	S3Table t;

	if (!find_table(step->location, &t))
		return NULL;
	return psprintf("%s/%s", t.store.endpoint, t.store.bucket);
}

/* Whether the object at `key` holds what a spooled step expects (`left`, or nothing). */
static bool
holds_what_was_left(const S3Table *t, const StorageUndoStep *step)
{
	size_t len;
	char *now = s3_get(&t->store, step->path, Max(step->left_len, MAX_REF_SIZE), &len);

	if (step->left == NULL || now == NULL)
		return step->left == NULL && now == NULL;
	return len == step->left_len && memcmp(now, step->left, len) == 0;
}

/*
 * Do a spooled step of an S3 undo (storage_retry_undo), raising if the
 * store fails.  The store is reached through the setting that covers the
 * table's location now.  A ref is put back or removed only while it holds
 * what the rolled-back commit left there: a change committed since stays.
 * (A final manifest's removal was checked against the catalog's versions
 * by the caller, under the name's lock.)
 */
void
s3_retry_undo(const StorageUndoStep *step)
{
	S3Table t;

	if (!find_table(step->location, &t))
		ln_error(LN_SERVICE_UNAVAILABLE, "no storage setting covers \"%s\" now", step->location);
	if (step->check_left && !holds_what_was_left(&t, step))
		return;
	if (step->action == UNDO_REMOVE)
		s3_delete(&t.store, step->path);
	else
		s3_put(&t.store, step->path, step->content, step->content_len);
}
