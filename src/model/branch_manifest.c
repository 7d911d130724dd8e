/*
 * branch_manifest.c
 *		The manifest Lance writes for a new branch.
 *
 * Lance creates branch B from version V of branch P by writing, at
 * tree/B/_versions/{u64::MAX - V:020}.manifest, a copy of P's manifest of V
 * that keeps its data where it is: the copy gains a base path naming P's
 * folder, every data, overlay and deletion file (and every index) that was
 * found relative to P's folder now names that base path by id, and the copy
 * says which branch it belongs to.  Nothing is copied but the manifest, so
 * the branch costs one small file.
 *
 * This module makes that manifest from the source manifest's bytes without
 * decoding it into structures: it walks the protobuf wire format, copies
 * every field it has no reason to touch byte for byte (so fields added to
 * Lance's format later survive), and rewrites only the messages on the path
 * to a base_id.  The manifest file is
 *
 *	 [V1 storage only: schema dictionaries]
 *	 [u32 LE len][IndexSection]			(Manifest.index_section points here)
 *	 [u32 LE len][Transaction]			(Manifest.transaction_section points here)
 *	 [u32 LE len][Manifest]
 *	 [i64 LE position of the Manifest's len][i16 LE major][i16 LE minor]["LANC"]
 *
 * and a reader requires the Manifest to run exactly up to the footer.  The
 * bytes before the first section are kept as they are, because the schema's
 * dictionaries are read from offsets recorded in the schema itself.
 *
 * One departure from Lance (10.0, as bundled with @lancedb/lancedb 0.37):
 * Lance sets every index's base_id to the new base path, even one that
 * already names another, so in a branch of a branch an index inherited from
 * main is looked for under the parent branch's folder and index queries
 * fail.  Here an index, like a file, keeps a base_id it already has.  For a
 * fork of main the two agree, since main's indices have none.
 *
 * The source is a file on disk a client could have written, so every length
 * is checked against the bytes that remain before it is used; anything that
 * does not parse is LN019, never a read past the end.
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/timestamp.h"

#include "../common/error.h"
#include "../common/pg_compat.h"
#include "branch_manifest.h"

/* Protobuf wire types (groups, 3 and 4, do not occur in Lance's messages). */
#define WT_VARINT 0
#define WT_I64	  1
#define WT_LEN	  2
#define WT_I32	  5

#define PB_MAX_FIELD_NUMBER 536870911 /* 2^29 - 1 */
#define PB_MAX_VARINT_LEN	10

/* Manifest fields this module reads, replaces or drops (table.proto). */
#define MF_FRAGMENTS		   2
#define MF_VERSION_AUX_DATA	   4
#define MF_INDEX_SECTION	   6
#define MF_TIMESTAMP		   7
#define MF_TAG				   8
#define MF_READER_FLAGS		   9
#define MF_WRITER_FLAGS		   10
#define MF_TRANSACTION_FILE	   12
#define MF_BASE_PATHS		   18
#define MF_BRANCH			   20
#define MF_TRANSACTION_SECTION 21

/* BasePath fields. */
#define BP_ID			   1
#define BP_NAME			   2
#define BP_IS_DATASET_ROOT 3
#define BP_PATH			   4

/* google.protobuf.Timestamp fields. */
#define TS_SECONDS 1
#define TS_NANOS   2

/* Feature flag 1 << 4: the dataset uses multiple base paths. */
#define FLAG_BASE_PATHS UINT64CONST(16)

/* The footer: i64 position, i16 major, i16 minor, magic. */
#define FOOTER_LEN 16
#define MAGIC	   "LANC"
#define MAGIC_LEN  4

/* One field as it stands in the wire format. */
typedef struct PbField
{
	uint32 number;
	int wire_type;
	uint64 value;	   /* WT_VARINT, WT_I64, WT_I32 */
	const char *data;  /* WT_LEN: the payload */
	size_t len;		   /* WT_LEN: its length */
	const char *start; /* the whole field, key included, to copy it as is */
	size_t total;
} PbField;

typedef struct PbReader
{
	const char *buf;
	size_t len;
	size_t pos;
} PbReader;

/*
 * The messages between a Manifest (or an IndexSection) and a base_id, and
 * what to do in each: add base_id_field where it is absent, and descend into
 * the fields that hold messages further down the path.  Every other field is
 * copied as is.
 */
typedef struct MsgKind MsgKind;

typedef struct MsgChild
{
	uint32 field;
	const MsgKind *kind;
} MsgChild;

