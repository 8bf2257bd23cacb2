#!/usr/bin/env bash
# serialization.sh — serialization failures of cluster admission per 10,000
# Runs, by replica count (issue 16, ADR 0006).
#
# On one ephemeral PostgreSQL server (local binaries, data on tmpfs when
# available, default durability settings) it runs
# controlplane/coordinator/internal/admissionbench once per replica count
# (batched admission, budget 16, TRIGGERS every-second triggers, WINDOW
# each) and prints, per count: Runs admitted in the window, serialization
# re-runs of admission transactions as the coordinators counted them, the
# server's own count of serialization failures (ERROR lines "could not
# serialize access" in its log, SQLSTATE 40001, whatever statement), both per
# 10,000 Runs, and the server's "there is no transaction in progress"
# warnings (a ROLLBACK sent after a refused COMMIT; must be 0).
#
#   scripts/bench/serialization.sh
#   REPLICAS='3' WINDOW=120s TRIGGERS=2000 scripts/bench/serialization.sh
set -euo pipefail

die() { echo "serialization.sh: $*" >&2; exit 1; }

root=$(cd "$(dirname "$0")/../.." && pwd)
WINDOW=${WINDOW:-60s}
TRIGGERS=${TRIGGERS:-1000}
REPLICAS=${REPLICAS:-2 3 4}
BUDGET=${BUDGET:-16}

bin=${QL3_PG_BIN:-}
if [ -z "$bin" ]; then
	bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5V | tail -n1 || true)
fi
[ -n "$bin" ] && [ -x "$bin/initdb" ] || die "PostgreSQL server binaries not found (apt-get install postgresql, or set QL3_PG_BIN)"

as_server=()
if [ "$(id -u)" -eq 0 ]; then
	pg_user=${QL3_PG_USER:-postgres}
	id "$pg_user" >/dev/null 2>&1 || die "running as root needs the unprivileged OS user '$pg_user' (QL3_PG_USER)"
	as_server=(runuser -u "$pg_user" --)
fi

base=${TMPDIR:-/tmp}
[ -d /dev/shm ] && [ -w /dev/shm ] && base=/dev/shm
base=${QL3_BENCH_DATA_DIR:-$base}
dir=$(mktemp -d "$base/ql3ser-XXXXXX")
[ ${#as_server[@]} -gt 0 ] && chown "$pg_user" "$dir"
chmod 700 "$dir"
pid=""
cleanup() {
	if [ -f "$dir/data/postmaster.pid" ]; then
		pid=$(head -n1 "$dir/data/postmaster.pid" 2>/dev/null || echo "$pid")
	fi
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -INT "$pid" 2>/dev/null || true
		for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"${as_server[@]}" "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C --no-sync --no-instructions \
	>"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
printf 'local all all trust\n' >"$dir/data/pg_hba.conf"
mkdir -p "$dir/sock" "$dir/log"
[ ${#as_server[@]} -gt 0 ] && chown -R "$pg_user" "$dir/sock" "$dir/log" "$dir/data/pg_hba.conf"
"${as_server[@]}" "$bin/postgres" -D "$dir/data" -k "$dir/sock" -c listen_addresses= -c max_connections=100 \
	-c shared_buffers=256MB -c log_min_messages=warning -c log_line_prefix='%m %a ' >"$dir/log/postgres.log" 2>&1 &
pid=$!
disown "$pid" 2>/dev/null || true
for _ in $(seq 1 300); do
	"$bin/pg_isready" -q -h "$dir/sock" -U postgres && break
	kill -0 "$pid" 2>/dev/null || { cat "$dir/log/postgres.log" >&2; die "postgres exited"; }
	sleep 0.1
done
"$bin/pg_isready" -q -h "$dir/sock" -U postgres || die "postgres did not start"
"$bin/psql" -X -q -h "$dir/sock" -U postgres -v ON_ERROR_STOP=1 -d postgres -c 'CREATE DATABASE ql3bench'

echo "# ql3 serialization failures — $(date -u +%Y-%m-%dT%H:%MZ), nproc=$(nproc), $("$bin/postgres" --version), $(git -C "$root" rev-parse --short HEAD)"
echo "# batched admission, budget $BUDGET, $TRIGGERS every-second triggers (concurrency allow), window $WINDOW per replica count; Runs and retries as the coordinators counted them over the window${SETUP_SQL:+; setup: $SETUP_SQL}"
echo
echo "| replicas | Runs (whole case) | retries | retries per 10k Runs | server 40001 errors | per 10k Runs | 'no transaction in progress' warnings |"
echo "|---|---|---|---|---|---|---|"
cd "$root/controlplane"
go build -o "$dir/admissionbench" ./coordinator/internal/admissionbench
for n in $REPLICAS; do
	before=$(wc -l <"$dir/log/postgres.log")
	out=$("$dir/admissionbench" -dsn "host=$dir/sock user=postgres dbname=ql3bench sslmode=disable" \
		-runtime-dsn "host=$dir/sock user=ql3_runtime dbname=ql3bench sslmode=disable" \
		-triggers "$TRIGGERS" -cases "batched:$BUDGET:$n" -window "$WINDOW" -report counts ${SETUP_SQL:+-setup-sql "$SETUP_SQL"})
	new=$(tail -n +"$((before + 1))" "$dir/log/postgres.log")
	ser=$(grep -c 'could not serialize access' <<<"$new" || true)
	warn=$(grep -c 'there is no transaction in progress' <<<"$new" || true)
	read -r runs retries <<<"$out"
	awk -v n="$n" -v runs="$runs" -v r="$retries" -v s="$ser" -v w="$warn" 'BEGIN {
		printf "| %d | %d | %d | %.1f | %d | %.1f | %d |\n", n, runs, r, runs ? r * 10000 / runs : 0, s, runs ? s * 10000 / runs : 0, w }'
done
if [ -n "${SHOW_PIVOTS:-}" ]; then
	grep -A3 "could not serialize access" "$dir/log/postgres.log" | cut -c1-300 | head -n 80
fi
