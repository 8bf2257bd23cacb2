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

# Go 1.26's fuzz coordinator can fail a target with a bare "context
# deadline exceeded" at the -fuzztime boundary (golang/go#75804: the
# deadline of the parent context is seen before the child's cancellation):
# no input failed and nothing is written. On 2 busy cores it hit the same
# target twice in a row, so a retry is not enough. Go 1.27 fixes the
# coordinator, so the fuzz binaries are built and run with FUZZ_TOOLCHAIN
# (default go1.27.3: the go command fetches it from the Go module proxy like
# a module, ~76 MB once) while the rest of the workspace stays on its own Go.
# Only when that toolchain cannot be had (offline, or FUZZ_TOOLCHAIN=local)
# does the run use the machine's Go, say so, and retry that exact shape up
# to twice; a real failure always writes a reproducer ("Failing input
# written") and fails at once.
fuzz_toolchain=${FUZZ_TOOLCHAIN:-go1.27.3}
deadline_retries=0
if [ "$fuzz_toolchain" != local ] && GOTOOLCHAIN=$fuzz_toolchain $go version >/dev/null 2>"$work/toolchain"; then
	export GOTOOLCHAIN=$fuzz_toolchain
else
	[ "$fuzz_toolchain" = local ] || { echo "warning: fuzz toolchain $fuzz_toolchain unavailable, fuzzing with $($go env GOVERSION) (deadline race retried):"; cat "$work/toolchain"; }
	deadline_retries=2
fi
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
		local tries=0
		until "${run[@]}" >"$log" 2>&1; do
			if [ "$tries" -lt "$deadline_retries" ] && deadline_flake "$log"; then
				tries=$((tries + 1))
				echo "   (fuzz coordinator deadline race, golang/go#75804: retry $tries of $name $target)" >>"$log.retry"
			else
				status=FAIL
				break
			fi
		done
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
echo "== fuzz: $ntargets targets, $fuzztime each, minimisation $minimize, $jobs packages at a time, $($go env GOVERSION)"

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
