#!/usr/bin/env bash
# scripts/bench/edge.sh — ql3-edge footprint and scheduling figures.
#
# Reports, against the goals of issue 3:
#   1. stripped binary size for linux/amd64 and linux/arm64   (goal <= 16 MiB)
#   2. idle RSS of `ql3-edge serve` holding 1,000 triggers     (goal <= 16 MiB)
#   3. fire lag p50/p99 of the running server: run created_at - scheduled_for
#      over LAG_TASKS every-second triggers for LAG_SECONDS    (goal p99 <= 20 ms)
#   4. admissions/s of the scheduler + SQLite store (BenchmarkAdmission in
#      edge/scheduler: a round's admissions in one group commit, ADR 0065;
#      each a cursor CAS + run + attempt + events in its own savepoint)
#                                                              (goal >= 2,000/s)
#   5. raw SQLite single-row WAL transactions with the edge's pragmas, same
#      run, and the admissions' ratio to them               (goal >= 0.25)
# Loopback only, temporary data directory, bounded (about a minute), and it
# stops the server it started on exit.
#
# Usage: scripts/bench/edge.sh            (from the repository root)
# Env:   IDLE_SECONDS (10), LAG_TASKS (10), LAG_SECONDS (20), ADMIT_ITERS (40), RAW_ITERS (20000),
#        BENCH_ZONE (Europe/London): time zone of the 1,000 idle triggers
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
IDLE_SECONDS=${IDLE_SECONDS:-10}
LAG_TASKS=${LAG_TASKS:-10}
LAG_SECONDS=${LAG_SECONDS:-20}
ADMIT_ITERS=${ADMIT_ITERS:-40}
RAW_ITERS=${RAW_ITERS:-20000}
BENCH_ZONE=${BENCH_ZONE:-Europe/London}
TRIGGERS=1000
PER_TASK=10 # inline triggers per create request (API limit 16)