struct MsgKind
{
	const char *name;	  /* for errors */
	uint32 base_id_field; /* 0: none */
	int nchildren;
	MsgChild children[3];
};

/* DataFile.base_id and DeletionFile.base_id are both field 7. */
static const MsgKind data_file_kind = {"DataFile", 7, 0, {{0}}};
static const MsgKind deletion_file_kind = {"DeletionFile", 7, 0, {{0}}};
static const MsgKind overlay_kind = {"DataOverlayFile", 0, 1, {{1, &data_file_kind}}};
static const MsgKind fragment_kind = {
	"DataFragment", 0, 3, {{2, &data_file_kind}, {3, &deletion_file_kind}, {11, &overlay_kind}}};
static const MsgKind index_metadata_kind = {"IndexMetadata", 9, 0, {{0}}};
static const MsgKind index_section_kind = {"IndexSection", 0, 1, {{1, &index_metadata_kind}}};

/* What the first pass over the source Manifest found. */
typedef struct ManifestScan
{
	bool has_index_section;
	uint64 index_section;
	bool has_transaction_section;
	uint64 transaction_section;
	bool has_base_paths;
	uint32 max_base_id;
} ManifestScan;

pg_noreturn static void not_a_manifest(const char *why);

static void
not_a_manifest(const char *why)
{
	ln_error(LN_INVALID_TABLE_STATE, "not a Lance manifest: %s", why);
}

static uint64
read_le(const char *p, int nbytes)
{
	uint64 v = 0;

	for (int i = nbytes - 1; i >= 0; i--)
		v = (v << 8) | (unsigned char)p[i];
	return v;
}

static void
put_le(StringInfo out, uint64 v, int nbytes)
{
	char b[8];

	for (int i = 0; i < nbytes; i++)
		b[i] = (char)((v >> (8 * i)) & 0xff);
	appendBinaryStringInfo(out, b, nbytes);
}

/* A varint of at most ten bytes that does not run past the end; false if not. */
static bool
pb_read_varint(PbReader *r, uint64 *out)
{
	uint64 v = 0;

	for (int i = 0; i < PB_MAX_VARINT_LEN; i++)
	{
		unsigned char c;

		if (r->pos >= r->len)
			return false;
		c = (unsigned char)r->buf[r->pos++];
		/* the tenth byte holds only the top bit of 64 */
		if (i == PB_MAX_VARINT_LEN - 1 && c > 1)
			return false;
		v |= (uint64)(c & 0x7f) << (7 * i);
		if ((c & 0x80) == 0)
		{
			*out = v;
			return true;
		}
	}
	return false;
}

static void
pb_reader_init(PbReader *r, const char *buf, size_t len)
{
	r->buf = buf;
	r->len = len;
	r->pos = 0;
}

/*
 * The next field of the message, false at its end.  Each call consumes at
 * least the key's byte, so a loop over a message ends.
 */
static bool
pb_next(PbReader *r, PbField *f, const char *msg)
{
	uint64 key;
	size_t start = r->pos;
	char why[128];

	if (r->pos >= r->len)
		return false;
	if (!pb_read_varint(r, &key) || (key >> 3) == 0 || (key >> 3) > PB_MAX_FIELD_NUMBER)
	{
		snprintf(why, sizeof(why), "a field key of %s is not valid", msg);
		not_a_manifest(why);
	}
	f->number = (uint32)(key >> 3);
	f->wire_type = (int)(key & 7);
	f->value = 0;
	f->data = NULL;
	f->len = 0;
	switch (f->wire_type)
	{
		case WT_VARINT:
			if (!pb_read_varint(r, &f->value))
				goto truncated;
			break;
		case WT_I64:
		case WT_I32:
		{
			int n = f->wire_type == WT_I64 ? 8 : 4;

			if (r->len - r->pos < (size_t)n)
				goto truncated;
			f->value = read_le(r->buf + r->pos, n);
			r->pos += n;
			break;
		}
		case WT_LEN:
		{
			uint64 len;

			if (!pb_read_varint(r, &len) || len > r->len - r->pos)
				goto truncated;
			f->data = r->buf + r->pos;
			f->len = (size_t)len;
			r->pos += (size_t)len;
			break;
		}
		default:
			snprintf(why, sizeof(why), "field %u of %s has unknown wire type %d", f->number, msg,
					 f->wire_type);
			not_a_manifest(why);
	}
	f->start = r->buf + start;
	f->total = r->pos - start;
	return true;

truncated:
	snprintf(why, sizeof(why), "field %u of %s runs past its end", f->number, msg);
	not_a_manifest(why);
}

