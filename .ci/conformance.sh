#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# server mode, pinned in .ci/conformance/package-lock.json with the Node.js 22
# it needs) against the Go SDK's own conformance fixture server
# (conformance/everything-server, built at the SDK version go.mod pins):
# directly, through `hybridctx mcp --listen` with the fixture as a stdio
# upstream, and through `hybridctx mcp --listen --url` with the fixture as a
# Streamable HTTP upstream. Every check that passes directly must pass through
# the proxy (compare.mjs exits 1 otherwise). Then through the gateway
# (`hybridctx mcp --config`, docs/gateway.md): the fixture is one of three
# configured servers (with "prefix": "", beside the repository's Go test
# server and the npm everything server, each under its prefix), the gateway
# fronted by --listen and, over stdio, by `hybridctx mcp --listen`; every
# check that passes directly must pass there too. Prints the table the
# README and docs/gateway.md show. Also leaves the TypeScript SDK client for the proxy's HTTP
# end-to-end tests installed: with --print-sdk, prints its node_modules
# directory and the node binary on stdout and runs nothing else
# (.ci/run exports them as HYBRIDCTX_TEST_MCP_SDK and HYBRIDCTX_TEST_NODE).
# With --gateway, runs the suite directly and through the gateway only.
set -euo pipefail
cd "$(dirname "$0")/.."
ci="$PWD/.ci/conformance"
command -v npm >/dev/null || { echo "conformance.sh: npm is not installed" >&2; exit 1; }
(cd "$ci" && npm ci --no-audit --no-fund --loglevel=error >&2)
node="$ci/node_modules/.bin/node"
major="$("$node" -p 'process.versions.node.split(".")[0]')"
[ "$major" -ge 22 ] || { echo "conformance.sh: Node.js >= 22 needed, got $major" >&2; exit 1; }
if [ "${1:-}" = "--print-sdk" ]; then
	echo "$ci/node_modules $node"
	exit 0
fi

work="$(mktemp -d)"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

sdk="$(go list -m -f '{{.Version}}' github.com/modelcontextprotocol/go-sdk)"
echo "== building the Go SDK's conformance fixture at $sdk and hybridctx" >&2
go build -o "$work/everything-server" github.com/modelcontextprotocol/go-sdk/conformance/everything-server
go build -o "$work/hybridctx" ./cmd/hybridctx
go build -o "$work/mcptestserver" ./mcpproxy/internal/mcptestserver
servers="${HYBRIDCTX_TEST_MCP_SERVERS:-$(bash .ci/mcp-servers.sh)}"

port="${HYBRIDCTX_CONFORMANCE_PORT:-39300}"
direct="127.0.0.1:$port"
viastdio="127.0.0.1:$((port + 1))"
viahttp="127.0.0.1:$((port + 2))"
viagateway="127.0.0.1:$((port + 3))"
viagwstdio="127.0.0.1:$((port + 4))"
"$work/everything-server" -http "$direct" -stateless=false >"$work/server.log" 2>&1 &
pids+=($!)
# The suite opens one session per scenario and ends none: the default
# --max-sessions must cope (the least recently used idle session ends).
proxy=("$work/hybridctx" mcp --workspace "$work/ws")
only_gateway=false
[ "${1:-}" = "--gateway" ] && only_gateway=true
if ! $only_gateway; then
	"${proxy[@]}" --listen "$viastdio" -- "$work/everything-server" >"$work/stdio.log" 2>&1 &
	pids+=($!)
	"${proxy[@]}" --listen "$viahttp" --url "http://$direct/mcp" >"$work/http.log" 2>&1 &
	pids+=($!)
fi
cat >"$work/gateway.json" <<EOF
{"mcpServers": {
  "conformance": {"command": "$work/everything-server", "hybridctx": {"prefix": ""}},
  "go": {"command": "$work/mcptestserver"},
  "everything": {"command": "node", "args": ["$servers/@modelcontextprotocol/server-everything/dist/index.js", "stdio"]}
}}
EOF
gateway=(mcp --workspace "$work/gws" --config "$work/gateway.json")
"$work/hybridctx" "${gateway[@]}" --listen "$viagateway" >"$work/gateway.log" 2>&1 &
pids+=($!)
"${proxy[@]}" --listen "$viagwstdio" -- "$work/hybridctx" "${gateway[@]}" >"$work/gwstdio.log" 2>&1 &
pids+=($!)

ready() {
	for _ in $(seq 100); do
		if "$node" -e 'fetch(process.argv[1],{method:"OPTIONS"}).then(()=>process.exit(0),()=>process.exit(1))' "http://$1/mcp"; then
			return 0
		fi
		sleep 0.1
	done
	echo "conformance.sh: nothing listens on $1" >&2
	return 1
}
suite() { # NAME ADDR
	ready "$2"
	echo "== conformance suite: $1" >&2
	"$node" "$ci/node_modules/@modelcontextprotocol/conformance/dist/index.js" server \
		--url "http://$2/mcp" -o "$work/$1" >"$work/$1.log" 2>&1 || true
	sed -n '/SUMMARY/,$p' "$work/$1.log" | tail -n 1 >&2
}
suite direct "$direct"
runs=("directly=$work/direct")
if ! $only_gateway; then
	suite stdio "$viastdio"
	suite http "$viahttp"
	runs+=("through the proxy, stdio upstream=$work/stdio" "through the proxy, HTTP upstream=$work/http")
fi
suite gateway "$viagateway"
suite gwstdio "$viagwstdio"
"$node" "$ci/compare.mjs" "${runs[@]}" \
	"through the gateway (--listen), one of three servers=$work/gateway" \
	"through the gateway (stdio, behind the proxy), one of three servers=$work/gwstdio"
