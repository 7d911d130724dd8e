// One append of the official client, in a process of its own, for the tests
// that a refused commit must not get through: the client retries a refused
// commit for minutes before it gives up, so the test stops this process
// instead of waiting for it.
//
//   node client-add.mjs <namespace id as JSON> <table> <first row id> <rows>
//
// The API key comes from LANCE_CLIENT_KEY.  Prints "committed <version>", or
// "failed <message>" when the client gives up.
import { connect, itemRows } from "./lib.mjs";

const [nsJson, name, from, n] = process.argv.slice(2);
try {
  const table = await (await connect(process.env.LANCE_CLIENT_KEY)).openTable(name, JSON.parse(nsJson));
  await table.add(itemRows(Number(from), Number(n)));
  console.log(`committed ${await table.version()}`);
} catch (e) {
  console.log(`failed ${String(e?.message ?? e).split("\n")[0]}`);
}
