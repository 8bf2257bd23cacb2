#!/usr/bin/env bash
# soak.sh — chaos soak of a whole cluster through its real binaries (issue #12):
# 3 ql3-control replicas, 3 ql3-worker (node profile, mTLS), TRIGGERS
# every-second triggers for DURATION seconds (≥ 10,000 occurrences with the
# defaults), while a bounded chaos loop SIGKILLs random replicas and workers
# (restarting them), terminates every ql3 backend (pg_terminate_backend) and
# restarts PostgreSQL once. Then the triggers are disabled, the cluster
# settles, and the database answers:
#   occurrences due vs Runs per trigger (missing beyond the misfire policy,
#   duplicates), Runs by status, Runs in flight, Runs `running` without a
#   live lease.
# Not a test (not in make test): it prints figures; exit 1 when a
# duplicate or a stuck Run is found.
#
#   scripts/chaos/soak.sh                         # TRIGGERS=20 DURATION=540
#   TRIGGERS=5 DURATION=60 scripts/chaos/soak.sh  # a short smoke
set -euo pipefail

die() { echo "soak: $*" >&2; exit 1; }
root=$(cd "$(dirname "$0")/../.." && pwd)
TRIGGERS=${TRIGGERS:-20}
DURATION=${DURATION:-540}
SETTLE=${SETTLE:-75}
export PATH=$PATH:/usr/local/go/bin
command -v jq >/dev/null || die "jq is required"

bin=${QL3_PG_BIN:-}
[ -n "$bin" ] || bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5V | tail -n1 || true)
[ -n "$bin" ] && [ -x "$bin/initdb" ] || die "PostgreSQL server binaries not found (set QL3_PG_BIN)"
as_server=()
if [ "$(id -u)" -eq 0 ]; then
	pg_user=${QL3_PG_USER:-postgres}
	as_server=(setpriv --reuid="$(id -u "$pg_user")" --regid="$(id -g "$pg_user")" --init-groups --)
fi

