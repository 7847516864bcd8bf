// Closes a stdio "hybridctx mcp" the way the official TypeScript SDK's
// StdioClientTransport does (stdin closed, SIGTERM after 2 s, SIGKILL after
// 2 s more): node mcp_stdio_close.mjs HYBRIDCTX ARGS...
// Connects, calls echo, closes, and prints one JSON line: the proxy's pid,
// how it ended (exit code, or the signal the SDK had to send) and how long
// close took. HYBRIDCTX_TEST_MCP_SDK names the node_modules directory
// holding the SDK.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [command, ...args] = process.argv.slice(2);
const dir = join(process.env.HYBRIDCTX_TEST_MCP_SDK, "@modelcontextprotocol", "sdk", "dist", "esm", "client");
const { Client } = await import(pathToFileURL(join(dir, "index.js")).href);
const { StdioClientTransport } = await import(pathToFileURL(join(dir, "stdio.js")).href);

const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "ignore" });
const client = new Client({ name: "ts-stdio", version: "1" });
await client.connect(transport);
const res = await client.callTool({ name: "echo", arguments: { text: "hi" } });
const pid = transport.pid;
const proc = transport._process;
let exit = null;
proc.once("exit", (code, signal) => { exit = { code, signal }; });
const start = Date.now();
await client.close();
const closeMs = Date.now() - start;
console.log(JSON.stringify({ echo: res.content[0].text, pid, exit_code: exit?.code ?? null, signal: exit?.signal ?? null, close_ms: closeMs }));
process.exit(0);
