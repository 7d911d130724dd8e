// A minimal PostgreSQL client over the Unix socket: startup with trust
// authentication and the simple query protocol, nothing else.  Written here
// so that the crash test needs no npm package, and because the test has to
// know exactly when a commit was acknowledged:
//
//   In autocommit, a simple query's statement commits *before* the server
//   sends CommandComplete (PostgreSQL's exec_simple_query runs
//   finish_xact_command() and then EndCommand()); the rows come earlier.
//   query() resolves only at ReadyForQuery after a CommandComplete and no
//   ErrorResponse, so a resolved call is an acknowledged commit.  A socket
//   that closes or fails before that rejects with ConnectionLost: the
//   outcome is unknown.
import net from "node:net";

export class ConnectionLost extends Error {
  constructor(message) {
    super(message);
    this.name = "ConnectionLost";
  }
}

// An ErrorResponse from the server: `code` is the SQLSTATE (LN014, ...).
export class ServerError extends Error {
  constructor(fields) {
    super(fields.M ?? "server error");
    this.name = "ServerError";
    this.code = fields.C;
    this.severity = fields.V ?? fields.S;
    this.detail = fields.D;
  }
}

function cstring(s) {
  return Buffer.concat([Buffer.from(s, "utf8"), Buffer.from([0])]);
}

function parseFields(body) {
  const fields = {};
  let i = 0;
  while (i < body.length && body[i] !== 0) {
    const type = String.fromCharCode(body[i]);
    const end = body.indexOf(0, i + 1);
    fields[type] = body.toString("utf8", i + 1, end);
    i = end + 1;
  }
  return fields;
}

export class Client {
  // opts: { host: socket folder, port, user, database, application_name }
  constructor(opts) {
    this.opts = opts;
    this.sock = null;
    this.buf = Buffer.alloc(0);
    this.pending = null; // { resolve, reject, rows, error, complete }
    this.closed = true;
  }

  connect(timeoutMs = 5000) {
    return new Promise((resolve, reject) => {
      const path = `${this.opts.host}/.s.PGSQL.${this.opts.port}`;
      const sock = net.createConnection({ path });
      this.sock = sock;
      this.closed = false;
      this.buf = Buffer.alloc(0);
      let settled = false;
      const timer = setTimeout(() => fail(new ConnectionLost("connect timeout")), timeoutMs);
      const fail = (err) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.pending = null;
        this.close();
        reject(err);
      };
      // the startup phase is one "query" that ends at ReadyForQuery
      this.pending = {
        rows: [],
        error: null,
        complete: false,
        resolve: () => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve(this);
        },
        reject: fail,
      };
      this.startup = true;
      sock.on("connect", () => {
        const params = Buffer.concat([
          cstring("user"), cstring(this.opts.user),
          cstring("database"), cstring(this.opts.database),
          cstring("application_name"), cstring(this.opts.application_name ?? "crash"),
          Buffer.from([0]),
        ]);
        const head = Buffer.alloc(8);
        head.writeInt32BE(8 + params.length, 0);
        head.writeInt32BE(196608, 4);
        sock.write(Buffer.concat([head, params]));
      });
      sock.on("data", (d) => this.onData(d));
      sock.on("error", (e) => this.onGone(`socket error: ${e.code ?? e.message}`));
      sock.on("close", () => this.onGone("connection closed"));
    });
  }

  onGone(why) {
    this.closed = true;
    const p = this.pending;
    this.pending = null;
    if (p) p.reject(new ConnectionLost(why));
  }

  onData(d) {
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    while (this.buf.length >= 5) {
      const len = this.buf.readInt32BE(1);
      if (this.buf.length < 1 + len) break;
      const type = String.fromCharCode(this.buf[0]);
      const body = this.buf.subarray(5, 1 + len);
      this.buf = this.buf.subarray(1 + len);
      this.onMessage(type, body);
    }
  }

  onMessage(type, body) {
    const p = this.pending;
    switch (type) {
      case "R": {
        const code = body.readInt32BE(0);
        if (code !== 0 && p) {
          p.reject(new ServerError({ C: "28000", M: `authentication method ${code} not supported` }));
          this.close();
        }
        break;
      }
      case "E": {
        const err = new ServerError(parseFields(body));
        if (this.startup && p) {
          // FATAL during startup (e.g. 57P03 "the database system is starting up")
          p.reject(err);
          this.close();
        } else if (p) {
          p.error = err;
        }
        break;
      }
      case "D": {
        if (!p) break;
        const n = body.readInt16BE(0);
        const row = [];
        let i = 2;
        for (let c = 0; c < n; c++) {
          const l = body.readInt32BE(i);
          i += 4;
          if (l < 0) row.push(null);
          else {
            row.push(body.toString("utf8", i, i + l));
            i += l;
          }
        }
        p.rows.push(row);
        break;
      }
      case "C":
        if (p) p.complete = true;
        break;
      case "Z":
        this.startup = false;
        // I idle, T in a transaction block, E in a failed one
        this.txStatus = String.fromCharCode(body[0]);
        if (p) {
          this.pending = null;
          if (p.error) p.reject(p.error);
          else p.resolve(p.rows);
        }
        break;
      default: // S, K, T, N, A, I: not needed here
        break;
    }
  }

  // Run one simple query; resolves with its rows (arrays of text or null).
  query(sql) {
    if (this.closed || !this.sock) return Promise.reject(new ConnectionLost("not connected"));
    if (this.pending) return Promise.reject(new Error("query already in flight"));
    return new Promise((resolve, reject) => {
      this.pending = {
        rows: [],
        error: null,
        complete: false,
        resolve,
        reject,
      };
      const text = cstring(sql);
      const head = Buffer.alloc(5);
      head.write("Q", 0);
      head.writeInt32BE(4 + text.length, 1);
      this.sock.write(Buffer.concat([head, text]));
    });
  }

  close() {
    this.closed = true;
    if (this.sock) {
      this.sock.removeAllListeners("data");
      this.sock.on("error", () => {});
      this.sock.destroy();
    }
  }
}

// A SQL string literal.
export function lit(s) {
  return `'${String(s).replaceAll("'", "''")}'`;
}
