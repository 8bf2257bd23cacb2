#!/usr/bin/env bash
# sweep.sh — lifecycle sweeper benchmark (issue 10, ADR 0013).
#
# On one ephemeral PostgreSQL server (local binaries, data on tmpfs when
# available unless QL3_BENCH_DATA_DIR says otherwise) it measures:
#   1. the baseline: pgbench -N (8 clients, 2 threads, 20 s) on a scale-10
#      pgbench database;
#   2. controlplane/coordinator/internal/sweepbench: LEASES (default 10,000)
#      expired leases swept by REPLICAS (default 2) independent sweepers,
#      once unstarted (Run back to queued, same Attempt) and once started
#      past the cancel grace (lost, then failed): wall time, leases/s, the
#      ratio to the pgbench TPS, and an exactly-once check from the
#      database. Goal: ≤ 10 s for 10,000 leases on 2 replicas.
#   3. cancel → cancel control latency with a fake worker renewing by
#      heartbeat every HEARTBEAT (default 1s): goal ≤ one heartbeat.
#
#   scripts/bench/sweep.sh
#   LEASES=1000 REPLICAS=1 CASES=requeue scripts/bench/sweep.sh
#   STATEMENTS=1 CASES=lost TRIALS=0 scripts/bench/sweep.sh   # + the server's
#     statement profile of the sweep (pg_stat_statements: calls, rows,
#     execution and planning time of the sweepers' role), for finding
#     where a sweep spends its time
set -euo pipefail

die() { echo "sweep.sh: $*" >&2; exit 1; }

root=$(cd "$(dirname "$0")/../.." && pwd)
PGBENCH_SECONDS=${PGBENCH_SECONDS:-20}
LEASES=${LEASES:-10000}
REPLICAS=${REPLICAS:-2}
CASES=${CASES:-requeue,lost}
HEARTBEAT=${HEARTBEAT:-1s}
TRIALS=${TRIALS:-10}
STATEMENTS=${STATEMENTS:-0}

. "$root/scripts/bench/lib.sh"
stat_opts=()
[ "$STATEMENTS" = 1 ] && stat_opts=(-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all
	-c pg_stat_statements.track_planning=on)
bench_pg_start ql3bench "${stat_opts[@]}"
"${psql[@]}" -d postgres -c 'CREATE DATABASE ql3bench'
[ "$STATEMENTS" = 1 ] && "${psql[@]}" -d ql3bench -c 'CREATE EXTENSION pg_stat_statements'

echo "# ql3 sweeper benchmark — $(date -u +%Y-%m-%dT%H:%MZ), nproc=$(nproc), $("$bin/postgres" --version), data in $base"
bench_pgbench_baseline "$PGBENCH_SECONDS"
echo

cd "$root/controlplane"
go run ./coordinator/internal/sweepbench \
	-dsn "host=$dir/sock user=postgres dbname=ql3bench sslmode=disable" \
	-runtime-dsn "host=$dir/sock user=ql3_runtime dbname=ql3bench sslmode=disable" \
	-leases "$LEASES" -replicas "$REPLICAS" -cases "$CASES" -baseline-tps "$tps" \
	-cancel-trials "$TRIALS" -heartbeat "$HEARTBEAT"

if [ "$STATEMENTS" = 1 ]; then
	echo
	echo "statements of ql3_runtime (pg_stat_statements; the seeding runs as postgres and is not counted):"
	"${psql[@]}" -d ql3bench -P pager=off -c "SELECT calls, rows,
		round(total_exec_time::numeric, 0) AS exec_ms, round(total_plan_time::numeric, 0) AS plan_ms,
		round((total_exec_time / greatest(calls, 1))::numeric, 3) AS mean_exec_ms,
		left(regexp_replace(query, '\s+', ' ', 'g'), 90) AS query
	FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid WHERE r.rolname = 'ql3_runtime'
	ORDER BY total_exec_time + total_plan_time DESC LIMIT 15"
fi
