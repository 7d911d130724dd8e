// Request generator of the fuzz test: SQL calls of every lance_* function and
// lance_rest calls of every route, built from the spec's request models and
// then mutated (types, sizes, numbers beyond int64, nesting, NUL, lone
// surrogates, percent-encoded invalid UTF-8, odd methods and paths, garbage
// page tokens).  Everything is drawn from one seeded generator, so a seed
// gives the same requests again (apart from what they depend on in the
// catalog's answers, e.g. transaction ids).

// ---------------------------------------------------------------------------
// Random numbers: mulberry32, seeded with a 32-bit integer.
// ---------------------------------------------------------------------------
export class Rng {
  constructor(seed) {
    this.s = seed >>> 0;
  }
  next() {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n) {
    return Math.floor(this.next() * n);
  }
  range(lo, hi) {
    return lo + this.int(hi - lo + 1);
  }
  pick(a) {
    return a[this.int(a.length)];
  }
  chance(p) {
    return this.next() < p;
  }
  hex(n) {
    let s = "";
    for (let i = 0; i < n; i++) s += "0123456789abcdef"[this.int(16)];
    return s;
  }
}

// ---------------------------------------------------------------------------
// JSON with what JSON.stringify cannot write: Raw is verbatim text (numbers
// beyond any binary type, broken fragments), Obj keeps duplicate keys.
// Strings go through JSON.stringify, which writes NUL as \u0000 and a lone
// surrogate as \ud800: exactly the escapes the fuzzer wants to send.
// ---------------------------------------------------------------------------
export class Raw {
  constructor(t) {
    this.t = t;
  }
}
export class Obj {
  constructor(entries) {
    this.e = entries;
  }
}

export function ser(v) {
  if (v instanceof Raw) return v.t;
  if (v instanceof Obj) return "{" + v.e.map(([k, x]) => JSON.stringify(k) + ":" + ser(x)).join(",") + "}";
  if (Array.isArray(v)) return "[" + v.map(ser).join(",") + "]";
  if (v === undefined) return "null";
  if (v !== null && typeof v === "object") {
    return (
      "{" +
      Object.entries(v)
        .filter(([, x]) => x !== undefined)
        .map(([k, x]) => JSON.stringify(k) + ":" + ser(x))
        .join(",") +
      "}"
    );
  }
  return JSON.stringify(v);
}

// Strings that are not valid text for the catalog: NUL and lone surrogates.
export const BAD_STRINGS = ["\u0000", "a\u0000b", "\u0000\u0000", "\ud800", "\udc00", "a\ud800b", "\udfff\ud800", "x\udbff"];
const isBad = (s) => typeof s === "string" && /[\u0000\ud800-\udfff]/.test(s.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ""));

const NUMBERS = [
  "0", "-0", "1", "-1", "2", "3", "7", "100", "1000", "10000", "10001", "2147483647", "2147483648",
  "-2147483648", "-2147483649", "4294967295", "4294967296", "9007199254740993", "9223372036854775806",
  "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
  "18446744073709551615", "18446744073709551616", "99999999999999999999999999999999999999",
  "1e400", "-1e400", "1e-400", "1.5", "0.5", "-0.5", "1.0", "2.0", "1e2", "1E+2", "1e19", "1e-7",
  "0.000000000000000000001", "123456789012345678901234567890.5",
];

export class Gen {
  constructor(rng, env) {
    this.r = rng;
    this.root = env.root;
    this.outside = env.outside;
    this.functions = env.functions; // the lance_* functions found in the database
    this.noargFunctions = env.noargFunctions; // lance_process_drops() and the like
    // a valid API key (of the fuzz's superuser): requests sent with it act as
    // that role; other keys and tokens answer 401
    this.apiKey = env.apiKey ?? `lnk_${"0".repeat(12)}_${"0".repeat(64)}`;
    this.ns = [[]];
    this.tables = [];
    this.txids = [];
    this.tokens = [];
    this.tags = ["v1tag", "t", "nope"];
    this.branches = ["dev", "main", "nope"];
    this.serial = 0;
    this.strings = [
      "", "a", "A", "x", " ", "  x  ", "$", "$$", ".", "..", "...", "/", "a/b", "\\", "%", "%2F", "%2E%2E",
      "%00", "%FF", "+", "a+b", "a b", "\t", "\n", "\r\n", "'", '"', "`", "null", "true", "0", "-1", "main",
      "Main", "MAIN", "ExistOk", "exist_ok", "existok", "Overwrite", "Create", "Skip", "Fail", "Cascade",
      "restrict", "V1", "V2", "v3", "Succeeded", "Queued", "Canceled", "Failed", "Running", "ünï", "日本語",
      "🐘", "e\u0301", "\u200b", "\ufeff", "\u2028", "\u007f", "\u0001", "\u001f", "x".repeat(1024),
      "x".repeat(1025), "é".repeat(512), "é".repeat(513), "x".repeat(5000), "s3://bucket/x.lance",
      "gs://b/x", "az://c/x", "memory://x", "file:///tmp/x", "file://", "file:", "/", "//", "/etc",
      "/tmp", this.root, this.root + "/", this.root + "/..", this.root + "/../outside", this.root + "/a/../../x",
      "file://" + this.root + "/ft.lance", this.outside, this.root + "/lnk/x.lance", "../../etc/passwd",
      "C:\\x", "~", "*", "?", "#", ";", "' OR 1=1 --", "$1", "%s%n%x", "${x}", "{}", "[]", "abc.lock",
      "a..b", "-", "_", "a/", "/a", "a//b", "refs/heads/x", "0123456789abcdef0123456789abcdef",
      "00000000-0000-0000-0000-000000000000", "not-a-uuid",
    ];
  }

