#!/usr/bin/env bash
# Runs every Go fuzz target in the workspace for the given time each
# (default 3s). `make test` uses a short time as a smoke run; `make fuzz` a
# long one. Ends with a table of executions per target and fails (exit 1,
# the failing target's output printed in full) if any target failed.
#
# Each package's fuzz-instrumented test binary is built once (packages one
# after another, so shared dependencies are compiled once) and runs its
# targets one after another as soon as it is ready; packages fuzz
# concurrently, FUZZ_JOBS at a time (default: the number of CPUs, at most 4),
# each target with one fuzzing worker.
# Minimisation of new inputs is bounded by count (FUZZ_MINIMIZE, default
# 100x): with Go's default (60 s per input) a 5 s smoke spent its whole
# budget minimising — FuzzDecodeOffer ran 7 executions (issue #13).
# The corpus found goes to the same cache `go test -fuzz` uses.
# FUZZ_ONLY=<regexp> limits the run to matching packages (e.g. core/spec).
set -euo pipefail
fuzztime=${1:-3s}
minimize=${FUZZ_MINIMIZE:-100x}
cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
jobs=${FUZZ_JOBS:-$((cpus < 4 ? cpus : 4))}
root=$(cd "$(dirname "$0")/.." && pwd)
go=${GO:-go}
work=$(mktemp -d "${TMPDIR:-/tmp}/ql3-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
fuzzcache="$($go env GOCACHE)/fuzz"

# Go 1.26's fuzz coordinator can report "context deadline exceeded" at the
# -fuzztime boundary when a worker is busy (golang/go#75804, fixed in
# 1.27): no input failed and nothing is written. Only that exact shape is
# retried, once; a real failure always writes a reproducer ("Failing input
# written") and fails at once.
deadline_flake() {
	grep -q 'context deadline exceeded' "$1" &&
		! grep -qE 'Failing input written|panic:|failure while testing seed corpus|_test\.go:[0-9]+:' "$1"
}

pkgname() { # module and package dir → "module/dir" as printed
	local name=${1}/${2#./}
	echo "${name%/.}"
}

# build_packages: build the fuzz-instrumented test binary of every package,
# one after another (each go command uses every CPU; two at once would
# compile the shared dependencies twice on a cold cache), printing
# "<module> <package dir> <import path or -> " as each is ready.
build_packages() {
	set +e
	local mod pkg name importpath
	while read -r mod pkg; do
		name=$(pkgname "$mod" "$pkg")
		cd "$root/$mod" || { echo "$mod $pkg -"; continue; }
		if importpath=$($go list -f '{{.ImportPath}}' "$pkg" 2>"$work/${name//\//_}.build") &&
			$go test -c -fuzz . -o "$work/${name//\//_}.test" "$pkg" >>"$work/${name//\//_}.build" 2>&1; then
			echo "$mod $pkg $importpath"
		else
			echo "$mod $pkg -"
		fi
	done < <(awk '{print $1, $2}' "$work/targets" | uniq)
}

# fuzz_package <module> <package dir> <import path or -> <targets...>: run
# each target from the package's binary; one result line per target in
# $work/results.
fuzz_package() {
	set +e # runs in the background: every outcome must reach $work/results
	local mod=$1 pkg=$2 importpath=$3
	shift 3
	local name id
	name=$(pkgname "$mod" "$pkg")
	id=${name//\//_}
	if [ "$importpath" = - ]; then
		for target in "$@"; do
			echo "$name $target - build-failed $work/$id.build" >>"$work/results"
		done
		return
	fi
	cd "$root/$mod/$pkg" || return
	for target in "$@"; do
		local log="$work/$id.$target.log" status=ok
		local run=("$work/$id.test" -test.run '^$' -test.fuzz "^${target}\$" -test.fuzztime "$fuzztime"
			-test.fuzzminimizetime "$minimize" -test.parallel 1 -test.paniconexit0 -test.fuzzcachedir "$fuzzcache/$importpath")
		if ! "${run[@]}" >"$log" 2>&1; then
			if deadline_flake "$log"; then
				echo "   (fuzz coordinator deadline race, golang/go#75804: retrying $name $target once)" >>"$log.retry"
				"${run[@]}" >"$log" 2>&1 || status=FAIL
			else
				status=FAIL
			fi
		fi
		local execs
		execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -1 | awk '{print $2}') || true
		echo "$name $target ${execs:-0} $status $log" >>"$work/results"
	done
}

# Discover targets: "module package target" per func FuzzXxx in a _test.go.
: >"$work/targets"
# Every module of go.work, so a new module's targets join without an edit.
mapfile -t modules < <(cd "$root" && $go work edit -json | grep -oE '"DiskPath": "[^"]+"' | sed -E 's/.*"\.\/([^"]+)"/\1/')
for mod in "${modules[@]}"; do
	[ -d "$root/$mod" ] || continue
	(cd "$root/$mod" && grep -rE --include='*_test.go' -n '^func Fuzz[A-Za-z0-9_]+\(' . |
		sed -E 's/^\.\///' |
		while IFS= read -r line; do
			file=${line%%:*}
			# A nested module (panel/browsertest inside panel) is its own entry.
			nested=
			for other in "${modules[@]}"; do
				case $other in "$mod"/*) [[ $file == "${other#"$mod"/}"/* ]] && nested=1 ;; esac
			done
			[ -z "$nested" ] || continue
			target=$(sed -E 's/.*func (Fuzz[A-Za-z0-9_]+)\(.*/\1/' <<<"$line")
			echo "$mod ./$(dirname "$file") $target"
		done) >>"$work/targets" || true # a module without targets: grep finds nothing
done
sort -o "$work/targets" "$work/targets"
if [ -n "${FUZZ_ONLY:-}" ]; then # e.g. FUZZ_ONLY=core/protocol: packages whose module/dir matches
	awk -v re="$FUZZ_ONLY" '{p = $1 "/" substr($2, 3); sub(/\/\.?$/, "", p)} p ~ re' "$work/targets" >"$work/only"
	mv "$work/only" "$work/targets"
fi
ntargets=$(wc -l <"$work/targets")
if [ "$ntargets" -eq 0 ]; then
	echo "FAIL: fuzz: no targets found${FUZZ_ONLY:+ matching $FUZZ_ONLY}"
	exit 1
fi
echo "== fuzz: $ntargets targets, $fuzztime each, minimisation $minimize, $jobs packages at a time"

: >"$work/results"
running=0
# Fuzz each package as soon as its binary is built, $jobs packages at a time.
while read -r mod pkg importpath; do
	mapfile -t targets < <(awk -v m="$mod" -v p="$pkg" '$1 == m && $2 == p {print $3}' "$work/targets")
	fuzz_package "$mod" "$pkg" "$importpath" "${targets[@]}" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait -n || true # failures are in $work/results; a missing result is caught below
		running=$((running - 1))
	fi
done < <(build_packages)
wait || true

failed=0
echo "== fuzz summary (executions in $fuzztime per target)"
printf '%-28s %-34s %12s  %s\n' PACKAGE TARGET EXECS RESULT
sort "$work/results" | while read -r name target execs status log; do
	note=
	[ "$status" = ok ] && [ "$execs" = 0 ] && note="  (no executions: the smoke did not fuzz this target)"
	printf '%-28s %-34s %12s  %s%s\n' "$name" "$target" "$execs" "$status" "$note"
done
while read -r name target execs status log; do
	if [ "$status" != ok ]; then
		failed=1
		echo
		echo "== $status: $name $target"
		cat "$log"
	fi
done < <(sort "$work/results")
cat "$work"/*.retry 2>/dev/null || true
if [ "$(wc -l <"$work/results")" -ne "$ntargets" ]; then
	echo "fuzz: $(wc -l <"$work/results") results for $ntargets targets"
	failed=1
fi
if [ "$failed" -ne 0 ]; then
	echo "FAIL: fuzz smoke"
	exit 1
fi
echo "ok: $ntargets fuzz targets"
