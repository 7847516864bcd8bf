// An MCP client built on the official TypeScript SDK against the gateway
// ("hybridctx mcp --config FILE --listen"): node mcp_gateway_client.mjs URL
// Lists the tools, calls the routed tool go__echo with TEXT (offloaded at
// the gateway's threshold), reads the reference back with read_artifact
// and prints one JSON line of what it saw. HYBRIDCTX_TEST_MCP_SDK names the
// node_modules directory holding the SDK; TEXT is in HYBRIDCTX_TEST_TEXT.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [url] = process.argv.slice(2);
const text = process.env.HYBRIDCTX_TEST_TEXT;
const dir = join(process.env.HYBRIDCTX_TEST_MCP_SDK, "@modelcontextprotocol", "sdk", "dist", "esm", "client");
const { Client } = await import(pathToFileURL(join(dir, "index.js")).href);
const { StreamableHTTPClientTransport } = await import(pathToFileURL(join(dir, "streamableHttp.js")).href);

const client = new Client({ name: "ts-gateway", version: "1" });
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);
const { tools } = await client.listTools();
const res = await client.callTool({ name: "go__echo", arguments: { text } });
const notice = res.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
const ref = (/artifact:\/\/sha256\/[0-9a-f]{64}/.exec(notice) || [""])[0];
const back = ref ? await client.callTool({ name: "read_artifact", arguments: { reference: ref } }) : null;
await transport.terminateSession();
await client.close();
console.log(JSON.stringify({
  tools: tools.map((t) => t.name),
  notice_bytes: Buffer.byteLength(notice),
  reference: ref,
  read_back: back && !back.isError ? back.content[0].text : null,
}));
