#!/usr/bin/env bash
# Runs every Go fuzz target in the workspace for the given time each
# (default 5s). `make test` uses a short time as a smoke run; `make fuzz`
# a long one. Prints executions per target at the end.
set -euo pipefail
fuzztime=${1:-5s}
root=$(cd "$(dirname "$0")/.." && pwd)
summary=()
for mod in core worker edge controlplane; do
	[ -d "$root/$mod" ] || continue
	cd "$root/$mod"
	# package dir + target name for each "func FuzzXxx(" in a _test.go file
	while IFS= read -r line; do
		file=${line%%:*}
		target=$(sed -E 's/.*func (Fuzz[A-Za-z0-9_]+)\(.*/\1/' <<<"$line")
		pkg=./$(dirname "$file")
		pkg=${pkg%/.}
		echo "== fuzz $mod/${pkg#./} $target ($fuzztime)"
		out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" 2>&1) || { echo "$out"; exit 1; }
		execs=$(grep -oE 'execs: [0-9]+' <<<"$out" | tail -1 | awk '{print $2}')
		summary+=("$mod/${pkg#./} $target execs=${execs:-?}")
	done < <(grep -rE --include='*_test.go' -n '^func Fuzz[A-Za-z0-9_]+\(' . | sed -E 's/^\.\///' | sort)
done
echo "== fuzz summary"
printf '%s\n' "${summary[@]}"
