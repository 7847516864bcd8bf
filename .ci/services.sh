# Real servers for the distributed-backend tests, on loopback only.
#
# Sourced by .ci/run (bash). Defines hybridctx_services_start and
# hybridctx_services_stop; start exports
#
#   HYBRIDCTX_TEST_POSTGRES  postgres://USER:PASSWORD@127.0.0.1:PORT/postgres?sslmode=disable
#   HYBRIDCTX_TEST_S3        s3://BUCKET?endpoint=http://127.0.0.1:PORT&use_path_style=true&disable_https=true&region=us-east-1
#   AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY  the object store's credentials
#
# PostgreSQL comes from Debian's packages (installed when absent) and runs
# from a fresh initdb in a temporary directory owned by the postgres user
# (initdb refuses root). versitygw is built once with go install and kept in
# $HYBRIDCTX_CI_CACHE/bin (default $HOME/.cache/hybridctx-ci/bin), so a
# second run does not rebuild it. Both listen on 127.0.0.1 at free ports.
# To develop by hand:
#
#   source .ci/services.sh && hybridctx_services_start
#   go test ./workspace/pgstore/... ./workspace/blobstore/... ./backend/...
#   hybridctx_services_stop

HYBRIDCTX_VERSITYGW_VERSION="v1.8.0"
HYBRIDCTX_S3_BUCKET="hybridctx-test"

# hybridctx_free_port prints a TCP port on 127.0.0.1 that nothing listens on,
# below the kernel's ephemeral range: a port in that range can be taken by
# any outgoing connection between this check and the server's bind.
hybridctx_free_port() {
	local port low=32768 high
	if read -r low high </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null && [ "$low" -gt 11000 ]; then
		:
	else
		low=32768
	fi
	for _ in $(seq 1 200); do
		port=$((10000 + RANDOM % (low - 10000)))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	echo "no free port found" >&2
	return 1
}

# hybridctx_wait_port waits up to 30 s for 127.0.0.1:$1 to accept connections.
hybridctx_wait_port() {
	for _ in $(seq 1 300); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	echo "nothing listens on 127.0.0.1:$1" >&2
	return 1
}

