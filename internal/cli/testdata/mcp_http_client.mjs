// An MCP client built on the official TypeScript SDK, as IDE agents use:
// node mcp_http_client.mjs URL SIZE
// Opens two sessions with "hybridctx mcp --listen" at URL, has the first
// call mcptestserver's cat tool for SIZE bytes, pages the stored result back
// with read_artifact in 64 KiB pages, has the second try to read the same
// reference, ends both sessions (DELETE) and prints one JSON line of what it
// saw. HYBRIDCTX_TEST_MCP_SDK names the node_modules directory holding the
// SDK.
import { createHash } from "node:crypto";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [url, size] = process.argv.slice(2);
const dir = join(process.env.HYBRIDCTX_TEST_MCP_SDK, "@modelcontextprotocol", "sdk", "dist", "esm", "client");
const { Client } = await import(pathToFileURL(join(dir, "index.js")).href);
const { StreamableHTTPClientTransport } = await import(pathToFileURL(join(dir, "streamableHttp.js")).href);

async function connect(name) {
  const client = new Client({ name, version: "1" });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  return { client, transport };
}

const a = await connect("ts-a");
const b = await connect("ts-b");
const res = await a.client.callTool({ name: "cat", arguments: { size: Number(size) } });
const link = res.content.find((c) => c.type === "resource_link");
if (!link) throw new Error("no resource_link in " + JSON.stringify(res).slice(0, 300));
const hash = createHash("sha256");
let total = 0;
let pages = 0;
for (let off = 0; ; off += 65536) {
  const page = await a.client.callTool({ name: "read_artifact", arguments: { reference: link.uri, offset: off, length: 65536 } });
  if (page.isError) throw new Error("page at " + off + ": " + JSON.stringify(page));
  const buf = Buffer.from(page.content[0].text, "utf8");
  hash.update(buf);
  total += buf.length;
  pages++;
  if (buf.length < 65536) break;
}
const other = await b.client.callTool({ name: "read_artifact", arguments: { reference: link.uri } });
const ids = [a.transport.sessionId, b.transport.sessionId];
await a.transport.terminateSession();
await b.transport.terminateSession();
await a.client.close();
await b.client.close();
console.log(JSON.stringify({
  result_bytes: Buffer.byteLength(JSON.stringify(res)),
  size: link.size,
  sha256: hash.digest("hex"),
  total,
  pages,
  other_is_error: Boolean(other.isError),
  session_ids_differ: Boolean(ids[0] && ids[1] && ids[0] !== ids[1]),
}));
