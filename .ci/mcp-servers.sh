#!/usr/bin/env bash
# Installs the pinned reference MCP servers that the MCP proxy's end-to-end
# tests wrap (internal/cli/cmd_mcp_e2e_test.go), and the MCP Inspector whose
# CLI mode drives a stdio proxy one process per call
# (internal/cli/cmd_mcp_session_test.go): the exact versions in
# .ci/npm/package-lock.json, into .ci/npm/node_modules (gitignored), with the
# machine's Node.js and npm. Prints the node_modules directory on stdout;
# .ci/run exports it as HYBRIDCTX_TEST_MCP_SERVERS.
set -euo pipefail
cd "$(dirname "$0")/npm"
for tool in node npm; do
	command -v "$tool" >/dev/null || { echo "mcp-servers.sh: $tool is not installed" >&2; exit 1; }
done
npm ci --no-audit --no-fund --loglevel=error >&2
for pkg in server-filesystem/dist server-everything/dist inspector-cli/build; do
	test -f "node_modules/@modelcontextprotocol/$pkg/index.js" ||
		{ echo "mcp-servers.sh: @modelcontextprotocol/${pkg%/*} did not install" >&2; exit 1; }
done
echo "$PWD/node_modules"
