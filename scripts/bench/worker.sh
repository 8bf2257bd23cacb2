#!/bin/sh
# Figures for ql3-worker (issue #11, ADR 0020), against the fake ingress
# (worker/internal/fakeingress/cmd/fakeingress) on loopback with real mTLS:
#   1. stripped size per target (make cross; SKIP_CROSS=1 reuses dist/)
#   2. idle RSS (VmRSS, VmHWM) and CPU per heartbeat on this machine (amd64)
#   3. RSS while one task runs
#   4. log upload throughput (a 16 MiB task output, node profile)
# Usage: scripts/bench/worker.sh [idle seconds, default 60]
# Not a test: it prints numbers; read them as figures of this machine.
set -eu
IDLE=${1:-60}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GO=${GO:-go}
WORK=$(mktemp -d)
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

if [ "${SKIP_CROSS:-}" = "" ]; then
	echo "== 1. stripped sizes (make cross)"
	make -s -C "$ROOT" cross
else
	echo "== 1. stripped sizes (SKIP_CROSS: dist/ as built before)"
	for f in "$ROOT"/dist/ql3-worker-*; do printf '%-40s %12d\n' "$(basename "$f")" "$(wc -c < "$f")"; done
fi

echo "== building amd64 worker and the fake ingress"
(cd "$ROOT/worker" && CGO_ENABLED=0 $GO build -trimpath -tags nethttpomithttp2 -ldflags '-s -w' -o "$WORK/ql3-worker" ./cmd/ql3-worker)
(cd "$ROOT/worker" && $GO build -o "$WORK/fakeingress" ./internal/fakeingress/cmd/fakeingress)
TCK=$(getconf CLK_TCK)

# start_pair NAME PROFILE [fake args...]: a fake ingress and a worker.
start_pair() {
	name=$1; profile=$2; shift 2
	mkdir -p "$WORK/$name"
	"$WORK/fakeingress" -dir "$WORK/$name" -heartbeat-ms 5000 "$@" > "$WORK/$name/requests.log" 2> "$WORK/$name/fake.err" &
	PIDS="$PIDS $!"
	i=0; while [ ! -s "$WORK/$name/env" ]; do i=$((i+1)); [ $i -gt 200 ] && { echo "fake ingress did not start"; cat "$WORK/$name/fake.err"; exit 1; }; sleep 0.05; done
	mkdir -m 0700 "$WORK/$name/state"
	env $(cat "$WORK/$name/env") QL3_STATE_DIR="$WORK/$name/state" QL3_PROFILE="$profile" QL3_LOG_LEVEL=warn \
		"$WORK/ql3-worker" > "$WORK/$name/worker.out" 2> "$WORK/$name/worker.err" &
	WPID=$!
	PIDS="$PIDS $WPID"
}
rss() { awk '/^VmRSS/ {r=$2} /^VmHWM/ {h=$2} END {printf "VmRSS %d kB, VmHWM %d kB", r, h}' "/proc/$1/status"; }
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
count() { grep -c " $2 200 " "$1" || true; }
count_any() { grep -c " $2 " "$1" || true; }

echo "== 2. idle (router profile, heartbeat 5 s, ${IDLE} s)"
start_pair idle router
sleep 5
t0=$(cpu_ticks "$WPID"); h0=$(count "$WORK/idle/requests.log" /v1/sessions/heartbeat); p0=$(count_any "$WORK/idle/requests.log" /v1/offers/pull)
sleep "$IDLE"
t1=$(cpu_ticks "$WPID"); h1=$(count "$WORK/idle/requests.log" /v1/sessions/heartbeat); p1=$(count_any "$WORK/idle/requests.log" /v1/offers/pull)
echo "idle worker: $(rss "$WPID")"
awk -v t=$((t1-t0)) -v tck="$TCK" -v h=$((h1-h0)) -v p=$((p1-p0)) -v s="$IDLE" 'BEGIN {
	ms = t*1000/tck
	printf "idle CPU: %.0f ms over %d s (%.2f%% of one core); %d heartbeats, %d idle pulls\n", ms, s, ms/(s*10), h, p
	if (h > 0) printf "CPU per heartbeat (all idle CPU / heartbeats, pulls included): %.1f ms\n", ms/h }'
kill "$WPID"; wait "$WPID" 2>/dev/null || true

echo "== 3. one running task (sleep 20)"
start_pair task router -run "t1=sleep 20"
i=0; while [ "$(count "$WORK/task/requests.log" /v1/leases/ack)" -lt 2 ]; do i=$((i+1)); [ $i -gt 400 ] && { echo "task never started"; cat "$WORK/task/worker.err"; exit 1; }; sleep 0.05; done
max=0
for _ in 1 2 3 4 5 6 7 8 9 10; do
	r=$(awk '/^VmRSS/ {print $2}' "/proc/$WPID/status"); [ "$r" -gt "$max" ] && max=$r; sleep 1
done
echo "worker while one task runs: max VmRSS ${max} kB over 10 s; $(rss "$WPID")"
kill "$WPID"; wait "$WPID" 2>/dev/null || true

echo "== 4. log upload (16 MiB of task output, node profile)"
start_pair logs node -run "big=head -c 16777216 /dev/zero | tr '\\000' x"
i=0; while [ "$(count "$WORK/logs/requests.log" /v1/leases/complete)" -lt 1 ]; do i=$((i+1)); [ $i -gt 2400 ] && { echo "no completion within 120 s"; tail "$WORK/logs/worker.err"; exit 1; }; sleep 0.05; done
awk '$2 == "/v1/leases/log" && $3 == 200 { if (!f) f=$1; l=$1; n++ } $2 == "/v1/leases/complete" {c=$1}
	END { dt=(l-f)/1000; printf "%d log chunks in %.2f s: %.1f MiB/s; completion %d ms after the last chunk\n", n, dt, (dt>0 ? 16/dt : 0), c-l }' "$WORK/logs/requests.log"
echo "worker after the upload: $(rss "$WPID")"
kill "$WPID"; wait "$WPID" 2>/dev/null || true

echo "== 5. log upload (4 MiB = the spool cap, router profile with its 6 MiB soft memory limit)"
start_pair rlogs router -run "big=head -c 4194304 /dev/zero | tr '\\000' y"
i=0; while [ "$(count "$WORK/rlogs/requests.log" /v1/leases/complete)" -lt 1 ]; do i=$((i+1)); [ $i -gt 2400 ] && { echo "no completion within 120 s"; tail "$WORK/rlogs/worker.err"; exit 1; }; sleep 0.05; done
awk '$2 == "/v1/leases/log" && $3 == 200 { if (!f) f=$1; l=$1; n++ }
	END { dt=(l-f)/1000; printf "%d log chunks in %.2f s: %.1f MiB/s\n", n, dt, (dt>0 ? 4/dt : 0) }' "$WORK/rlogs/requests.log"
echo "worker after the upload: $(rss "$WPID")"
