#!/usr/bin/env bash
# takeover.sh — a claim-holding ql3-control replica is SIGSTOPped; every
# occurrence it held must be admitted exactly once by another replica (issue
# 16, ADR 0002 rule 5).
#
# It starts an ephemeral PostgreSQL server (unix socket only, data on
# tmpfs when available), builds ql3-control from this checkout (or from
# QL3_REF, a commit, to compare), migrates, creates TRIGGERS every-second
# triggers through the CLI and the admin API, and starts two replicas with
# the default scheduler settings (lease 30 s, budget 16, cadence 1 s,
# misfire skip with the default 30 s grace). It then SIGSTOPs replica A at
# short random moments until it is caught holding claims, records those
# claims (trigger, cursor), keeps A stopped for STOP_SECONDS (default 40),
# SIGCONTs it and prints, for the occurrences it held: how many became
# exactly one Run, none, or more; and over the whole run: duplicate
# occurrences (must be 0) and each replica's scheduler counters (logged at
# its stop).
#
#   scripts/chaos/takeover.sh
#   QL3_REF=8b546df scripts/chaos/takeover.sh      # the code before the fix
set -euo pipefail

die() { echo "takeover.sh: $*" >&2; exit 1; }

root=$(cd "$(dirname "$0")/../.." && pwd)
TRIGGERS=${TRIGGERS:-200}
STOP_SECONDS=${STOP_SECONDS:-40}
export PATH=$PATH:/usr/local/go/bin

bin=${QL3_PG_BIN:-}
if [ -z "$bin" ]; then
	bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5V | tail -n1 || true)
fi
[ -n "$bin" ] && [ -x "$bin/initdb" ] || die "PostgreSQL server binaries not found (apt-get install postgresql, or set QL3_PG_BIN)"
command -v jq >/dev/null || die "jq is required"

as_server=()
if [ "$(id -u)" -eq 0 ]; then
	pg_user=${QL3_PG_USER:-postgres}
	id "$pg_user" >/dev/null 2>&1 || die "running as root needs the unprivileged OS user '$pg_user' (QL3_PG_USER)"
	as_server=(runuser -u "$pg_user" --)
fi