  // ---- pools, refreshed from the catalog by the driver ----
  setPools({ namespaces, tables, txids }) {
    if (namespaces.length) this.ns = namespaces;
    this.tables = tables;
    for (const t of txids) if (!this.txids.includes(t)) this.txids.push(t);
    if (this.txids.length > 200) this.txids = this.txids.slice(-200);
  }
  observe(resp) {
    if (!resp || typeof resp !== "object") return;
    if (typeof resp.page_token === "string") {
      this.tokens.push(resp.page_token);
      if (this.tokens.length > 100) this.tokens.shift();
    }
    const tx = resp.transaction_id;
    for (const t of Array.isArray(tx) ? tx : [tx]) if (typeof t === "string") this.txids.push(t);
  }

  // ---- scalar values ----
  num() {
    return new Raw(this.r.pick(NUMBERS));
  }
  str() {
    const r = this.r;
    if (r.chance(0.5)) return r.pick(this.strings);
    if (r.chance(0.3)) return "s" + r.hex(r.range(1, 12));
    if (r.chance(0.3)) return r.pick(this.strings) + r.pick(this.strings);
    // random code points, including astral ones and specials
    let s = "";
    for (let i = r.range(0, 20); i > 0; i--) {
      const c = r.pick([r.range(0x20, 0x7e), r.range(0x80, 0x7ff), r.range(0x800, 0xd7ff), r.range(0xe000, 0xfffc), r.range(0x10000, 0x10ffff)]);
      s += String.fromCodePoint(c);
    }
    return s;
  }
  // A value of any type; deep and wide ones now and then.
  any(depth = 0) {
    const r = this.r;
    switch (r.int(depth > 2 ? 5 : 9)) {
      case 0: return null;
      case 1: return r.chance(0.5);
      case 2: return this.num();
      case 3: case 4: return this.str();
      case 5: return Array.from({ length: r.int(4) }, () => this.any(depth + 1));
      case 6: return Object.fromEntries(Array.from({ length: r.int(4) }, () => [this.str(), this.any(depth + 1)]));
      case 7: return this.deep(r.pick([31, 32, 33, 40, 100, 1000, 5000]));
      default: return r.pick([[], {}, "", 0, new Raw("[[[]]]"), new Raw('{"":{}}')]);
    }
  }
  deep(d) {
    const r = this.r;
    const kind = r.int(3);
    if (kind === 0) return new Raw("[".repeat(d) + "]".repeat(d));
    if (kind === 1) return new Raw('{"a":'.repeat(d) + "1" + "}".repeat(d));
    return new Raw('[{"k":'.repeat(d) + '"v"' + "}]".repeat(d));
  }

