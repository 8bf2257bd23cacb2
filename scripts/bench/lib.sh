# lib.sh — sourced by the PostgreSQL benchmarks (admission.sh, dispatch.sh,
# sweep.sh, serialization.sh): one ephemeral server from local binaries,
# data on tmpfs when available unless QL3_BENCH_DATA_DIR says otherwise,
# default durability settings; stopped and removed on exit; and the same-run
# pgbench -N baseline the benchmarks report their ratios to.
#
# The caller runs under `set -euo pipefail` and defines die() first.
# Environment: QL3_PG_BIN (server binaries; default the highest
# /usr/lib/postgresql/*/bin), QL3_PG_USER (the OS user the server runs as
# when the script runs as root; default postgres), QL3_BENCH_DATA_DIR.

# bench_pg_start PREFIX [postgres -c settings…] starts the server and sets:
# bin (the server binaries), base (where its data lives), dir (a new
# directory PREFIX-XXXXXX there), sock ($dir/sock, the only way in: no TCP),
# pglog ($dir/log/postgres.log) and psql (an array: psql as the superuser,
# stopping on the first error). It installs the EXIT trap that stops the
# server and removes $dir.
bench_pg_start() {
	local prefix=$1
	shift
	bin=${QL3_PG_BIN:-}
	if [ -z "$bin" ]; then
		bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5V | tail -n1 || true)
	fi
	[ -n "$bin" ] && [ -x "$bin/initdb" ] && [ -x "$bin/postgres" ] ||
		die "PostgreSQL server binaries not found (apt-get install postgresql, or set QL3_PG_BIN)"

	# initdb and postgres refuse to run as root.
	as_server=()
	if [ "$(id -u)" -eq 0 ]; then
		pg_user=${QL3_PG_USER:-postgres}
		id "$pg_user" >/dev/null 2>&1 || die "running as root needs the unprivileged OS user '$pg_user' (QL3_PG_USER)"
		as_server=(runuser -u "$pg_user" --)
	fi

	# QL3_BENCH_DATA_DIR puts the server's data elsewhere (e.g. on disk, to
	# include real fsync cost in both the baseline and the measured case).
	base=${TMPDIR:-/tmp}
	[ -d /dev/shm ] && [ -w /dev/shm ] && base=/dev/shm
	base=${QL3_BENCH_DATA_DIR:-$base}
	dir=$(mktemp -d "$base/$prefix-XXXXXX")
	[ ${#as_server[@]} -gt 0 ] && chown "$pg_user" "$dir"
	chmod 700 "$dir"
	pid=""
	trap bench_pg_cleanup EXIT
	trap 'exit 130' INT TERM

	"${as_server[@]}" "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C --no-sync --no-instructions \
		>"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
	printf 'local all all trust\n' >"$dir/data/pg_hba.conf"
	sock=$dir/sock pglog=$dir/log/postgres.log
	mkdir -p "$sock" "$dir/log"
	[ ${#as_server[@]} -gt 0 ] && chown -R "$pg_user" "$sock" "$dir/log" "$dir/data/pg_hba.conf"
	"${as_server[@]}" "$bin/postgres" -D "$dir/data" -k "$sock" -c listen_addresses= -c max_connections=100 \
		-c shared_buffers=256MB -c log_min_messages=warning "$@" >"$pglog" 2>&1 &
	pid=$!
	disown "$pid" 2>/dev/null || true
	for _ in $(seq 1 300); do
		"$bin/pg_isready" -q -h "$sock" -U postgres && break
		kill -0 "$pid" 2>/dev/null || { cat "$pglog" >&2; die "postgres exited"; }
		sleep 0.1
	done
	"$bin/pg_isready" -q -h "$sock" -U postgres || die "postgres did not start"
	psql=("$bin/psql" -X -q -h "$sock" -U postgres -v ON_ERROR_STOP=1)
}

bench_pg_cleanup() {
	# Signal the postmaster itself (runuser may sit in between).
	if [ -f "$dir/data/postmaster.pid" ]; then
		pid=$(head -n1 "$dir/data/postmaster.pid" 2>/dev/null || echo "$pid")
	fi
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -INT "$pid" 2>/dev/null || true
		for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$dir"
}

# bench_server_ticks: the server's CPU time in clock ticks (10 ms): the
# postmaster's own and its reaped children's (exited backends), plus every
# live child's (/proc/<pid>/stat fields 14-17; field 4 is the parent).
bench_server_ticks() {
	local pm total s f
	pm=$(head -n1 "$dir/data/postmaster.pid")
	read -r -a f < <(sed 's/^.*) //' "/proc/$pm/stat")
	total=$((f[11] + f[12] + f[13] + f[14]))
	for s in /proc/[0-9]*/stat; do
		read -r -a f < <(sed 's/^.*) //' "$s" 2>/dev/null) || continue
		[ "${f[1]:-}" = "$pm" ] && total=$((total + f[11] + f[12]))
	done
	echo "$total"
}

# bench_server_children: how many processes the postmaster has (backends
# included).
bench_server_children() {
	local pm n=0 s f
	pm=$(head -n1 "$dir/data/postmaster.pid")
	for s in /proc/[0-9]*/stat; do
		read -r -a f < <(sed 's/^.*) //' "$s" 2>/dev/null) || continue
		[ "${f[1]:-}" = "$pm" ] && n=$((n + 1))
	done
	echo "$n"
}

# bench_pgbench_baseline SECONDS: pgbench -N (8 clients, 2 threads) for
# SECONDS on a scale-10 database "pgbench" it creates; sets tps and cpu_us
# (the server's CPU time per transaction, µs) and prints the baseline line.
bench_pgbench_baseline() {
	local seconds=$1 out txns children0 ticks0 ticks1
	[ -x "$bin/pgbench" ] || die "pgbench not found next to the server (apt-get install postgresql-contrib, or set QL3_PG_BIN)"
	"${psql[@]}" -d postgres -c 'CREATE DATABASE pgbench'
	"$bin/pgbench" -q -i -s 10 -h "$sock" -U postgres pgbench >/dev/null 2>&1
	children0=$(bench_server_children)
	ticks0=$(bench_server_ticks)
	out=$("$bin/pgbench" -N -c 8 -j 2 -T "$seconds" -h "$sock" -U postgres pgbench 2>/dev/null)
	# pgbench's backends are still exiting: their CPU time reaches the
	# postmaster's reaped-children total once it has waited for them.
	for _ in $(seq 1 100); do
		[ "$(bench_server_children)" -le "$children0" ] && break
		sleep 0.1
	done
	sleep 0.5
	ticks1=$(bench_server_ticks)
	tps=$(awk '/^tps = / { print $3; exit }' <<<"$out")
	txns=$(awk '/^number of transactions actually processed: / { print $6; exit }' <<<"$out")
	[ -n "$tps" ] && [ -n "$txns" ] && [ "$txns" -gt 0 ] || die "pgbench printed no tps"
	cpu_us=$(((ticks1 - ticks0) * 10000 / txns))
	echo "baseline: pgbench -N -c 8 -j 2 -T $seconds: $tps tps, $txns transactions, server CPU ${cpu_us} µs per transaction"
}
