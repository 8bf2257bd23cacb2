#!/usr/bin/env bash
# dispatch.sh — worker dispatch benchmark (issue 9, ADR 0009/0011).
#
# On one ephemeral PostgreSQL server (local binaries, data on tmpfs when
# available unless QL3_BENCH_DATA_DIR says otherwise, default durability
# settings) it measures, in the same run:
#   1. the baseline: pgbench -N (8 clients, 2 threads, 20 s) on a scale-10
#      pgbench database;
#   2. dispatch through the real worker ingress (TLS 1.3, client
#      certificates, ql3w credentials) and the real dispatcher
#      (controlplane/internal/dispatchbench):
#      - claims: 32 sessions looping pull → starting ACK → running ACK →
#        completion of no-op Runs: runs/s and its ratio to pgbench TPS
#        (goal ≥ 0.15), pull latency, commits / WAL records / tuples per run;
#      - idle: 1,000 sessions pulling every 2 s with nothing queued: pull
#        latency p50/p99 (goal p99 ≤ 10 ms) and writes per idle pull (goal 0).
# It prints one markdown table. Benchmark, not a test: nothing asserts.
#
#   scripts/bench/dispatch.sh
#   SESSIONS=16 IDLE_SESSIONS=200 WINDOW=10s scripts/bench/dispatch.sh
#   AUTH_CACHE=0s scripts/bench/dispatch.sh   # without the ingress principal cache
#   CPU_PROFILE=/tmp/claims.pprof scripts/bench/dispatch.sh   # Go CPU profile of the claims phase
#   QL3_PG_BIN=/usr/lib/postgresql/16/bin scripts/bench/dispatch.sh
set -euo pipefail

die() { echo "dispatch.sh: $*" >&2; exit 1; }

root=$(cd "$(dirname "$0")/../.." && pwd)
WINDOW=${WINDOW:-20s}
IDLE_WINDOW=${IDLE_WINDOW:-20s}
PGBENCH_SECONDS=${PGBENCH_SECONDS:-20}
SESSIONS=${SESSIONS:-32}
IDLE_SESSIONS=${IDLE_SESSIONS:-1000}
RUNS=${RUNS:-40000}
# Principal cache TTL of the ingress (ADR 0010); 0s = every request authenticates in PostgreSQL.
AUTH_CACHE=${AUTH_CACHE:-5s}

bin=${QL3_PG_BIN:-}
if [ -z "$bin" ]; then
	bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5V | tail -n1 || true)
fi
[ -n "$bin" ] && [ -x "$bin/initdb" ] && [ -x "$bin/pgbench" ] ||
	die "PostgreSQL server binaries and pgbench not found (apt-get install postgresql postgresql-contrib, or set QL3_PG_BIN)"

as_server=()
if [ "$(id -u)" -eq 0 ]; then
	pg_user=${QL3_PG_USER:-postgres}
	id "$pg_user" >/dev/null 2>&1 || die "running as root needs the unprivileged OS user '$pg_user' (QL3_PG_USER)"
	as_server=(runuser -u "$pg_user" --)
fi

# QL3_BENCH_DATA_DIR puts the server's data elsewhere (e.g. on disk, to
# include real fsync cost in both the baseline and the admissions).
base=${TMPDIR:-/tmp}
[ -d /dev/shm ] && [ -w /dev/shm ] && base=/dev/shm
base=${QL3_BENCH_DATA_DIR:-$base}
dir=$(mktemp -d "$base/ql3bench-XXXXXX")
[ ${#as_server[@]} -gt 0 ] && chown "$pg_user" "$dir"
chmod 700 "$dir"
pid=""
cleanup() {
	# Signal the postmaster itself (runuser may sit in between).
	if [ -f "$dir/data/postmaster.pid" ]; then
		pid=$(head -n1 "$dir/data/postmaster.pid" 2>/dev/null || echo "$pid")
	fi
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -INT "$pid" 2>/dev/null || true
		for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"${as_server[@]}" "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C --no-sync --no-instructions \
	>"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
printf 'local all all trust\n' >"$dir/data/pg_hba.conf"
mkdir -p "$dir/sock"
[ ${#as_server[@]} -gt 0 ] && chown -R "$pg_user" "$dir/sock" "$dir/data/pg_hba.conf"
"${as_server[@]}" "$bin/postgres" -D "$dir/data" -k "$dir/sock" -c listen_addresses= -c max_connections=100 \
	-c shared_buffers=256MB -c autovacuum=on -c log_min_messages=warning >"$dir/postgres.log" 2>&1 &
pid=$!
disown "$pid" 2>/dev/null || true
for _ in $(seq 1 300); do
	"$bin/pg_isready" -q -h "$dir/sock" -U postgres && break
	kill -0 "$pid" 2>/dev/null || { cat "$dir/postgres.log" >&2; die "postgres exited"; }
	sleep 0.1
done
"$bin/pg_isready" -q -h "$dir/sock" -U postgres || die "postgres did not start"

psql=("$bin/psql" -X -q -h "$dir/sock" -U postgres -v ON_ERROR_STOP=1)
"${psql[@]}" -d postgres -c 'CREATE DATABASE pgbench' -c 'CREATE DATABASE ql3bench'

echo "# ql3 dispatch benchmark — $(date -u +%Y-%m-%dT%H:%MZ), nproc=$(nproc), $("$bin/postgres" --version), data in $base"
"$bin/pgbench" -q -i -s 10 -h "$dir/sock" -U postgres pgbench >/dev/null 2>&1
tps=$("$bin/pgbench" -N -c 8 -j 2 -T "$PGBENCH_SECONDS" -h "$dir/sock" -U postgres pgbench 2>/dev/null |
	awk '/^tps = / { print $3; exit }')
[ -n "$tps" ] || die "pgbench printed no tps"
echo "baseline: pgbench -N -c 8 -j 2 -T $PGBENCH_SECONDS: $tps tps"
echo

# 1,000 client TLS connections plus the listener's side of them.
ulimit -n 8192 2>/dev/null || true
cd "$root/controlplane"
go run ./internal/dispatchbench \
	-dsn "host=$dir/sock user=postgres dbname=ql3bench sslmode=disable" \
	-sessions "$SESSIONS" -idle-sessions "$IDLE_SESSIONS" -runs "$RUNS" \
	-window "$WINDOW" -idle-window "$IDLE_WINDOW" -baseline-tps "$tps" -auth-cache "$AUTH_CACHE" ${CPU_PROFILE:+-cpuprofile "$CPU_PROFILE"}