  // ---- the catalog's objects ----
  name(bad) {
    const r = this.r;
    if (bad) return r.pick(BAD_STRINGS);
    if (r.chance(0.4)) return "f" + ++this.serial;
    if (r.chance(0.5)) return this.str();
    const pool = r.chance(0.5) ? this.ns.filter((n) => n.length) : this.tables.map((t) => t.id);
    const id = pool.length ? r.pick(pool) : ["x"];
    return id[id.length - 1] ?? "x";
  }
  nsId() {
    const r = this.r;
    const p = r.next();
    if (p < 0.55) return [...r.pick(this.ns)];
    if (p < 0.8) return [...r.pick(this.ns), this.name()];
    if (p < 0.9 && this.tables.length) return [...r.pick(this.tables).id];
    return Array.from({ length: r.int(4) }, () => this.name());
  }
  table() {
    return this.tables.length ? this.r.pick(this.tables) : null;
  }
  tableId() {
    const r = this.r;
    const p = r.next();
    const t = this.table();
    if (p < 0.65 && t) return [...t.id];
    if (p < 0.85) return [...r.pick(this.ns), this.name()];
    if (p < 0.92) return [...r.pick(this.ns)];
    return Array.from({ length: r.int(4) }, () => this.name());
  }
  location() {
    const r = this.r;
    const p = r.next();
    if (p < 0.25) return `s3://fuzz-bucket/${r.hex(6)}.lance`;
    if (p < 0.45) return `${this.root}/reg/${r.hex(6)}.lance`;
    if (p < 0.55) return `file://${this.root}/reg/${r.hex(6)}.lance/`;
    if (p < 0.7 && this.tables.length) return r.pick(this.tables).location; // another table's folder
    if (p < 0.75) return `${this.outside}/${r.hex(4)}.lance`;
    return this.str();
  }
  props(bad) {
    const r = this.r;
    const o = {};
    for (let i = r.int(4); i > 0; i--) o[r.chance(0.3) ? this.str() : "k" + r.int(5)] = r.chance(0.93) ? this.str() : this.any(1);
    if (r.chance(0.1)) o.location = this.location();
    if (bad) {
      if (r.chance(0.5)) o[r.pick(BAD_STRINGS)] = "v";
      else o["k"] = r.pick(BAD_STRINGS);
    }
    return o;
  }
  version() {
    const r = this.r;
    const t = this.table();
    if (r.chance(0.6)) return r.range(0, t && t.maxv ? t.maxv + 2 : 6);
    return this.num();
  }
  token() {
    const r = this.r;
    const p = r.next();
    if (p < 0.3 && this.tokens.length) return r.pick(this.tokens);
    if (p < 0.55 && this.tokens.length) {
      const t = r.pick(this.tokens);
      switch (r.int(5)) {
        case 0: return t.slice(0, r.int(t.length + 1));
        case 1: return t + r.pick(["x", "=", "\u0000", "$", "0", "ÿ"]);
        case 2: return t.split("").reverse().join("");
        case 3: return t.replace(/./, "Z");
        default: return Buffer.from(t).toString("base64");
      }
    }
    if (p < 0.8) return r.pick(["", "0", "-1", "1", "9223372036854775807", "9223372036854775808", "ZZZZ", "%FF", "==", "eyJ4IjoxfQ==", "\u0000", "\ud800", "x".repeat(10000), "null", "[]", "{}", "a$b", "ns1$t1"]);
    return this.any(1);
  }
  limit() {
    const r = this.r;
    return r.chance(0.5) ? r.pick([0, 1, 2, 3, 5, 1000, 10000, 10001, -1]) : r.chance(0.7) ? this.num() : this.any(1);
  }
  enumOf(values) {
    const r = this.r;
    if (r.chance(0.7)) {
      const v = r.pick(values);
      return r.pick([v, v.toLowerCase(), v.toUpperCase(), v.replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase()]);
    }
    return r.chance(0.7) ? this.str() : this.any(1);
  }
  maybe(p, f) {
    return this.r.chance(p) ? f() : undefined;
  }