/* A field Lance declares with one wire type must have it, or it is not Lance's. */
static void
pb_expect(const PbField *f, int wire_type, const char *msg)
{
	if (f->wire_type != wire_type)
	{
		char why[128];

		snprintf(why, sizeof(why), "field %u of %s has wire type %d, not %d", f->number, msg,
				 f->wire_type, wire_type);
		not_a_manifest(why);
	}
}

static void
pb_put_varint(StringInfo out, uint64 v)
{
	char b[PB_MAX_VARINT_LEN];
	int n = 0;

	do
	{
		b[n] = (char)(v & 0x7f);
		v >>= 7;
		if (v != 0)
			b[n] |= (char)0x80;
		n++;
	} while (v != 0);
	appendBinaryStringInfo(out, b, n);
}

static void
pb_put_varint_field(StringInfo out, uint32 number, uint64 v)
{
	pb_put_varint(out, ((uint64)number << 3) | WT_VARINT);
	pb_put_varint(out, v);
}

static void
pb_put_len_field(StringInfo out, uint32 number, const char *data, size_t len)
{
	pb_put_varint(out, ((uint64)number << 3) | WT_LEN);
	pb_put_varint(out, len);
	appendBinaryStringInfo(out, data, len);
}

/*
 * Appends to `out` the payload of a message of kind `kind` read from `data`,
 * with base_id set to `base_id` in every message on the way where it is
 * absent.  A base_id already present names a file that lives elsewhere (a
 * branch of a branch, a shallow clone) and stays as it is; it must name a
 * base path of the source, all of which have ids below the new one, or the
 * new base path would silently take it over.
 */
static void
rewrite_message(const MsgKind *kind, const char *data, size_t len, uint32 base_id, StringInfo out)
{
	PbReader r;
	PbField f;
	bool has_base_id = false;

	pb_reader_init(&r, data, len);
	while (pb_next(&r, &f, kind->name))
	{
		const MsgKind *child = NULL;

		CHECK_FOR_INTERRUPTS();
		if (kind->base_id_field != 0 && f.number == kind->base_id_field)
		{
			pb_expect(&f, WT_VARINT, kind->name);
			if (f.value >= base_id)
			{
				char why[128];

				snprintf(why, sizeof(why), "a %s names base path %llu, which does not exist",
						 kind->name, (unsigned long long)f.value);
				not_a_manifest(why);
			}
			has_base_id = true;
			appendBinaryStringInfo(out, f.start, f.total);
			continue;
		}
		for (int i = 0; i < kind->nchildren; i++)
			if (kind->children[i].field == f.number)
				child = kind->children[i].kind;
		if (child == NULL)
		{
			appendBinaryStringInfo(out, f.start, f.total);
			continue;
		}
		pb_expect(&f, WT_LEN, kind->name);
		{
			StringInfoData sub;

			initStringInfo(&sub);
			rewrite_message(child, f.data, f.len, base_id, &sub);
			pb_put_len_field(out, f.number, sub.data, sub.len);
			pfree(sub.data);
		}
	}
	if (kind->base_id_field != 0 && !has_base_id)
		pb_put_varint_field(out, kind->base_id_field, base_id);
}

/*
 * The first pass over the source Manifest: where its sections are, which
 * base path ids it uses, and that the fields this module relies on have the
 * wire types Lance gives them.
 */
static void
scan_manifest(const char *data, size_t len, ManifestScan *scan)
{
	PbReader r;
	PbField f;

	memset(scan, 0, sizeof(*scan));
	pb_reader_init(&r, data, len);
	while (pb_next(&r, &f, "Manifest"))
	{
		CHECK_FOR_INTERRUPTS();
		switch (f.number)
		{
			case MF_INDEX_SECTION:
				pb_expect(&f, WT_VARINT, "Manifest");
				scan->has_index_section = true;
				scan->index_section = f.value;
				break;
			case MF_TRANSACTION_SECTION:
				pb_expect(&f, WT_VARINT, "Manifest");
				scan->has_transaction_section = true;
				scan->transaction_section = f.value;
				break;
			case MF_VERSION_AUX_DATA:
			case MF_READER_FLAGS:
			case MF_WRITER_FLAGS:
				pb_expect(&f, WT_VARINT, "Manifest");
				break;
			case MF_FRAGMENTS:
			case MF_TIMESTAMP:
			case MF_TAG:
			case MF_TRANSACTION_FILE:
			case MF_BRANCH:
				pb_expect(&f, WT_LEN, "Manifest");
				break;
			case MF_BASE_PATHS:
			{
				PbReader br;
				PbField bf;
				uint64 id = 0;

				pb_expect(&f, WT_LEN, "Manifest");
				pb_reader_init(&br, f.data, f.len);
				while (pb_next(&br, &bf, "BasePath"))
					if (bf.number == BP_ID)
					{
						pb_expect(&bf, WT_VARINT, "BasePath");
						id = bf.value;
					}
				if (id > PG_UINT32_MAX)
					not_a_manifest("a base path id is not a uint32");
				if (!scan->has_base_paths || id > scan->max_base_id)
					scan->max_base_id = (uint32)id;
				scan->has_base_paths = true;
				break;
			}
			default:
				break;
		}
	}
}

