#!/usr/bin/env bash
# admission.sh — cluster admission benchmark (issue 5, ADR 0006).
#
# On one ephemeral PostgreSQL server (local binaries, data on tmpfs when
# available unless QL3_BENCH_DATA_DIR says otherwise, default durability
# settings) it measures:
#   1. the baseline: pgbench -N (8 clients, 2 threads, 20 s) on a scale-10
#      pgbench database;
#   2. cluster admission (controlplane/coordinator/internal/admissionbench):
#      10,000 triggers firing every second (6-field cron), 1 and then 2
#      independent coordinators for 30 s each, plus the comparison cases of
#      ADR 0006 (per-occurrence vs batched admission, budget 64), a
#      1,000-trigger lag case and a 30,000-trigger capacity case (10,000
#      every-second triggers can never admit more than 10,000 Runs a second,
#      so only a larger fleet shows what admission could do). A fifth field
#      sets the page (ADR 0066): mode:budget:replicas:triggers:16 admits a
#      backlog in rounds of the budget, as before pages, for a same-run
#      comparison with the default page.
# It prints one markdown table: admitted occurrences/s after a 5 s warm-up,
# the ratio to the pgbench TPS, serialization retries per admission, fire lag
# p50/p99 (Run created − scheduled_for, database time), missed occurrences
# and duplicates (must be 0).
#
#   scripts/bench/admission.sh
#   CASES='batched:16:2' WINDOW=10s scripts/bench/admission.sh
#   QL3_PG_BIN=/usr/lib/postgresql/16/bin scripts/bench/admission.sh
#   QL3_BENCH_DATA_DIR=/var/tmp scripts/bench/admission.sh   # data on disk
set -euo pipefail

die() { echo "admission.sh: $*" >&2; exit 1; }

root=$(cd "$(dirname "$0")/../.." && pwd)
WINDOW=${WINDOW:-30s}
PGBENCH_SECONDS=${PGBENCH_SECONDS:-20}
TRIGGERS=${TRIGGERS:-10000}
CASES=${CASES:-batched:16:1,batched:16:2:10000:16,batched:16:2,per_occurrence:16:1,per_occurrence:16:2,batched:64:1,batched:64:2,batched:16:2:1000:16,batched:16:2:1000,batched:64:2:1000,batched:16:2:30000,batched:64:2:30000}

. "$root/scripts/bench/lib.sh"
bench_pg_start ql3bench
"${psql[@]}" -d postgres -c 'CREATE DATABASE ql3bench'

echo "# ql3 admission benchmark — $(date -u +%Y-%m-%dT%H:%MZ), nproc=$(nproc), $("$bin/postgres" --version), data in $base"
bench_pgbench_baseline "$PGBENCH_SECONDS"
echo

cd "$root/controlplane"
go run ./coordinator/internal/admissionbench \
	-dsn "host=$dir/sock user=postgres dbname=ql3bench sslmode=disable" \
	-runtime-dsn "host=$dir/sock user=ql3_runtime dbname=ql3bench sslmode=disable" \
	-triggers "$TRIGGERS" -cases "$CASES" -window "$WINDOW" -baseline-tps "$tps"