for tool in go curl jq; do
	command -v "$tool" >/dev/null || { echo "edge.sh: $tool is required" >&2; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ql3-edge-bench.XXXXXX")
SERVER_PID=""
cleanup() {
	if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -TERM "$SERVER_PID" 2>/dev/null || true
		for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$SERVER_PID" 2>/dev/null || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

mib() { awk -v b="$1" 'BEGIN { printf "%.2f", b / 1048576 }'; }
verdict() { awk -v v="$1" -v goal="$2" -v dir="$3" 'BEGIN { ok = (dir == "<=") ? (v <= goal) : (v >= goal); print ok ? "ok" : "MISSED" }'; }

echo "== ql3-edge benchmark ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(go version | awk '{print $3}'), $(nproc) CPUs)"

# 1. Stripped binary sizes.
for arch in amd64 arm64; do
	(cd "$ROOT/edge" && CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -tags nethttpomithttp2 -ldflags '-s -w' -o "$WORK/ql3-edge-$arch" ./cmd/ql3-edge)
	size=$(stat -c %s "$WORK/ql3-edge-$arch")
	printf "binary size linux/%-5s  %6s MiB   (goal <= 16 MiB: %s)\n" "$arch" "$(mib "$size")" "$(verdict "$(mib "$size")" 16 "<=")"
done
HOST_BIN="$WORK/ql3-edge-$(go env GOARCH)"
[ -x "$HOST_BIN" ] || { echo "edge.sh: no binary for the host architecture" >&2; exit 1; }

# 2. Idle RSS with 1,000 triggers.
DATA="$WORK/data"
"$HOST_BIN" serve --data-dir "$DATA" --listen 127.0.0.1:0 --log-level warn >"$WORK/stdout" 2>"$WORK/stderr" &
SERVER_PID=$!
BASE=""
for _ in $(seq 1 100); do
	BASE=$(sed -n 's|.*API and panel: \(http://[^/ ]*\)/.*|\1|p' "$WORK/stdout" | head -n1)
	[ -n "$BASE" ] && break
	kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/stderr" >&2; exit 1; }
	sleep 0.1
done
[ -n "$BASE" ] || { echo "edge.sh: server did not start" >&2; exit 1; }
case "$BASE" in http://127.0.0.1:*) ;; *) echo "edge.sh: refusing non-loopback $BASE" >&2; exit 1;; esac
TOKEN=$(cat "$DATA/admin.token")
api() { curl -sS --fail-with-body --max-time 10 -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' "$@"; }

start=$(date +%s%N)
for t in $(seq 1 $((TRIGGERS / PER_TASK))); do
	# Ten triggers per task, each firing once a year at a different minute:
	# schedules exist and are initialised, but nothing fires while idle.
	triggers=$(jq -nc --argjson t "$t" --argjson n "$PER_TASK" --arg zone "$BENCH_ZONE" \
		'[range(0; $n) | {expression: "\(.) \($t % 24) 1 1 *", timeZone: $zone}]')
	api -o /dev/null -X POST "$BASE/api/v1/tasks" \
		-d "{\"name\":\"idle-$t\",\"spec\":{\"kind\":\"qinglong/command@v1\",\"argv\":{\"file\":\"true\"}},\"triggers\":$triggers}"
done
created_ms=$(( ($(date +%s%N) - start) / 1000000 ))
count=0
cursor=""
while :; do
	page=$(api "$BASE/api/v1/tasks?limit=200&cursor=$cursor")
	for id in $(echo "$page" | jq -r '.items[].id'); do
		count=$((count + $(api "$BASE/api/v1/tasks/$id/triggers" | jq '.items | length')))
	done
	cursor=$(echo "$page" | jq -r '.nextCursor // empty')
	[ -z "$cursor" ] && break
done
echo "created $count triggers ($BENCH_ZONE) in $((TRIGGERS / PER_TASK)) requests (${created_ms} ms); idling ${IDLE_SECONDS}s"
sleep "$IDLE_SECONDS"
rss_kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$SERVER_PID/status")
hwm_kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$SERVER_PID/status")
anon_kb=$(awk '/^RssAnon:/ {print $2}' "/proc/$SERVER_PID/status")
file_kb=$(awk '/^RssFile:/ {print $2}' "/proc/$SERVER_PID/status")
rss=$(mib $((rss_kb * 1024)))
printf "idle RSS, 1,000 triggers     %6s MiB   (anon %s, file-backed %s, peak %s MiB; goal <= 16 MiB: %s)\n" "$rss" \
	"$(mib $((anon_kb * 1024)))" "$(mib $((file_kb * 1024)))" "$(mib $((hwm_kb * 1024)))" "$(verdict "$rss" 16 "<=")"

# 3. Fire lag on the running server (the 1,000 idle triggers stay loaded).
for t in $(seq 1 "$LAG_TASKS"); do
	api -o /dev/null -X POST "$BASE/api/v1/tasks" \
		-d "{\"name\":\"lag-$t\",\"spec\":{\"kind\":\"qinglong/command@v1\",\"argv\":{\"file\":\"true\"},\"concurrency\":\"allow\"},\"triggers\":[{\"expression\":\"* * * * * *\"}]}"
done
sleep "$LAG_SECONDS"
for t in $(seq 1 "$LAG_TASKS"); do api -o /dev/null -X POST "$BASE/api/v1/tasks/lag-$t/disable"; done
lags="$WORK/lags"
: >"$lags"
cursor=""
while :; do
	page=$(api "$BASE/api/v1/runs?limit=200&cursor=$cursor")
	echo "$page" | jq -r '.items[] | select(.origin == "schedule") | .createdAtMs - .scheduledForMs' >>"$lags"
	cursor=$(echo "$page" | jq -r '.nextCursor // empty')
	[ -z "$cursor" ] && break
done
n=$(wc -l <"$lags")
[ "$n" -gt 0 ] || { echo "edge.sh: no scheduled runs were admitted" >&2; exit 1; }
sort -n "$lags" -o "$lags"
p50=$(awk -v n="$n" 'NR == int(n * 0.50) + 1 { print; exit }' "$lags")
p99=$(awk -v n="$n" 'NR == int(n * 0.99) + 1 { print; exit }' "$lags")
pmax=$(tail -n1 "$lags")
printf "fire lag (%d runs)           p50 %s ms, p99 %s ms, max %s ms   (goal p99 <= 20 ms: %s)\n" "$n" "$p50" "$p99" "$pmax" "$(verdict "$p99" 20 "<=")"
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=""

# 4. Admissions per second (scheduler rounds over the SQLite store).
out=$(cd "$ROOT/edge" && go test -run '^$' -bench '^BenchmarkAdmission$' -benchtime "${ADMIT_ITERS}x" ./scheduler/)
rate=$(echo "$out" | awk '/BenchmarkAdmission/ { for (i = 1; i <= NF; i++) if ($(i+1) == "admissions/s") print $i }')
[ -n "$rate" ] || { echo "$out" >&2; echo "edge.sh: no admissions/s figure" >&2; exit 1; }
printf "admissions/s                 %6.0f       (goal >= 2,000/s: %s)\n" "$rate" "$(verdict "$rate" 2000 ">=")"

# 5. Same-run baseline (issue #28): raw SQLite single-row transactions with
#    the edge writer's pragmas (BenchmarkRawSingleRowTx in edge/sqlite), and
#    the admissions' ratio to it.
out=$(cd "$ROOT/edge" && go test -run '^$' -bench '^BenchmarkRawSingleRowTx$' -benchtime "${RAW_ITERS}x" ./sqlite/)
raw=$(echo "$out" | awk '/BenchmarkRawSingleRowTx/ { for (i = 1; i <= NF; i++) if ($(i+1) == "tx/s") print $i }')
[ -n "$raw" ] || { echo "$out" >&2; echo "edge.sh: no raw tx/s figure" >&2; exit 1; }
ratio=$(awk -v a="$rate" -v r="$raw" 'BEGIN { printf "%.3f", a / r }')
printf "raw SQLite single-row tx/s   %6.0f       (WAL, synchronous NORMAL, one writer)\n" "$raw"
printf "admissions / raw tx          %6s       (goal >= 0.25: %s)\n" "$ratio" "$(verdict "$ratio" 0.25 ">=")"
