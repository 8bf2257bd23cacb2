#!/usr/bin/env bash
# cluster.sh — the whole cluster's throughput (issue #12), through the real
# binaries on one ephemeral PostgreSQL (data on tmpfs when available,
# default durability settings), in the same run:
#   1. baseline: pgbench -N (8 clients, 2 threads, PGBENCH_SECONDS) on a
#      scale-10 pgbench database;
#   2. 2 ql3-control replicas (scheduler + admin API + mTLS ingress each)
#      and WORKERS ql3-worker processes (node profile) with 32 slots in
#      all, fed by TRIGGERS every-second no-op triggers (offered load
#      TRIGGERS runs/s); over WINDOW seconds after WARMUP:
#      - remote runs/s (attempts finished succeeded in the window) and its
#        ratio to pgbench TPS (goal ≥ 0.10);
#      - commits per run (pg_stat_database xact_commit delta / runs);
#      - fire → process start latency p50/p99/max (attempt started_at −
#        the occurrence's scheduled time; goal p99 ≤ 1 s, node profile);
#      - worker RSS (max VmRSS sampled every second, per worker);
#      - CPU per run of PostgreSQL, each replica, each worker and the
#        processes the workers spawned (utime + stime from /proc; a worker's
#        reaped children are its spawned processes), and the machine's busy
#        time (other load included) — where the run's cost goes.
#   Before the window the ql3 database is ANALYZEd (ANALYZE=0 skips it):
#   the window measures a cluster in its steady state, whose tables
#   autovacuum analyses as they grow, not one whose plans were all made
#   against empty, never-analysed tables (autovacuum's first visit comes up
#   to a minute after start, after this window). Without it, on the same
#   box: PostgreSQL ≈ 7–10 ms CPU per run instead of ≈ 3–5 (a pull's replay
#   lookup 1.3 ms instead of 0.07; sweeps walking the whole queue).
# Benchmark, not a test: nothing asserts; read the figures as this machine's.
#
#   scripts/bench/cluster.sh
#   TRIGGERS=60 WORKERS=4 WINDOW=30 scripts/bench/cluster.sh
set -euo pipefail
die() { echo "cluster.sh: $*" >&2; exit 1; }
root=$(cd "$(dirname "$0")/../.." && pwd)
TRIGGERS=${TRIGGERS:-100}
WORKERS=${WORKERS:-2}
WARMUP=${WARMUP:-10}
WINDOW=${WINDOW:-30}
PGBENCH_SECONDS=${PGBENCH_SECONDS:-20}
ANALYZE=${ANALYZE:-1}
export PATH=$PATH:/usr/local/go/bin
command -v jq >/dev/null || die "jq is required"
case $WORKERS in 2 | 4) ;; *) die "WORKERS must be 2 or 4 (32 slots in all)" ;; esac
capacity=$((32 / WORKERS))

. "$root/scripts/bench/lib.sh"
bench_pg_start ql3clusterbench
chmod 711 "$dir" # the binaries and the workers' state live here too
pgpid=$(head -n1 "$dir/data/postmaster.pid")
pids="" cpids=""
cleanup() {
	# Workers first (they drain through a live ingress), then the replicas,
	# then PostgreSQL (lib.sh).
	for p in $pids; do
		kill -TERM "$p" 2>/dev/null || true
		for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null || true
	done
	bench_pg_cleanup
}
trap cleanup EXIT