base=${TMPDIR:-/tmp}
[ -d /dev/shm ] && [ -w /dev/shm ] && base=/dev/shm
dir=$(mktemp -d "$base/ql3chaos-XXXXXX")
[ ${#as_server[@]} -gt 0 ] && chown "$pg_user" "$dir"
chmod 711 "$dir"
pgpid="" apid="" bpid="" stopped=""
cleanup() {
	[ -n "$stopped" ] && kill -CONT "$apid" 2>/dev/null || true
	for p in $apid $bpid; do kill -TERM "$p" 2>/dev/null || true; done
	for p in $apid $bpid; do wait "$p" 2>/dev/null || true; done
	if [ -f "$dir/data/postmaster.pid" ]; then
		pgpid=$(head -n1 "$dir/data/postmaster.pid" 2>/dev/null || echo "$pgpid")
	fi
	if [ -n "$pgpid" ] && kill -0 "$pgpid" 2>/dev/null; then
		kill -INT "$pgpid" 2>/dev/null || true
		for _ in $(seq 1 300); do kill -0 "$pgpid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pgpid" 2>/dev/null || true
	fi
	[ -n "${worktree:-}" ] && git -C "$root" worktree remove --force "$worktree" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Build the binary (from QL3_REF if given).
src=$root
if [ -n "${QL3_REF:-}" ]; then
	worktree="$dir/src"
	git -C "$root" worktree add --detach "$worktree" "$QL3_REF" >/dev/null 2>&1 || die "cannot check out $QL3_REF"
	src=$worktree
fi
(cd "$src/controlplane" && go build -o "$dir/ql3-control" ./cmd/ql3-control) || die "build failed"
ctl="$dir/ql3-control"

"${as_server[@]}" "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C --no-sync --no-instructions \
	>"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
printf 'local all all trust\n' >"$dir/data/pg_hba.conf"
mkdir -p "$dir/sock"
chmod 777 "$dir/sock"
[ ${#as_server[@]} -gt 0 ] && chown -R "$pg_user" "$dir/data/pg_hba.conf"
"${as_server[@]}" "$bin/postgres" -D "$dir/data" -k "$dir/sock" -c listen_addresses= -c max_connections=100 \
	-c log_min_messages=warning >"$dir/postgres.log" 2>&1 &
pgpid=$!
for _ in $(seq 1 300); do
	"$bin/pg_isready" -q -h "$dir/sock" -U postgres && break
	sleep 0.1
done
"$bin/pg_isready" -q -h "$dir/sock" -U postgres || die "postgres did not start"
psql=("$bin/psql" -X -q -A -t -h "$dir/sock" -U postgres -v ON_ERROR_STOP=1)
"${psql[@]}" -d postgres -c 'CREATE DATABASE ql3'
psql+=(-d ql3)
dsn="host=$dir/sock user=postgres dbname=ql3 sslmode=disable"
export QL3_DSN=$dsn QL3_LOG_LEVEL=info
"$ctl" migrate >/dev/null

# Two replicas with the default scheduler settings.
"$ctl" serve --listen 127.0.0.1:0 >"$dir/a.log" 2>&1 &
apid=$!
"$ctl" serve --listen 127.0.0.1:0 >"$dir/b.log" 2>&1 &
bpid=$!
for _ in $(seq 1 100); do
	grep -q 'admin API listening' "$dir/a.log" && grep -q 'admin API listening' "$dir/b.log" && break
	sleep 0.1
done
addr=$(grep 'admin API listening' "$dir/b.log" | jq -r '.addr' | head -n1)
[ -n "$addr" ] || { cat "$dir/a.log" "$dir/b.log" >&2; die "replicas did not start"; }
export QL3_SERVER="http://$addr"
QL3_TOKEN=$("$ctl" token create --name chaos | tail -n1 | awk '{print $NF}')
export QL3_TOKEN

# Project, task and the triggers, through the admin API.
"$ctl" project create --name chaos >/dev/null
printf '{"kind":"qinglong/command@v1","shell":{"command":"true"},"concurrency":"allow"}' >"$dir/spec.json"
task=$("$ctl" task create --project chaos --name tick --spec-file "$dir/spec.json" --json | jq -r '.id')
[ -n "$task" ] && [ "$task" != null ] || die "task create failed"
for i in $(seq 1 "$TRIGGERS"); do
	"$ctl" trigger create --task "$task" --name "t$i" --expression '* * * * * *' >/dev/null
done
echo "# ql3 takeover chaos — $(date -u +%Y-%m-%dT%H:%MZ), $(git -C "$src" rev-parse --short HEAD), $TRIGGERS every-second triggers, 2 replicas, default scheduler settings"

# Let the fleet run, then catch replica A holding claims.
sleep 5
held=0
"${psql[@]}" -c "CREATE TABLE public.held AS SELECT trigger_id, next_fire_at_ms, claim_version
	FROM ql3.trigger_schedules WHERE false"
for try in $(seq 1 2000); do
	kill -STOP "$apid"
	stopped=1
	held=$("${psql[@]}" -c "WITH h AS (INSERT INTO public.held SELECT trigger_id, next_fire_at_ms, claim_version
		FROM ql3.trigger_schedules WHERE claim_owner LIKE '%-$apid-%' AND claim_token IS NOT NULL
		AND next_fire_at_ms IS NOT NULL RETURNING 1) SELECT count(*) FROM h")
	[ "$held" -gt 0 ] && break
	kill -CONT "$apid"
	stopped=""
	sleep "0.0$((RANDOM % 10))"
done
[ "$held" -gt 0 ] || die "replica A was never caught holding claims"
echo "replica A (pid $apid) stopped holding $held claims (after $try tries); stopped for ${STOP_SECONDS}s"
sleep "$STOP_SECONDS"
kill -CONT "$apid"
stopped=""
sleep 5
kill -TERM "$apid" "$bpid"
wait "$apid" "$bpid" 2>/dev/null || true
apid="" bpid=""

"${psql[@]}" -F ' ' -c "SELECT
	(SELECT count(*) FROM public.held h WHERE (SELECT count(*) FROM ql3.runs r WHERE r.trigger_id = h.trigger_id
		AND r.scheduled_for_ms = h.next_fire_at_ms) = 1),
	(SELECT count(*) FROM public.held h WHERE NOT EXISTS (SELECT 1 FROM ql3.runs r WHERE r.trigger_id = h.trigger_id
		AND r.scheduled_for_ms = h.next_fire_at_ms)),
	(SELECT count(*) FROM public.held h WHERE (SELECT count(*) FROM ql3.runs r WHERE r.trigger_id = h.trigger_id
		AND r.scheduled_for_ms = h.next_fire_at_ms) > 1),
	(SELECT count(*) FROM (SELECT 1 FROM ql3.runs GROUP BY trigger_id, trigger_revision, scheduled_for_ms HAVING count(*) > 1) d),
	(SELECT count(*) FROM ql3.runs)" | {
	read -r once none more dups total
	echo "held occurrences: $held — admitted exactly once: $once, never admitted: $none, more than once: $more"
	echo "whole run: $total Runs, duplicate occurrences: $dups"
}
for r in a b; do
	echo "replica $r: $(grep 'cluster scheduler stopped' "$dir/$r.log" | jq -r '.counters' | tail -n1)"
done