/* A section at `offset` with a u32 length prefix must lie wholly before `end`. */
static void
check_section(const char *source, uint64 offset, size_t end, const char *what, size_t *len)
{
	uint64 n;
	char why[128];

	if (end < 4 || offset > end - 4)
	{
		snprintf(why, sizeof(why), "the %s section lies outside the file", what);
		not_a_manifest(why);
	}
	n = read_le(source + offset, 4);
	if (n > end - 4 - offset)
	{
		snprintf(why, sizeof(why), "the %s section runs into the manifest", what);
		not_a_manifest(why);
	}
	*len = (size_t)n;
}

/*
 * google.protobuf.Timestamp of now, as Lance stamps each new manifest, in
 * whole seconds: the nanoseconds' varint would make the size of a branch's
 * first manifest (which the catalog answers) vary from call to call.
 */
static void
put_timestamp(StringInfo out)
{
	StringInfoData ts;
	int64 usecs =
		GetCurrentTimestamp() + (int64)(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
	int64 seconds = usecs / USECS_PER_SEC;

	initStringInfo(&ts);
	/* proto3 leaves out zero scalars, and so does Lance */
	if (seconds != 0)
		pb_put_varint_field(&ts, TS_SECONDS, (uint64)seconds);
	pb_put_len_field(out, MF_TIMESTAMP, ts.data, ts.len);
	pfree(ts.data);
}

/* The base path through which the branch finds the files of its source. */
static void
put_base_path(StringInfo out, uint32 id, const char *parent, const char *parent_uri)
{
	StringInfoData bp;

	initStringInfo(&bp);
	/* id is a plain proto3 uint32: zero is left out, as Lance leaves it out */
	if (id != 0)
		pb_put_varint_field(&bp, BP_ID, id);
	/* name is optional: absent for main */
	if (parent != NULL)
		pb_put_len_field(&bp, BP_NAME, parent, strlen(parent));
	pb_put_varint_field(&bp, BP_IS_DATASET_ROOT, 1);
	pb_put_len_field(&bp, BP_PATH, parent_uri, strlen(parent_uri));
	pb_put_len_field(out, MF_BASE_PATHS, bp.data, bp.len);
	pfree(bp.data);
}

/*
 * The new Manifest: the source's fields in the source's order, with the
 * fragments rewritten, the feature flags gaining FLAG_BASE_PATHS, and the
 * fields that describe the version's commit rather than its contents (tag,
 * transaction, timestamp, section offsets) dropped or replaced; then the new
 * base path, the branch, the index section's new offset and the timestamp.
 * Field order does not matter to a protobuf reader.
 */
static void
build_manifest(const char *data, size_t len, uint32 base_id, size_t cut, bool has_index,
			   uint64 index_offset, const char *branch, const char *parent, const char *parent_uri,
			   StringInfo out)
{
	PbReader r;
	PbField f;
	bool has_reader_flags = false;
	bool has_writer_flags = false;

	pb_reader_init(&r, data, len);
	while (pb_next(&r, &f, "Manifest"))
	{
		CHECK_FOR_INTERRUPTS();
		switch (f.number)
		{
			case MF_FRAGMENTS:
			{
				StringInfoData frag;

				initStringInfo(&frag);
				rewrite_message(&fragment_kind, f.data, f.len, base_id, &frag);
				pb_put_len_field(out, MF_FRAGMENTS, frag.data, frag.len);
				pfree(frag.data);
				break;
			}
			case MF_READER_FLAGS:
			case MF_WRITER_FLAGS:
				if (f.number == MF_READER_FLAGS)
					has_reader_flags = true;
				else
					has_writer_flags = true;
				pb_put_varint_field(out, f.number, f.value | FLAG_BASE_PATHS);
				break;
			case MF_VERSION_AUX_DATA:

				/*
				 * A position in the file: still right if it lies in the bytes
				 * kept as they are; otherwise it would point into what this
				 * module rewrote, and Lance does not carry it from one version
				 * to the next anyway.
				 */
				if (f.value < cut)
					appendBinaryStringInfo(out, f.start, f.total);
				break;
			case MF_INDEX_SECTION:
			case MF_TIMESTAMP:
			case MF_TAG:
			case MF_TRANSACTION_FILE:
			case MF_TRANSACTION_SECTION:
			case MF_BRANCH:
				break;
			default:
				appendBinaryStringInfo(out, f.start, f.total);
				break;
		}
	}
	if (!has_reader_flags)
		pb_put_varint_field(out, MF_READER_FLAGS, FLAG_BASE_PATHS);
	if (!has_writer_flags)
		pb_put_varint_field(out, MF_WRITER_FLAGS, FLAG_BASE_PATHS);
	put_base_path(out, base_id, parent, parent_uri);
	pb_put_len_field(out, MF_BRANCH, branch, strlen(branch));
	if (has_index)
		pb_put_varint_field(out, MF_INDEX_SECTION, index_offset);
	put_timestamp(out);
}

char *
branch_manifest_make(const char *source, size_t source_len, const char *branch, const char *parent,
					 const char *parent_uri, size_t *out_len)
{
	size_t body_end;
	uint64 pos;
	uint64 manifest_len;
	const char *manifest;
	ManifestScan scan;
	uint32 base_id;
	size_t cut;
	size_t index_len = 0;
	size_t transaction_len;
	uint64 index_offset = 0;
	StringInfoData out;
	StringInfoData man;

	if (branch == NULL || branch[0] == '\0' || parent_uri == NULL || parent_uri[0] == '\0')
		ln_error(LN_INVALID_INPUT, "a branch manifest needs a branch name and a parent URI");

	/* the footer, and the Manifest that must end where it begins */
	if (source == NULL || source_len < FOOTER_LEN + 4)
		not_a_manifest("the file is too short");
	if (memcmp(source + source_len - MAGIC_LEN, MAGIC, MAGIC_LEN) != 0)
		not_a_manifest("the file does not end in \"LANC\"");
	body_end = source_len - FOOTER_LEN;
	pos = read_le(source + body_end, 8);
	if (pos > body_end - 4) /* also a negative i64 */
		not_a_manifest("the manifest position lies outside the file");
	manifest_len = read_le(source + pos, 4);
	if (manifest_len != body_end - 4 - pos)
		not_a_manifest("the manifest does not end at the footer");
	manifest = source + pos + 4;

	scan_manifest(manifest, (size_t)manifest_len, &scan);

	/* Lance gives the new base path the id after the highest in use */
	if (scan.has_base_paths && scan.max_base_id == PG_UINT32_MAX)
		not_a_manifest("no base path id is left");
	base_id = scan.has_base_paths ? scan.max_base_id + 1 : 0;

	/* keep what lies before the first section: the schema's dictionaries */
	cut = (size_t)pos;
	if (scan.has_index_section)
	{
		check_section(source, scan.index_section, (size_t)pos, "index", &index_len);
		cut = Min(cut, (size_t)scan.index_section);
	}
	if (scan.has_transaction_section)
	{
		check_section(source, scan.transaction_section, (size_t)pos, "transaction",
					  &transaction_len);
		cut = Min(cut, (size_t)scan.transaction_section);
	}

	initStringInfo(&out);
	appendBinaryStringInfo(&out, source, cut);

	if (scan.has_index_section)
	{
		StringInfoData section;

		initStringInfo(&section);
		rewrite_message(&index_section_kind, source + scan.index_section + 4, index_len, base_id,
						&section);
		index_offset = out.len;
		put_le(&out, section.len, 4);
		appendBinaryStringInfo(&out, section.data, section.len);
		pfree(section.data);
	}

	initStringInfo(&man);
	build_manifest(manifest, (size_t)manifest_len, base_id, cut, scan.has_index_section,
				   index_offset, branch, parent, parent_uri, &man);
	pos = out.len;
	put_le(&out, man.len, 4);
	appendBinaryStringInfo(&out, man.data, man.len);
	pfree(man.data);

	/* the footer: the new position, the source's format version, the magic */
	put_le(&out, pos, 8);
	appendBinaryStringInfo(&out, source + source_len - 8, 8);

	*out_len = out.len;
	return out.data;
}