(cd "$root/controlplane" && go build -o "$dir/ql3-control" ./cmd/ql3-control) || die "build failed"
(cd "$root/worker" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$dir/ql3-worker" ./cmd/ql3-worker) || die "build failed"
ctl="$dir/ql3-control" wkr="$dir/ql3-worker"

psql+=(-A -t)
"${psql[@]}" -d postgres -c 'CREATE DATABASE ql3'
bench_pgbench_baseline "$PGBENCH_SECONDS"

psql+=(-d ql3)
export QL3_DSN="host=$sock user=postgres dbname=ql3 sslmode=disable" QL3_LOG_LEVEL=warn
"$ctl" migrate >/dev/null 2>&1 || die "migrate failed"
pki="$dir/pki"
"$ctl" pki init --dir "$pki" >/dev/null
"$ctl" pki issue-server --dir "$pki" --host 127.0.0.1 >/dev/null
port0=$((20000 + RANDOM % 20000))
for i in 0 1; do
	QL3_LOG_LEVEL=info "$ctl" serve --listen "127.0.0.1:$((port0 + 2 * i))" --ingress-listen "127.0.0.1:$((port0 + 2 * i + 1))" \
		--ingress-tls-cert "$pki/ingress.crt" --ingress-tls-key "$pki/ingress.key" --ingress-client-ca "$pki/ca.crt" \
		--scheduler-budget 256 >"$dir/control-$i.log" 2>&1 &
	pids="$pids $!"
	cpids="$cpids $!"
done
for _ in $(seq 1 300); do
	[ "$(cat "$dir"/control-*.log | grep -c 'worker ingress listening' || true)" -ge 2 ] && break
	sleep 0.1
done
export QL3_SERVER="http://127.0.0.1:$port0"
QL3_TOKEN=$("$ctl" token create --name bench 2>/dev/null | tail -n1 | awk '{print $NF}')
export QL3_TOKEN
wpids=""
for i in $(seq 0 $((WORKERS - 1))); do
	identity=$("$ctl" pki issue-worker --dir "$pki" --name "w$i" 2>/dev/null)
	"$ctl" worker register --name "w$i" --tls-identity "$identity" >/dev/null
	"$ctl" worker issue-credential --id "w$i" --credential-file "$pki/workers/w$i/credential" >/dev/null
	mkdir -m 0700 "$dir/w$i"
	QL3_INGRESS_URL="https://127.0.0.1:$((port0 + 2 * (i % 2) + 1))" QL3_CREDENTIAL_FILE="$pki/workers/w$i/credential" \
		QL3_CERT_FILE="$pki/workers/w$i/client.crt" QL3_KEY_FILE="$pki/workers/w$i/client.key" \
		QL3_CA_FILE="$pki/workers/w$i/ca.crt" QL3_STATE_DIR="$dir/w$i" QL3_PROFILE=node QL3_CAPACITY=$capacity \
		QL3_LOG_LEVEL=warn "$wkr" >"$dir/w$i.log" 2>&1 &
	wpids="$wpids $!"
done
pids="$wpids $pids"

"$ctl" project create --name bench >/dev/null
printf '{"kind":"qinglong/command@v1","argv":{"file":"/bin/true"},"concurrency":"allow"}' >"$dir/spec.json"
# One task per trigger: a task refuses two triggers firing at the same instants.
for i in $(seq 1 "$TRIGGERS"); do
	task=$("$ctl" task create --project bench --name "noop-$i" --spec-file "$dir/spec.json" --json | jq -r '.id')
	"$ctl" trigger create --task "$task" --name "t$i" --expression '* * * * * *' >/dev/null
done
sleep "$WARMUP"
[ "$ANALYZE" = 0 ] || "${psql[@]}" -c 'ANALYZE'

# cpu_snapshot: "<what> <pid> <own ticks> <reaped children's ticks>" for
# PostgreSQL's processes, each replica and each worker, and the machine's
# busy and idle ticks.
ticks() { awk '{sub(/^.*\) /, ""); print $12 + $13, $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo "0 0"; }
cpu_snapshot() {
	local p i=0
	for p in $pgpid $(pgrep -P "$pgpid"); do echo "postgres $p $(ticks "$p")"; done
	for p in $cpids; do echo "control-$i $p $(ticks "$p")"; i=$((i + 1)); done
	i=0
	for p in $wpids; do echo "worker-$i $p $(ticks "$p")"; i=$((i + 1)); done
	awk '/^cpu / {print "machine 0", $2 + $3 + $4 + $7 + $8 + $9, $5 + $6}' /proc/stat
}

nowms() { "${psql[@]}" -c "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint"; }
commits() { "${psql[@]}" -c "SELECT pg_stat_force_next_flush(); SELECT xact_commit FROM pg_stat_database WHERE datname = 'ql3'" | tail -n1; }
w0=$(nowms); c0=$(commits)
cpu_snapshot >"$dir/cpu0"
declare -A maxrss
for _ in $(seq 1 "$WINDOW"); do
	for p in $wpids; do
		r=$(awk '/^VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
		[ "${r:-0}" -gt "${maxrss[$p]:-0}" ] && maxrss[$p]=$r
	done
	sleep 1
done
cpu_snapshot >"$dir/cpu1"
w1=$(nowms); c1=$(commits)

runs=$("${psql[@]}" -c "SELECT count(*) FROM ql3.attempts WHERE status = 'succeeded' AND finished_at_ms >= $w0 AND finished_at_ms < $w1")
lat=$("${psql[@]}" -c "SELECT coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY d), 0) || ' ' ||
	coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY d), 0) || ' ' || coalesce(max(d), 0) || ' ' || count(*)
	FROM (SELECT a.started_at_ms - r.scheduled_for_ms AS d FROM ql3.attempts a JOIN ql3.runs r USING (run_id)
	WHERE a.started_at_ms >= $w0 AND a.started_at_ms < $w1) x")
# The same attempts, split into the legs of the latency (database times):
# admission (Run created − scheduled), wait for a pull (lease claimed −
# Run created), claim → Ack starting (run.starting event − lease), Ack
# starting → Ack running (attempt started − run.starting: spawn and the
# worker's loop). p50/p99 of each leg.
legs=$("${psql[@]}" -c "SELECT string_agg(leg || ' ' || p50 || ' ' || p99, ' ' ORDER BY o) FROM (
	SELECT o, leg, percentile_disc(0.5) WITHIN GROUP (ORDER BY d) AS p50, percentile_disc(0.99) WITHIN GROUP (ORDER BY d) AS p99
	FROM (SELECT a.run_id, r.created_at_ms - r.scheduled_for_ms AS adm, l.leased_at_ms - r.created_at_ms AS pull,
			e.created_at_ms - l.leased_at_ms AS claim_start, a.started_at_ms - e.created_at_ms AS start_run
		FROM ql3.attempts a JOIN ql3.runs r USING (run_id)
		JOIN ql3.run_leases l ON l.attempt_id = a.attempt_id AND l.status <> 'released'
		JOIN ql3.run_events e ON e.run_id = a.run_id AND e.attempt = a.attempt AND e.type = 'run.starting'
		WHERE a.started_at_ms >= $w0 AND a.started_at_ms < $w1) x,
	LATERAL (VALUES (1, 'admission', adm), (2, 'pull_wait', pull), (3, 'claim_to_starting', claim_start),
		(4, 'starting_to_running', start_run)) v(o, leg, d)
	GROUP BY o, leg) y")
backlog=$("${psql[@]}" -c "SELECT count(*) FROM ql3.runs WHERE status IN ('created', 'queued', 'dispatching')")
secs=$(( (w1 - w0) ))
read -r p50 p99 pmax nlat <<<"$lat"
echo "| figure | value |"
echo "|---|---|"
echo "| offered load | $TRIGGERS runs/s ($TRIGGERS every-second triggers) |"
echo "| workers × slots | $WORKERS × $capacity (node profile), 2 replicas |"
awk -v n="$runs" -v ms="$secs" -v tps="$tps" 'BEGIN {r = n * 1000 / ms; printf "| remote runs/s | %.1f (%d in %.1f s) |\n| ratio to pgbench -N TPS (%d) | %.3f (goal ≥ 0.10) |\n", r, n, ms/1000, tps, r / tps}'
awk -v c=$((c1 - c0)) -v n="$runs" 'BEGIN {printf "| commits per run | %.1f (%d commits) |\n", (n ? c / n : 0), c}'
echo "| fire → process start p50 / p99 / max | $p50 / $p99 / $pmax ms over $nlat attempts (goal p99 ≤ 1000 ms) |"
set -- $legs
while [ $# -ge 3 ]; do echo "| leg $1 p50 / p99 | $2 / $3 ms |"; shift 3; done
echo "| queued at the end of the window | $backlog |"
for p in $wpids; do echo "| worker pid $p max VmRSS | ${maxrss[$p]:-0} kB |"; done
# CPU per run: deltas of the snapshots (ticks → ms), per component.
awk -v n="$runs" -v ms="$secs" -v hz="$(getconf CLK_TCK)" '
	FNR == NR { own[$1 " " $2] = $3; kids[$1 " " $2] = $4; next }
	{ k = $1 " " $2; d = ($3 - own[k]) * 1000 / hz; c = ($4 - kids[k]) * 1000 / hz }
	$1 == "machine" { busy = d; idle = c; next }
	$1 == "postgres" { cpu["postgres"] += d + c; next }
	{ cpu[$1] += d; if ($1 ~ /^worker/) spawned += c }
	function per(x) { return n ? x / n : 0 }
	END {
		head = "postgres"; vals = sprintf("%.2f", per(cpu["postgres"])); all = cpu["postgres"] + spawned
		for (i = 0; ("control-" i) in cpu; i++) { head = head " / control-" i; vals = vals sprintf(" / %.2f", per(cpu["control-" i])); all += cpu["control-" i] }
		for (i = 0; ("worker-" i) in cpu; i++) { head = head " / worker-" i; vals = vals sprintf(" / %.2f", per(cpu["worker-" i])); all += cpu["worker-" i] }
		printf "| CPU per run, ms: %s / spawned processes / all | %s / %.2f / %.2f |\n", head, vals, per(spawned), per(all)
		printf "| CPU of postgres + replicas + workers + spawned, ms/s | %.0f (machine busy %.0f of %.0f, other load included) |\n", all * 1000 / ms, busy * 1000 / ms, (busy + idle) * 1000 / ms
	}' "$dir/cpu0" "$dir/cpu1"