  // ---- request models: [object, fields where a bad string was put] ----
  // `bad` asks for a NUL or lone surrogate in one field that names or
  // stores something (id, name, location, tag, properties); the returned
  // `badField` says where, for the check that such requests answer code 13.
  request(op, bad) {
    const r = this.r;
    const g = this;
    let badField = null;
    const idOf = (kind) => (kind === "ns" ? g.nsId() : g.tableId());
    const common = (o) => {
      if (r.chance(0.1)) o.context = r.chance(0.8) ? g.props(false) : g.any(1);
      if (r.chance(0.05)) o.identity = r.chance(0.7) ? { api_key: g.str(), auth_token: g.str() } : g.any(1);
      return o;
    };
    const ver = () => {
      const t = g.table();
      const version = t && r.chance(0.7) ? (t.maxv ?? 0) + 1 + r.int(2) : g.version();
      const scheme = g.maybe(0.3, () => g.enumOf(["V1", "V2"]));
      return {
      id: t && r.chance(0.8) ? [...t.id] : g.tableId(), version, manifest_path: g.manifestPath(t, version, scheme), naming_scheme: scheme,
      manifest_size: g.maybe(0.3, () => (r.chance(0.5) ? r.int(5000) : g.num())),
      e_tag: g.maybe(0.2, () => g.str()), metadata: g.maybe(0.2, () => g.props(false)),
      branch: g.maybe(0.15, () => r.pick([...g.branches, g.str()])),
      };
    };
    const ranges = () => Array.from({ length: r.int(4) }, () => (r.chance(0.85) ? { start_version: r.chance(0.7) ? r.range(0, 6) : g.num(), end_version: r.chance(0.7) ? r.range(-1, 8) : g.num() } : g.any(1)));
    const b = {
      create_namespace: () => ({ id: idOf("ns"), mode: g.maybe(0.4, () => g.enumOf(["Create", "ExistOk", "Overwrite"])), properties: g.maybe(0.5, () => g.props(false)) }),
      list_namespaces: () => ({ id: idOf("ns"), page_token: g.maybe(0.4, () => g.token()), limit: g.maybe(0.6, () => g.limit()) }),
      describe_namespace: () => ({ id: idOf("ns") }),
      drop_namespace: () => ({ id: idOf("ns"), mode: g.maybe(0.4, () => g.enumOf(["Fail", "Skip"])), behavior: g.maybe(0.3, () => g.enumOf(["Restrict", "Cascade"])) }),
      namespace_exists: () => ({ id: idOf("ns") }),
      list_tables: () => ({ id: idOf("ns"), page_token: g.maybe(0.4, () => g.token()), limit: g.maybe(0.6, () => g.limit()), include_declared: g.maybe(0.3, () => (r.chance(0.8) ? r.chance(0.5) : g.any(1))) }),
      list_all_tables: () => ({ page_token: g.maybe(0.4, () => g.token()), limit: g.maybe(0.6, () => g.limit()), delimiter: g.maybe(0.4, () => r.pick([".", "$", "", "::", "x".repeat(2000), g.str()])), include_declared: g.maybe(0.3, () => r.chance(0.5)) }),
      declare_table: () => ({ id: idOf("t"), location: g.maybe(0.4, () => g.location()), properties: g.maybe(0.4, () => g.props(false)), vend_credentials: g.maybe(0.1, () => g.any(1)) }),
      register_table: () => ({ id: idOf("t"), location: g.maybe(0.9, () => g.location()), mode: g.maybe(0.4, () => g.enumOf(["Create", "Overwrite"])), properties: g.maybe(0.4, () => g.props(false)) }),
      describe_table: () => ({ id: idOf("t"), version: g.maybe(0.3, () => g.version()), tag: g.maybe(0.15, () => r.pick(g.tags)), branch: g.maybe(0.15, () => r.pick(g.branches)), with_table_uri: g.maybe(0.3, () => r.chance(0.5)), load_detailed_metadata: g.maybe(0.3, () => r.chance(0.5)), check_declared: g.maybe(0.3, () => r.chance(0.5)), vend_credentials: g.maybe(0.1, () => r.chance(0.5)) }),
      table_exists: () => ({ id: idOf("t"), version: g.maybe(0.3, () => g.version()) }),
      deregister_table: () => ({ id: idOf("t") }),
      rename_table: () => ({ id: idOf("t"), new_table_name: g.maybe(0.9, () => g.name()), new_namespace_id: g.maybe(0.5, () => g.nsId()) }),
      drop_table: () => ({ id: idOf("t") }),
      list_table_versions: () => ({ id: idOf("t"), page_token: g.maybe(0.4, () => g.token()), limit: g.maybe(0.6, () => g.limit()), descending: g.maybe(0.4, () => r.chance(0.5)), branch: g.maybe(0.2, () => r.pick(g.branches)) }),
      create_table_version: () => ver(),
      describe_table_version: () => ({ id: idOf("t"), version: g.maybe(0.6, () => g.version()), branch: g.maybe(0.2, () => r.pick(g.branches)) }),
      batch_delete_table_versions: () => ({ id: idOf("t"), ranges: g.maybe(0.9, ranges), branch: g.maybe(0.2, () => r.pick(g.branches)) }),
      batch_create_table_versions: () => ({ entries: Array.from({ length: r.chance(0.05) ? r.pick([100, 1001]) : r.int(5) }, () => (r.chance(0.9) ? ver() : g.any(1))) }),
      batch_commit_tables: () => ({
        operations: Array.from({ length: r.int(5) }, () => {
          switch (r.int(5)) {
            case 0: return { declare_table: b.declare_table() };
            case 1: return { create_table_version: ver() };
            case 2: return { delete_table_versions: b.batch_delete_table_versions() };
            case 3: return { deregister_table: b.deregister_table() };
            default: return r.chance(0.5) ? { [g.str()]: g.any(1) } : g.any(1);
          }
        }),
      }),
      list_table_tags: () => ({ id: idOf("t"), page_token: g.maybe(0.4, () => g.token()), limit: g.maybe(0.6, () => g.limit()) }),
      get_table_tag_version: () => ({ id: idOf("t"), tag: g.maybe(0.9, () => r.pick([...g.tags, g.str()])) }),
      create_table_tag: () => ({ id: idOf("t"), tag: g.maybe(0.9, () => (r.chance(0.5) ? "tag" + r.int(20) : g.str())), version: g.maybe(0.9, () => g.version()), branch: g.maybe(0.15, () => r.pick(g.branches)) }),
      delete_table_tag: () => ({ id: idOf("t"), tag: g.maybe(0.9, () => (r.chance(0.6) ? "tag" + r.int(20) : g.str())) }),
      update_table_tag: () => ({ id: idOf("t"), tag: g.maybe(0.9, () => (r.chance(0.6) ? "tag" + r.int(20) : g.str())), version: g.maybe(0.9, () => g.version()), branch: g.maybe(0.15, () => r.pick(g.branches)) }),
      list_table_branches: () => ({ id: idOf("t"), page_token: g.maybe(0.4, () => g.token()), limit: g.maybe(0.6, () => g.limit()) }),
      create_table_branch: () => ({ id: idOf("t"), name: g.maybe(0.9, () => (r.chance(0.5) ? "br" + r.int(10) : g.str())), from_branch: g.maybe(0.3, () => r.pick(g.branches)), from_version: g.maybe(0.4, () => g.version()) }),
      delete_table_branch: () => ({ id: idOf("t"), name: g.maybe(0.9, () => (r.chance(0.6) ? "br" + r.int(10) : g.str())) }),
      describe_transaction: () => ({ id: g.txId() }),
      alter_transaction: () => ({
        id: g.txId(),
        actions: Array.from({ length: r.int(4) }, () => {
          switch (r.int(4)) {
            case 0: return { setStatusAction: { status: g.enumOf(["Queued", "Running", "Succeeded", "Failed", "Canceled"]) } };
            case 1: return { setPropertyAction: { key: r.chance(0.5) ? "k" + r.int(3) : g.str(), value: g.maybe(0.9, () => g.str()), mode: g.maybe(0.5, () => g.enumOf(["Overwrite", "Fail", "Skip"])) } };
            case 2: return { unsetPropertyAction: { key: r.chance(0.5) ? "k" + r.int(3) : g.str(), mode: g.maybe(0.5, () => g.enumOf(["Skip", "Fail"])) } };
            default: return g.any(1);
          }
        }),
      }),
    };
    const make = b[op] ?? (() => ({ id: idOf("t"), version: g.maybe(0.3, () => g.version()), branch: g.maybe(0.2, () => g.str()) }));
    const o = common(make());
    // the seed of a bad string: one field that names or stores something
    if (bad) {
      const slots = [];
      if (Array.isArray(o.id) && !/transaction/.test(op)) slots.push("id");
      for (const f of ["location", "new_table_name", "tag", "name"]) if (f in o && o[f] !== undefined) slots.push(f);
      if (/create_namespace|declare_table|register_table/.test(op)) slots.push("properties");
      if ("new_namespace_id" in o && o.new_namespace_id !== undefined) slots.push("new_namespace_id");
      if (slots.length) {
        badField = r.pick(slots);
        if (badField === "id" || badField === "new_namespace_id") {
          const id = Array.isArray(o[badField]) ? o[badField] : [];
          if (id.length && r.chance(0.7)) id[r.int(id.length)] = r.pick(BAD_STRINGS);
          else id.push(r.pick(BAD_STRINGS));
          o[badField] = id;
        } else if (badField === "properties") o.properties = g.props(true);
        else o[badField] = r.pick(BAD_STRINGS);
      }
    }
    return { obj: o, badField };
  }
  txId() {
    const r = this.r;
    if (r.chance(0.7) && this.txids.length) return [r.pick(this.txids)];
    return r.pick([[], ["00000000-0000-0000-0000-000000000000"], ["not-a-uuid"], [this.str()], ["a", "b"], [`${r.hex(8)}-${r.hex(4)}-4${r.hex(3)}-8${r.hex(3)}-${r.hex(12)}`], this.any(1)]);
  }
  manifestPath(t, version, scheme) {
    const r = this.r;
    if (t && t.managed && r.chance(0.8)) {
      const dir = t.path + "/_versions";
      const p = r.next();
      if (p < 0.7) {
        // a staging file the driver writes before the request, named as
        // Lance names it: <final name>-<uuid>
        const v = typeof version === "number" && r.chance(0.9) ? version : r.range(0, (t.maxv ?? 0) + 3);
        const v1 = typeof scheme === "string" && /^v1$/i.test(scheme);
        const f = `${dir}/${v1 ? v : 18446744073709551615n - BigInt(v)}.manifest-${r.hex(8)}`;
        this.stage.push(f);
        return r.chance(0.8) ? f.slice(1) : f;
      }
      return r.pick([`${dir}/missing.manifest-x`, `${dir}/../x.manifest-y`, `${dir}/./1.manifest-z`, `${t.path}/1.manifest`, `${dir}`, `${dir}/`, `${this.outside}/1.manifest-x`, `file://${dir}/1.manifest-x`, `${dir}/sub/1.manifest-x`, `${dir}/\u0000`]).replace(/^\//, r.chance(0.8) ? "" : "/");
    }
    return r.chance(0.6) ? `fuzz-bucket/${r.hex(4)}.lance/_versions/${r.int(9)}.manifest-${r.hex(4)}` : this.str();
  }

  // ---- whole requests ----
  // A request is {kind, ...}: kind sql (fn, body), rest (method, path,
  // query, body, headers), changes, noarg, keyfn (fn, a), internal.  `stage` lists staging
  // manifests the driver writes first; `badField` marks a bad string.
  next() {
    this.stage = [];
    const r = this.r;
    const p = r.next();
    let q;
    if (p < 0.47) q = this.sqlRequest();
    else if (p < 0.97) q = this.restRequest();
    else if (p < 0.985) q = this.changesRequest();
    else if (p < 0.988) q = { kind: "noarg", fn: r.pick(this.noargFunctions) };
    else if (p < 0.99) q = this.keyRequest();
    else q = this.internalRequest();
    q.stage = this.stage;
    return q;
  }

  body(op, bad) {
    const r = this.r;
    const p = r.next();
    if (p < 0.04) return { text: r.pick(["null", "[]", "1", '"x"', "true", "false", "{}", "", " ", "nul", "{", "}", "{}}", "{} {}", "[1,", '{"id":', "\ufeff{}", "{'id':1}", '{"id":["a"],}', "NaN", "Infinity", "-", "1e400", "/* */{}"]), badField: null };
    if (p < 0.07) return { text: ser(this.deep(r.pick([31, 32, 33, 34, 64, 1000, 10000]))), badField: null };
    const { obj, badField } = this.request(op, bad);
    let o = obj;
    // mutations that keep it an object
    const muts = r.chance(0.75) ? 0 : r.range(1, 3);
    for (let i = 0; i < muts; i++) {
      const keys = Object.keys(o);
      switch (r.int(7)) {
        case 0: if (keys.length) o[r.pick(keys)] = this.any(); break;
        case 1: if (keys.length) delete o[r.pick(keys)]; break;
        case 2: o[this.str()] = this.any(); break;
        case 3: if (keys.length) o[r.pick(keys)] = this.deep(r.pick([31, 32, 33, 40, 200])); break;
        case 4: if (keys.length) o[r.pick(keys)] = this.num(); break;
        case 5: if (keys.length) o[r.pick(keys)] = r.pick(BAD_STRINGS); break;
        default: o = new Obj([...Object.entries(o), ...keys.slice(0, 1).map((k) => [k, this.any(1)])]); i = muts; // duplicate key
      }
    }
    return { text: ser(o), badField: muts ? null : badField, obj: muts ? null : obj };
  }

  // lance_create_api_key(role) and lance_revoke_api_key(id or key): never the
  // id of the key the requests send (12 random hex digits do not meet it)
  keyRequest() {
    const r = this.r;
    if (r.chance(0.5))
      return { kind: "keyfn", fn: "lance_create_api_key", a: r.pick(["postgres", "lance_admin", "pg_monitor", "nobody", "", "PUBLIC", "x".repeat(100), this.str()]) };
    const hex = (n) => Array.from({ length: n }, () => "0123456789abcdef"[r.int(16)]).join("");
    return { kind: "keyfn", fn: "lance_revoke_api_key", a: r.pick([`lnk_${hex(12)}`, `lnk_${hex(12)}_${hex(64)}`, "lnk_", "lnk_XYZ", "LNK_" + hex(12), "", this.str()]) };
  }

  sqlRequest() {
    const r = this.r;
    const fn = r.chance(0.85) ? r.pick(this.functions.filter((f) => CATALOG_OPS.has(f.replace(/^lance_/, "")))) : r.pick(this.functions);
    const op = fn.replace(/^lance_/, "");
    if (r.chance(0.02)) return { kind: "sql", fn, body: null };
    // SQL takes jsonb: NUL and lone surrogates never get past PostgreSQL's
    // input (FZ001), so bad strings are rarer here than over REST.
    const { text, badField } = this.body(op, r.chance(0.03));
    return { kind: "sql", fn, body: text, badField };
  }

  changesRequest() {
    const r = this.r;
    // a very negative `after` makes a gap that takes ages to check: rare
    const n = () => (r.chance(0.95) ? r.pick(["0", "1", "-1", "5", "1000", "2147483647", "9223372036854775806", "9223372036854775807", "9223372036854775808", "1.5", "", "x", null]) : r.pick(["-2147483648", "-9223372036854775808"]));
    return { kind: "changes", nargs: r.int(3), after: n(), max: n() };
  }

  internalRequest() {
    const r = this.r;
    if (r.chance(0.5)) return { kind: "internal", fn: "local_path", a: r.chance(0.8) ? this.location() : this.str(), b: null };
    const n = () => (r.chance(0.9) ? r.pick(["0", "1", "-1", "100", "9223372036854775807", null]) : "-9223372036854775808");
    // the administrator's reconciliation of cleaned-up versions: any table
    // id to start after, any count of tables (bounded or refused)
    if (r.chance(0.3))
      return { kind: "internal", fn: "reconcile_versions", a: n(), b: r.pick(["0", "1", "-1", "100", "2147483647", "-2147483648", null]) };
    return { kind: "internal", fn: "change_in_flight", a: n(), b: n() };
  }

  // ---- REST ----
  pathId(id, delim) {
    const r = this.r;
    if (!id.length && r.chance(0.7)) return pct(delim);
    const enc = (s) => {
      if (r.chance(0.15) && !isBad(s)) return s.replace(/ /g, "+");
      if (r.chance(0.05) && !isBad(s)) return s; // raw
      return pct(s);
    };
    return id.map(enc).join(pct(delim));
  }
  restRequest() {
    const r = this.r;
    const route = r.chance(0.85) ? r.pick(ROUTES.filter((x) => CATALOG_OPS.has(x.op))) : r.pick(ROUTES);
    let method = route.get ? "GET" : "POST";
    if (r.chance(0.08)) method = r.pick(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "", "post", "Get", "POST ", " POST", "GET\r\n", "CONNECT", "TRACE", "POST\tGET", "X".repeat(5000), "ΠΟΣΤ", null]);
    let delim = "$";
    const query = [];
    if (r.chance(0.15)) {
      delim = r.pick([".", "::", "/", "%", "+", "$", "", "\u00ff", "😀", "ab"]);
      query.push("delimiter=" + pct(delim));
      if (delim === "") delim = "$";
    }
    let badField = null;
    let idPart = null;
    const op = route.op;
    // body
    let body = null;
    let bodyBad = null;
    let bodyObj = null;
    if (r.chance(0.9)) {
      const b = this.body(op ?? "describe_table", r.chance(0.12));
      body = b.text;
      bodyBad = b.badField;
      bodyObj = b.obj;
    }
    if (route.path.includes("{id}")) {
      const p = r.next();
      let id;
      if (bodyObj && Array.isArray(bodyObj.id) && r.chance(0.9)) {
        // the path carries the body's id; the body keeps it now and then (a
        // different one is 400)
        id = bodyObj.id;
        if (r.chance(0.85)) {
          delete bodyObj.id;
          body = ser(bodyObj);
          if (bodyBad === "id") {
            bodyBad = null;
            if (id.some(isBad)) badField = "path";
          }
        }
      } else if (route.path.startsWith("/v1/transaction")) id = this.txId();
      else if (bodyObj && "id" in bodyObj && r.chance(0.85)) {
        delete bodyObj.id;
        body = ser(bodyObj);
        if (bodyBad === "id") bodyBad = null;
        id = /namespace/.test(route.path) ? this.nsId() : this.tableId();
      }
      else id = /namespace/.test(route.path) ? this.nsId() : this.tableId();
      if (!Array.isArray(id)) id = [String(id)];
      id = id.map((x) => (typeof x === "string" ? x : ser(x)));
      idPart = this.pathId(id, delim);
      if (id.some(isBad) && route.kind !== "data") badField = "path";
      if (p < 0.1 && route.kind !== "data") {
        // percent-encoded invalid UTF-8 or NUL in the id
        const junk = r.pick(["%FF%FE", "%FF", "%C0%AF", "%ED%A0%80", "%80", "%F4%90%80%80", "%E2%82", "%00", "a%00b", "%C3"]);
        idPart = r.chance(0.5) ? junk : idPart + pct(delim) + junk;
        badField = "path";
      } else if (p < 0.16) {
        if (badField === "path") badField = null;
        idPart = r.pick(["", "%", "%%", "%G1", "%2", "%2F", "..", ".", "%2E%2E", "a/b", "x".repeat(3000), "$$$", "%24", "+", "%20", "a?b", "#", idPart + "/extra"]);
      }
    }
    let path = route.path.replace("{id}", idPart ?? "").replace("{index_name}", r.chance(0.5) ? "idx" : pct(this.str()));
    let replaced = false;
    if (r.chance(0.07)) {
      replaced = true;
      path = r.pick([
        "", "/", "/v1", "/v1/", "/v1/namespace", "/v1/namespace/", "/v1/table/", "//v1/table", "/v1/table//describe",
        "/v2/namespace/a/create", "v1/namespace/a/create", path + "/", path + "//", path + "?x=1", path + "/x",
        path.toUpperCase(), path + "#frag", "/v1/namespace/a/create/extra", "/" + "a/".repeat(2000), "/%FF/%00",
        "/v1/table/version/batch-create/", "/v1/table/batch-commit?x", "/v1/table/%2F/describe", path.replace(/\//g, "\\"),
      ]);
    }
    // query parameters that are fields of the request
    const qv = () => pct(r.chance(0.7) ? String(r.pick(["0", "1", "-1", "10", "true", "false", "True", "yes", "", "9223372036854775808", "1e400", "x", "null", "main", "dev"])) : String(this.str()));
    for (const k of ["limit", "page_token", "descending", "include_declared", "with_table_uri", "check_declared", "branch", "version", "load_detailed_metadata", "tag", "mode"]) {
      if (r.chance(0.05)) query.push(k + "=" + (k === "page_token" ? pct(String(this.token())) : qv()));
    }
    if (r.chance(0.05)) {
      const junk = r.pick(["page_token=%FF%FE", "branch=%FF", "limit=%00", "%FF=1", "a=%ED%A0%80", "tag=%C3", "&&&", "=", "==", "a", "limit=1&limit=2", "page_token", "x=" + "y".repeat(5000), "%", "%G", "limit=%2B1", "+=+"]);
      query.push(junk);
      if (/%(FF|ED|C3|00)/.test(junk) && /page_token|branch|tag/.test(junk)) badField = badField ?? "query";
    }
    let queryText = query.length ? query.join("&") : r.chance(0.7) ? null : "";
    badField = replaced ? null : badField ?? bodyBad;
    // headers
    let headers = null;
    if (r.chance(0.4)) {
      const h = {};
      for (let i = r.int(4); i > 0; i--) {
        const k = r.pick(["x-api-key", "authorization", "Authorization", "x-request-id", "x-lance-" + r.int(3), "content-type", "", "h".repeat(300), this.str()]);
        h[k] = r.chance(0.7) ? r.pick(["Bearer tok", "Bearer ", "bearer x", "Basic x", "v", "", this.str(), this.apiKey, `Bearer ${this.apiKey}`, `bearer  ${this.apiKey}`]) : this.any(1);
      }
      headers = ser(h);
      if (r.chance(0.1)) headers = ser(r.pick([[], "x", 1, null, { a: this.deep(r.pick([31, 32, 33, 40])) }, this.deep(40)]));
    }
    return { kind: "rest", route: route.path, op, method, path, query: queryText, body, headers, badField, dataRoute: route.kind === "data" };
  }
}

// The operations the catalog serves (the rest answer code 0).
export const CATALOG_OPS = new Set([
  "create_namespace", "list_namespaces", "describe_namespace", "drop_namespace", "namespace_exists",
  "list_tables", "list_all_tables", "declare_table", "register_table", "describe_table", "table_exists",
  "deregister_table", "rename_table", "drop_table", "list_table_versions", "create_table_version",
  "describe_table_version", "batch_delete_table_versions", "batch_create_table_versions",
  "batch_commit_tables", "list_table_tags", "get_table_tag_version", "create_table_tag",
  "delete_table_tag", "update_table_tag", "list_table_branches", "create_table_branch",
  "delete_table_branch", "describe_transaction", "alter_transaction",
]);

// lance_rest's routes (the spec's paths) and the operation each calls.
const R = (path, op, extra = {}) => ({ path, op, ...extra });
export const ROUTES = [
  R("/v1/namespace/{id}/create", "create_namespace"),
  R("/v1/namespace/{id}/list", "list_namespaces", { get: true }),
  R("/v1/namespace/{id}/describe", "describe_namespace"),
  R("/v1/namespace/{id}/drop", "drop_namespace"),
  R("/v1/namespace/{id}/exists", "namespace_exists"),
  R("/v1/namespace/{id}/table/list", "list_tables", { get: true }),
  R("/v1/table", "list_all_tables", { get: true }),
  R("/v1/table/{id}/register", "register_table"),
  R("/v1/table/{id}/describe", "describe_table"),
  R("/v1/table/{id}/exists", "table_exists"),
  R("/v1/table/{id}/drop", "drop_table"),
  R("/v1/table/{id}/deregister", "deregister_table"),
  R("/v1/table/{id}/restore", "restore_table"),
  R("/v1/table/{id}/rename", "rename_table"),
  R("/v1/table/{id}/schema_metadata/update", "update_table_schema_metadata"),
  R("/v1/table/{id}/version/list", "list_table_versions"),
  R("/v1/table/{id}/version/create", "create_table_version"),
  R("/v1/table/{id}/version/describe", "describe_table_version"),
  R("/v1/table/{id}/version/delete", "batch_delete_table_versions"),
  R("/v1/table/version/batch-create", "batch_create_table_versions"),
  R("/v1/table/batch-commit", "batch_commit_tables"),
  R("/v1/table/{id}/alter_columns", "alter_table_alter_columns"),
  R("/v1/table/{id}/update_field_metadata", "update_field_metadata"),
  R("/v1/table/{id}/drop_columns", "alter_table_drop_columns"),
  R("/v1/table/{id}/stats", null, { kind: "data" }),
  R("/v1/table/{id}/insert", null, { kind: "data" }),
  R("/v1/table/{id}/merge_insert", null, { kind: "data" }),
  R("/v1/table/{id}/update", null, { kind: "data" }),
  R("/v1/table/{id}/delete", null, { kind: "data" }),
  R("/v1/table/{id}/query", null, { kind: "data" }),
  R("/v1/table/{id}/count_rows", null, { kind: "data" }),
  R("/v1/table/{id}/create", null, { kind: "data" }),
  R("/v1/table/{id}/explain_plan", null, { kind: "data" }),
  R("/v1/table/{id}/analyze_plan", null, { kind: "data" }),
  R("/v1/table/{id}/add_columns", null, { kind: "data" }),
  R("/v1/table/{id}/backfill_column", null, { kind: "data" }),
  R("/v1/materialized_view/{id}/refresh", null, { kind: "data" }),
  R("/v1/materialized_view/{id}/create", null, { kind: "data" }),
  R("/v1/table/{id}/create_index", null, { kind: "data" }),
  R("/v1/table/{id}/create_scalar_index", null, { kind: "data" }),
  R("/v1/table/{id}/index/list", null, { kind: "data" }),
  R("/v1/table/{id}/index/{index_name}/stats", null, { kind: "data" }),
  R("/v1/table/{id}/index/{index_name}/drop", null, { kind: "data" }),
  R("/v1/table/{id}/tags/list", "list_table_tags"),
  R("/v1/table/{id}/tags/version", "get_table_tag_version"),
  R("/v1/table/{id}/declare", "declare_table"),
  R("/v1/table/{id}/tags/create", "create_table_tag"),
  R("/v1/table/{id}/tags/delete", "delete_table_tag"),
  R("/v1/table/{id}/tags/update", "update_table_tag"),
  R("/v1/table/{id}/branches/list", "list_table_branches"),
  R("/v1/table/{id}/branches/create", "create_table_branch"),
  R("/v1/table/{id}/branches/delete", "delete_table_branch"),
  R("/v1/transaction/{id}/describe", "describe_transaction"),
  R("/v1/transaction/{id}/alter", "alter_transaction"),
];

export { isBad };

// Percent-encode the UTF-8 of a string; a lone surrogate becomes its 3-byte
// CESU-8 form (%ED%A0%80), which is not UTF-8: how a client would send it.
export function pct(s) {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      }
    }
    if (/[A-Za-z0-9\-_.~]/.test(String.fromCharCode(c)) && c < 0x80) {
      out += String.fromCharCode(c);
      continue;
    }
    const bytes = c < 0x80 ? [c] : c < 0x800 ? [0xc0 | (c >> 6), 0x80 | (c & 63)] : c < 0x10000 ? [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63)] : [0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63)];
    for (const b of bytes) out += "%" + b.toString(16).toUpperCase().padStart(2, "0");
  }
  return out;
}
