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

. "$root/scripts/bench/lib.sh"
bench_pg_start ql3ser -c log_line_prefix='%m %a '
"${psql[@]}" -d postgres -c 'CREATE DATABASE ql3bench'

echo "# ql3 serialization failures — $(date -u +%Y-%m-%dT%H:%MZ), nproc=$(nproc), $("$bin/postgres" --version), $(git -C "$root" rev-parse --short HEAD)"
echo "# batched admission, budget $BUDGET, $TRIGGERS every-second triggers (concurrency allow), window $WINDOW per replica count; Runs and retries as the coordinators counted them over the window${SETUP_SQL:+; setup: $SETUP_SQL}"
echo
echo "| replicas | Runs (whole case) | retries | retries per 10k Runs | server 40001 errors | per 10k Runs | 'no transaction in progress' warnings |"
echo "|---|---|---|---|---|---|---|"
cd "$root/controlplane"
go build -o "$dir/admissionbench" ./coordinator/internal/admissionbench
for n in $REPLICAS; do
	before=$(wc -l <"$pglog")
	out=$("$dir/admissionbench" -dsn "host=$dir/sock user=postgres dbname=ql3bench sslmode=disable" \
		-runtime-dsn "host=$dir/sock user=ql3_runtime dbname=ql3bench sslmode=disable" \
		-triggers "$TRIGGERS" -cases "batched:$BUDGET:$n" -window "$WINDOW" -report counts ${SETUP_SQL:+-setup-sql "$SETUP_SQL"})
	new=$(tail -n +"$((before + 1))" "$pglog")
	ser=$(grep -c 'could not serialize access' <<<"$new" || true)
	warn=$(grep -c 'there is no transaction in progress' <<<"$new" || true)
	read -r runs retries <<<"$out"
	awk -v n="$n" -v runs="$runs" -v r="$retries" -v s="$ser" -v w="$warn" 'BEGIN {
		printf "| %d | %d | %d | %.1f | %d | %.1f | %d |\n", n, runs, r, runs ? r * 10000 / runs : 0, s, runs ? s * 10000 / runs : 0, w }'
done
if [ -n "${SHOW_PIVOTS:-}" ]; then
	grep -A3 "could not serialize access" "$pglog" | cut -c1-300 | head -n 80
fi