base=${TMPDIR:-/tmp}
dir=$(mktemp -d "$base/ql3soak-XXXXXX")
chmod 711 "$dir"
declare -A cpid wpid
pgpid=""
stop_pg() {
	[ -f "$dir/pg/data/postmaster.pid" ] && pgpid=$(head -n1 "$dir/pg/data/postmaster.pid" 2>/dev/null || echo "$pgpid")
	if [ -n "$pgpid" ] && kill -0 "$pgpid" 2>/dev/null; then
		kill -INT "$pgpid" 2>/dev/null || true
		for _ in $(seq 1 300); do kill -0 "$pgpid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pgpid" 2>/dev/null || true
	fi
}
cleanup() {
	for p in "${wpid[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${wpid[@]}"; do for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done; kill -KILL "$p" 2>/dev/null || true; done
	for p in "${cpid[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${cpid[@]}"; do for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done; kill -KILL "$p" 2>/dev/null || true; done
	stop_pg
	[ -n "${KEEP:-}" ] && echo "kept $dir" || rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

(cd "$root/controlplane" && go build -o "$dir/ql3-control" ./cmd/ql3-control) || die "build failed"
(cd "$root/worker" && CGO_ENABLED=0 go build -o "$dir/ql3-worker" ./cmd/ql3-worker) || die "build failed"
ctl="$dir/ql3-control" wkr="$dir/ql3-worker"

mkdir -p "$dir/pg/sock"
[ ${#as_server[@]} -gt 0 ] && chown -R "$pg_user" "$dir/pg"
"${as_server[@]}" "$bin/initdb" -D "$dir/pg/data" -U postgres -A trust -E UTF8 --locale=C --no-sync --no-instructions \
	>"$dir/pg/initdb.log" 2>&1 || { cat "$dir/pg/initdb.log" >&2; die "initdb failed"; }
chmod 777 "$dir/pg/sock"
start_pg() {
	"${as_server[@]}" "$bin/postgres" -D "$dir/pg/data" -k "$dir/pg/sock" -c listen_addresses= -c fsync=off \
		-c synchronous_commit=off -c max_connections=200 -c log_min_messages=warning >>"$dir/pg/postgres.log" 2>&1 &
	pgpid=$!
	for _ in $(seq 1 300); do "$bin/pg_isready" -q -h "$dir/pg/sock" -U postgres && return 0; sleep 0.1; done
	die "postgres did not start"
}
start_pg
psql=("$bin/psql" -X -q -A -t -h "$dir/pg/sock" -U postgres -v ON_ERROR_STOP=1)
"${psql[@]}" -d postgres -c 'CREATE DATABASE ql3'
psql+=(-d ql3)
export QL3_DSN="host=$dir/pg/sock user=postgres dbname=ql3 sslmode=disable" QL3_LOG_LEVEL=info
"$ctl" migrate >/dev/null 2>&1 || die "migrate failed"
pki="$dir/pki"
"$ctl" pki init --dir "$pki" >/dev/null
"$ctl" pki issue-server --dir "$pki" --host 127.0.0.1 >/dev/null

# Fixed ports (a restarted replica keeps its ingress address for its worker).
port0=$((20000 + RANDOM % 20000))
start_control() { # i
	local i=$1
	"$ctl" serve --listen "127.0.0.1:$((port0 + 2 * i))" --ingress-listen "127.0.0.1:$((port0 + 2 * i + 1))" \
		--ingress-tls-cert "$pki/ingress.crt" --ingress-tls-key "$pki/ingress.key" --ingress-client-ca "$pki/ca.crt" \
		--scheduler-budget 64 >>"$dir/control-$i.log" 2>&1 &
	cpid[$i]=$!
}
for i in 0 1 2; do start_control "$i"; done
for _ in $(seq 1 300); do
	[ "$(cat "$dir"/control-*.log | grep -c 'admin API listening' || true)" -ge 3 ] && break
	sleep 0.1
done
export QL3_SERVER="http://127.0.0.1:$port0"
QL3_TOKEN=$("$ctl" token create --name soak 2>/dev/null | tail -n1 | awk '{print $NF}')
export QL3_TOKEN
# cli: any live replica's admin API.
cli() {
	local i
	for i in 0 1 2; do
		QL3_SERVER="http://127.0.0.1:$((port0 + 2 * i))" "$ctl" "$@" 2>/dev/null && return 0
	done
	return 1
}

start_worker() { # i
	local i=$1
	QL3_INGRESS_URL="https://127.0.0.1:$((port0 + 2 * i + 1))" QL3_CREDENTIAL_FILE="$pki/workers/w$i/credential" \
		QL3_CERT_FILE="$pki/workers/w$i/client.crt" QL3_KEY_FILE="$pki/workers/w$i/client.key" \
		QL3_CA_FILE="$pki/workers/w$i/ca.crt" QL3_STATE_DIR="$dir/w$i" QL3_PROFILE=node QL3_CAPACITY=16 \
		"$wkr" >>"$dir/w$i.log" 2>&1 &
	wpid[$i]=$!
}
for i in 0 1 2; do
	identity=$("$ctl" pki issue-worker --dir "$pki" --name "w$i" 2>/dev/null)
	cli worker register --name "w$i" --tls-identity "$identity" >/dev/null
	cli worker issue-credential --id "w$i" --credential-file "$pki/workers/w$i/credential" >/dev/null
	mkdir -m 0700 "$dir/w$i"
	start_worker "$i"
done

cli project create --name soak >/dev/null
printf '{"kind":"qinglong/command@v1","shell":{"command":"true"},"concurrency":"allow"}' >"$dir/spec.json"
# One task per trigger: a task refuses two triggers firing at the same instants.
declare -a trig task
for i in $(seq 1 "$TRIGGERS"); do
	task[$i]=$(cli task create --project soak --name "tick-$i" --spec-file "$dir/spec.json" --json | jq -r '.id')
	trig[$i]=$(cli trigger create --task "${task[$i]}" --name "t$i" --expression '* * * * * *' --json | jq -r '.id')
done
echo "# ql3 chaos soak — $(date -u +%Y-%m-%dT%H:%MZ), $(git -C "$root" rev-parse --short HEAD), $TRIGGERS every-second triggers for ${DURATION}s, 3 replicas, 3 workers"

# Chaos: every 8–20 s one action; PostgreSQL restarts once at the midpoint.
t0=$(date +%s)
kills_cp=0 kills_w=0 terms=0 pgrestarts=0
while [ $(( $(date +%s) - t0 )) -lt "$DURATION" ]; do
	sleep $((8 + RANDOM % 13))
	el=$(( $(date +%s) - t0 ))
	if [ "$pgrestarts" -eq 0 ] && [ "$el" -ge $((DURATION / 2)) ]; then
		echo "[$el s] PostgreSQL restart (fast shutdown, start)"
		stop_pg; start_pg; pgrestarts=$((pgrestarts + 1))
		continue
	fi
	case $((RANDOM % 3)) in
	0)
		i=$((RANDOM % 3)); echo "[$el s] SIGKILL replica $i"
		kill -KILL "${cpid[$i]}" 2>/dev/null || true; wait "${cpid[$i]}" 2>/dev/null || true
		sleep $((1 + RANDOM % 4)); start_control "$i"; kills_cp=$((kills_cp + 1)) ;;
	1)
		i=$((RANDOM % 3)); echo "[$el s] SIGKILL worker $i"
		kill -KILL "${wpid[$i]}" 2>/dev/null || true; wait "${wpid[$i]}" 2>/dev/null || true
		sleep $((1 + RANDOM % 3)); start_worker "$i"; kills_w=$((kills_w + 1)) ;;
	2)
		n=$("${psql[@]}" -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = 'ql3' AND pid <> pg_backend_pid()" 2>/dev/null || echo "?")
		echo "[$el s] pg_terminate_backend: $n ql3 backends"; terms=$((terms + 1)) ;;
	esac
done
end_ms=$("${psql[@]}" -c "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint")
for i in $(seq 1 "$TRIGGERS"); do
	cli trigger update --task "${task[$i]}" --id "${trig[$i]}" --expected-revision 1 --expression '* * * * * *' --disabled >/dev/null ||
		echo "could not disable trigger t$i"
done
echo "chaos over: $kills_cp replica kills, $kills_w worker kills, $terms backend terminations, $pgrestarts PostgreSQL restart; triggers disabled; settling ${SETTLE}s"
sleep "$SETTLE"

q() { "${psql[@]}" -c "$1"; }
echo "== occurrences vs Runs (per trigger: seconds from its first to its last occurrence)"
read -r due runs missing <<<"$(q "SELECT coalesce(sum(due), 0) || ' ' || coalesce(sum(runs), 0) || ' ' || coalesce(sum(due - runs), 0) FROM (
	SELECT (max(scheduled_for_ms) - min(scheduled_for_ms)) / 1000 + 1 AS due, count(DISTINCT scheduled_for_ms) AS runs
	FROM ql3.runs WHERE trigger_id IS NOT NULL GROUP BY trigger_id) t")"
echo "$due due, $runs runs, $missing missing"
dups=$(q "SELECT count(*) FROM (SELECT 1 FROM ql3.runs WHERE trigger_id IS NOT NULL GROUP BY trigger_id, scheduled_for_ms HAVING count(*) > 1) d")
echo "duplicate Runs (same trigger and occurrence): $dups"
echo "== Runs by status"
q "SELECT status || ': ' || count(*) FROM ql3.runs GROUP BY status ORDER BY status"
echo "== attempts by status / error class"
q "SELECT status || coalesce(' (' || error_class || ')', '') || ': ' || count(*) FROM ql3.attempts GROUP BY status, error_class ORDER BY status, error_class"
inflight=$(q "SELECT count(*) FROM ql3.runs WHERE status NOT IN ('succeeded','failed','cancelled','timed_out','lost','skipped')")
stuck=$(q "SELECT count(*) FROM ql3.runs r WHERE r.status = 'running' AND NOT EXISTS (SELECT 1 FROM ql3.run_leases l
	WHERE l.run_id = r.run_id AND l.status = 'leased' AND l.expires_at_ms > (extract(epoch FROM clock_timestamp()) * 1000)::bigint)")
echo "Runs in flight after settling: $inflight; Runs running without a live lease: $stuck"
last=$(q "SELECT coalesce(max(scheduled_for_ms), 0) FROM ql3.runs WHERE trigger_id IS NOT NULL")
echo "last occurrence with a Run: $(( (end_ms - last) / 1000 )) s before the triggers were disabled"
cleanup_report() {
	# Missed occurrences the schedulers counted (misfire policy skip): the
	# counters are logged when a replica stops, so stop them first (the
	# workers before them, so they drain while an ingress still answers).
	for p in "${wpid[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${wpid[@]}"; do for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done; done
	for p in "${cpid[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${cpid[@]}"; do for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done; done
	local counted
	counted=$({ grep -ho 'missed_occurrences=[0-9]*' "$dir"/control-*.log || true; } | awk -F= '{s+=$2} END {print s+0}')
	echo "missed occurrences counted by the schedulers (clean stops only): $counted"
	# A SIGKILLed replica never logs its count, so this can only overstate.
	echo "missing beyond the misfire policy (missing - counted): $(( missing > counted ? missing - counted : 0 ))"
}
cleanup_report
[ "$dups" -eq 0 ] && [ "$stuck" -eq 0 ] || { KEEP=1; die "duplicates or stuck Runs (kept $dir)"; }
