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
#   BATCH=8 scripts/bench/dispatch.sh   # sessions of capacity 8 using the batch envelopes (ADR 0058)
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
# Session capacity and batch size of the claims phase: 1 = the single routes
# (pull, ack, complete); 2–16 = batched pull + lease batches (ADR 0058).
BATCH=${BATCH:-1}

. "$root/scripts/bench/lib.sh"
# Autovacuum wakes every second: the claims phase starts with run_leases
# empty, and a plan cached then (generic plans, ADR 0009) stays until an
# ANALYZE invalidates it — on a long-running cluster autoanalyze has long
# done that; with the default 1 min naptime it never happens in the window.
bench_pg_start ql3bench -c autovacuum_naptime=1s
"${psql[@]}" -d postgres -c 'CREATE DATABASE ql3bench'

echo "# ql3 dispatch benchmark — $(date -u +%Y-%m-%dT%H:%MZ), nproc=$(nproc), $("$bin/postgres" --version), data in $base"
bench_pgbench_baseline "$PGBENCH_SECONDS"
echo

# 1,000 client TLS connections plus the listener's side of them.
ulimit -n 8192 2>/dev/null || true
cd "$root/controlplane"
go run ./internal/dispatchbench \
	-dsn "host=$dir/sock user=postgres dbname=ql3bench sslmode=disable" \
	-sessions "$SESSIONS" -idle-sessions "$IDLE_SESSIONS" -runs "$RUNS" \
	-window "$WINDOW" -idle-window "$IDLE_WINDOW" -baseline-tps "$tps" -auth-cache "$AUTH_CACHE" -batch "$BATCH" -baseline-server-cpu "${cpu_us}us" ${CPU_PROFILE:+-cpuprofile "$CPU_PROFILE"}