hybridctx_pg_bindir() {
	local d
	for d in /usr/lib/postgresql/15/bin /usr/lib/postgresql/*/bin; do
		if [ -x "$d/initdb" ]; then
			echo "$d"
			return 0
		fi
	done
	return 1
}

hybridctx_start_postgres() {
	local bindir
	if ! bindir="$(hybridctx_pg_bindir)"; then
		echo "== installing PostgreSQL from Debian's packages"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
		bindir="$(hybridctx_pg_bindir)"
	fi
	HYBRIDCTX_PG_DIR="$(mktemp -d /tmp/hybridctx-pg.XXXXXX)"
	local password port
	password="pw-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
	port="$(hybridctx_free_port)"
	printf '%s\n' "$password" >"$HYBRIDCTX_PG_DIR/pwfile"
	chown -R postgres: "$HYBRIDCTX_PG_DIR"
	chmod 700 "$HYBRIDCTX_PG_DIR"
	HYBRIDCTX_PG_BINDIR="$bindir"
	runuser -u postgres -- "$bindir/initdb" -D "$HYBRIDCTX_PG_DIR/data" -U hybridctx \
		--pwfile="$HYBRIDCTX_PG_DIR/pwfile" --auth=scram-sha-256 -E UTF8 --no-instructions >/dev/null
	rm -f "$HYBRIDCTX_PG_DIR/pwfile"
	# synchronous_commit=off keeps every commit durable in order but lets the
	# WAL flush lag a few milliseconds: the suites run several times faster.
	# A port taken between the check and the bind is tried again elsewhere.
	local try
	for try in 1 2 3; do
		if runuser -u postgres -- "$bindir/pg_ctl" -D "$HYBRIDCTX_PG_DIR/data" -l "$HYBRIDCTX_PG_DIR/log" -w -t 60 \
			-o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$HYBRIDCTX_PG_DIR -c max_connections=300 -c synchronous_commit=off" \
			start >/dev/null; then
			break
		fi
		if [ "$try" = 3 ]; then
			tail -n 5 "$HYBRIDCTX_PG_DIR/log" >&2
			return 1
		fi
		port="$(hybridctx_free_port)"
	done
	export HYBRIDCTX_TEST_POSTGRES="postgres://hybridctx:$password@127.0.0.1:$port/postgres?sslmode=disable"
	echo "PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port"
}

hybridctx_start_versitygw() {
	local cache bin port access secret
	cache="${HYBRIDCTX_CI_CACHE:-$HOME/.cache/hybridctx-ci}"
	bin="$cache/bin/versitygw-$HYBRIDCTX_VERSITYGW_VERSION"
	if [ ! -x "$bin" ]; then
		echo "== building versitygw $HYBRIDCTX_VERSITYGW_VERSION (cached in $cache/bin)"
		mkdir -p "$cache/bin"
		local gobin
		gobin="$(mktemp -d "$cache/build.XXXXXX")"
		(cd / && GOBIN="$gobin" GOFLAGS=-buildvcs=false go install "github.com/versity/versitygw/cmd/versitygw@$HYBRIDCTX_VERSITYGW_VERSION")
		mv "$gobin/versitygw" "$bin"
		rmdir "$gobin"
	fi
	if ! command -v curl >/dev/null; then
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl >/dev/null
	fi
	HYBRIDCTX_S3_DIR="$(mktemp -d /tmp/hybridctx-s3.XXXXXX)"
	mkdir "$HYBRIDCTX_S3_DIR/data"
	port="$(hybridctx_free_port)"
	access="hybridctx$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')"
	secret="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
	"$bin" --port "127.0.0.1:$port" --access "$access" --secret "$secret" --quiet \
		posix "$HYBRIDCTX_S3_DIR/data" >"$HYBRIDCTX_S3_DIR/log" 2>&1 &
	HYBRIDCTX_S3_PID=$!
	hybridctx_wait_port "$port"
	curl -fsS -X PUT -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" --aws-sigv4 "aws:amz:us-east-1:s3" --user "$access:$secret" \
		"http://127.0.0.1:$port/$HYBRIDCTX_S3_BUCKET" >/dev/null
	export AWS_ACCESS_KEY_ID="$access" AWS_SECRET_ACCESS_KEY="$secret"
	export HYBRIDCTX_TEST_S3="s3://$HYBRIDCTX_S3_BUCKET?endpoint=http://127.0.0.1:$port&use_path_style=true&disable_https=true&region=us-east-1"
	echo "versitygw $HYBRIDCTX_VERSITYGW_VERSION on 127.0.0.1:$port, bucket $HYBRIDCTX_S3_BUCKET"
}

# hybridctx_services_start starts PostgreSQL and versitygw and exports the
# variables above.
hybridctx_services_start() {
	hybridctx_start_postgres
	hybridctx_start_versitygw
}

# hybridctx_services_stop stops whatever hybridctx_services_start started and
# removes its temporary directories. It is safe to call more than once.
hybridctx_services_stop() {
	if [ -n "${HYBRIDCTX_S3_PID:-}" ]; then
		kill "$HYBRIDCTX_S3_PID" 2>/dev/null || true
		wait "$HYBRIDCTX_S3_PID" 2>/dev/null || true
		HYBRIDCTX_S3_PID=""
	fi
	if [ -n "${HYBRIDCTX_S3_DIR:-}" ]; then
		rm -rf "$HYBRIDCTX_S3_DIR"
		HYBRIDCTX_S3_DIR=""
	fi
	if [ -n "${HYBRIDCTX_PG_DIR:-}" ]; then
		if [ -n "${HYBRIDCTX_PG_BINDIR:-}" ]; then
			runuser -u postgres -- "$HYBRIDCTX_PG_BINDIR/pg_ctl" -D "$HYBRIDCTX_PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
		fi
		rm -rf "$HYBRIDCTX_PG_DIR"
		HYBRIDCTX_PG_DIR=""
	fi
}
