// An MCP client built on the official TypeScript SDK that never ends its
// sessions: node mcp_http_evict.mjs URL N
// Opens session A with "hybridctx mcp --listen" at URL and calls echo, then
// opens N more sessions (the proxy's --max-sessions is below N, so A is
// evicted), has A call again (the proxy answers 404), and re-initializes A
// with a new transport, as the MCP spec asks of a client whose session is
// gone. Prints one JSON line of what it saw. HYBRIDCTX_TEST_MCP_SDK names
// the node_modules directory holding the SDK.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [url, n] = process.argv.slice(2);
const dir = join(process.env.HYBRIDCTX_TEST_MCP_SDK, "@modelcontextprotocol", "sdk", "dist", "esm", "client");
const { Client } = await import(pathToFileURL(join(dir, "index.js")).href);
const { StreamableHTTPClientTransport } = await import(pathToFileURL(join(dir, "streamableHttp.js")).href);

async function connect(name) {
  const client = new Client({ name, version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

const echo = async (client, text) => (await client.callTool({ name: "echo", arguments: { text } })).content[0].text;

let a = await connect("ts-a");
const first = await echo(a, "before");
const others = [];
for (let i = 0; i < Number(n); i++) {
  const c = await connect("ts-" + i);
  await echo(c, "other");
  others.push(c);
}
let evictedStatus = 0;
try {
  await echo(a, "evicted?");
} catch (e) {
  evictedStatus = e.code ?? -1;
}
// The session is gone: start a new one.
a = await connect("ts-a-again");
const again = await echo(a, "after");
console.log(JSON.stringify({ first, evicted_status: evictedStatus, again }));
process.exit(0);
