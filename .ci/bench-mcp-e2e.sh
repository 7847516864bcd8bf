#!/usr/bin/env bash
# End-to-end figures for one large tools/call (BENCHMARKS.md, "MCP proxy:
# huge results end to end"). Not run by CI: it moves gigabytes.
#
# A scripted MCP server (internal/mcpe2e) answers one tools/call with a
# single block: plain text, text with escapes and non-ASCII, or an image
# (base64), of 1 to 256 MiB once decoded. The same client (internal/mcpe2e,
# decoding the answer with encoding/json as every client must) makes the
# call directly, and through "hybridctx mcp --threshold 16384", over stdio
# and with the server on Streamable HTTP (--url). Reported: the bytes of the
# answer, the time from the request to the decoded answer, and the proxy's
# peak RSS (/usr/bin/time), each as the range over RUNS runs, each run with
# a fresh workspace.
#
# Usage: .ci/bench-mcp-e2e.sh [path/to/hybridctx]     (default: built here)
# Environment: RUNS (3), CASES ("text:1 text:32 text:128 text:256
# escaped:128 image:32", kind:MiB), TRANSPORTS ("stdio http"), PATHS
# ("direct proxy"), SSE (1: the HTTP server answers with an event stream).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
srv=""
cleanup() {
	if [ -n "$srv" ]; then kill "$srv" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT
(cd "$root" && go build -o "$work/mcpe2e" ./internal/mcpe2e)
hc="${1:-}"
if [ -z "$hc" ]; then
	hc="$work/hybridctx"
	(cd "$root" && go build -o "$hc" ./cmd/hybridctx)
fi
runs="${RUNS:-3}"
cases="${CASES:-text:1 text:32 text:128 text:256 escaped:128 image:32}"
transports="${TRANSPORTS:-stdio http}"
paths="${PATHS:-direct proxy}"
ssearg=""
if [ "${SSE:-0}" = 1 ]; then ssearg="-sse"; fi
e2e="$work/mcpe2e"

# range prints "min–max" of its arguments (one value when they agree).
range() {
	printf '%s\n' "$@" | sort -g | awk 'NR==1{lo=$1} {hi=$1} END{if (lo==hi) print lo; else print lo "–" hi}'
}

echo "| upstream | result | path | reaches the client | time (s) | proxy peak RSS (MiB) |"
echo "|---|---|---|---|---|---|"
for tr in $transports; do
	for c in $cases; do
		kind="${c%%:*}"
		mib="${c##*:}"
		size=$((mib << 20))
		url=""
		if [ "$tr" = http ]; then
			"$e2e" serve-http -size "$size" -kind "$kind" $ssearg >"$work/url" &
			srv=$!
			for _ in $(seq 600); do [ -s "$work/url" ] && break; sleep 0.05; done
			url="$(cat "$work/url")"
			if [ -z "$url" ]; then
				echo "bench-mcp-e2e: the scripted server did not start" >&2
				exit 1
			fi
		fi
		for path in $paths; do
			times=()
			rsss=()
			bytes=""
			for _ in $(seq "$runs"); do
				rm -rf "$work/ws"
				up=("$e2e" serve-stdio -size "$size" -kind "$kind")
				proxy=(/usr/bin/time -f %M -o "$work/rss" "$hc" mcp --workspace "$work/ws" --threshold 16384 --max-message $((1 << 30)))
				case "$tr/$path" in
				stdio/direct) out="$("$e2e" call -- "${up[@]}")" ;;
				stdio/proxy) out="$("$e2e" call -- "${proxy[@]}" -- "${up[@]}")" ;;
				http/direct) out="$("$e2e" call -url "$url")" ;;
				http/proxy) out="$("$e2e" call -- "${proxy[@]}" --url "$url")" ;;
				esac
				bytes="${out% *}"
				times+=("${out#* }")
				if [ "$path" = proxy ]; then
					rsss+=("$(($(tail -n1 "$work/rss") / 1024))")
				fi
			done
			rss="–"
			if [ "$path" = proxy ]; then rss="$(range "${rsss[@]}")"; fi
			echo "| $tr | $kind $mib MiB | $path | $bytes bytes | $(range "${times[@]}") | $rss |"
		done
		if [ -n "$srv" ]; then
			kill "$srv" 2>/dev/null || true
			wait "$srv" 2>/dev/null || true
			srv=""
		fi
	done
done
