#!/usr/bin/env bash
# pg-dev.sh — start an ephemeral PostgreSQL server for development, print its
# DSN, and remove everything when you press ^C (or the script is killed).
#
#   scripts/pg-dev.sh              # random free port on 127.0.0.1
#   PORT=5432 scripts/pg-dev.sh    # fixed port
#   QL3_PG_BIN=/usr/lib/postgresql/16/bin scripts/pg-dev.sh
#
# It creates database "ql3" and prints a superuser DSN for it; run the
# migrations with `ql3-control migrate` against that DSN. Durability is off
# (fsync=off): this is for development and tests only. The Go test harness
# (controlplane/pgtest) does the same thing from inside `go test`.
set -euo pipefail

die() { echo "pg-dev: $*" >&2; exit 1; }

# Highest installed server version, unless QL3_PG_BIN says otherwise.
bin=${QL3_PG_BIN:-}
if [ -z "$bin" ]; then
	bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5V | tail -n1 || true)
fi
[ -n "$bin" ] && [ -x "$bin/initdb" ] && [ -x "$bin/postgres" ] ||
	die "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin (apt-get install postgresql, or set QL3_PG_BIN)"

# initdb and postgres refuse to run as root: use the postgres OS user.
# setpriv changes the user and execs (no helper process in between), so $!
# below is the postmaster itself: runuser would stay as its parent, and
# signalling runuser on ^C could orphan a still-running postmaster.
as_server=()
if [ "$(id -u)" -eq 0 ]; then
	pg_user=${QL3_PG_USER:-postgres}
	id "$pg_user" >/dev/null 2>&1 || die "running as root needs the unprivileged OS user '$pg_user' (QL3_PG_USER)"
	command -v setpriv >/dev/null || die "running as root needs setpriv (util-linux)"
	as_server=(setpriv --reuid="$(id -u "$pg_user")" --regid="$(id -g "$pg_user")" --init-groups --)
fi

port=${PORT:-}
if [ -z "$port" ]; then
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null) ||
		port=$(( 20000 + RANDOM % 20000 ))
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/ql3pg-dev-XXXXXX")
[ ${#as_server[@]} -gt 0 ] && chown "$pg_user" "$dir"
pid=""
cleanup() {
	# The postmaster's own pid file wins over $! (it names the process
	# that owns the data directory, whatever started it).
	if [ -f "$dir/data/postmaster.pid" ]; then
		pid=$(head -n1 "$dir/data/postmaster.pid" 2>/dev/null || echo "$pid")
	fi
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -INT "$pid" 2>/dev/null || true
		for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

password=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$password" >"$dir/pwfile"
[ ${#as_server[@]} -gt 0 ] && chown "$pg_user" "$dir/pwfile"
chmod 600 "$dir/pwfile"

"${as_server[@]}" "$bin/initdb" -D "$dir/data" -U postgres --pwfile="$dir/pwfile" -A scram-sha-256 \
	-E UTF8 --locale=C --no-sync --no-instructions >"$dir/initdb.log" 2>&1 ||
	{ cat "$dir/initdb.log" >&2; die "initdb failed"; }
rm -f "$dir/pwfile"
mkdir -p "$dir/sock"
[ ${#as_server[@]} -gt 0 ] && chown "$pg_user" "$dir/sock"
chmod 700 "$dir/sock"

"${as_server[@]}" "$bin/postgres" -D "$dir/data" -p "$port" -k "$dir/sock" \
	-c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c shared_buffers=32MB \
	-c wal_level=replica -c max_wal_senders=4 -c jit=off >"$dir/postgres.log" 2>&1 &
pid=$!

for _ in $(seq 1 300); do
	if "$bin/pg_isready" -q -h "$dir/sock" -p "$port"; then break; fi
	kill -0 "$pid" 2>/dev/null || { cat "$dir/postgres.log" >&2; die "postgres exited during startup"; }
	sleep 0.1
done
"$bin/pg_isready" -q -h "$dir/sock" -p "$port" || die "postgres not ready after 30 s"
PGPASSWORD=$password "$bin/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -c 'CREATE DATABASE ql3' >/dev/null

cat <<MSG
PostgreSQL $("$bin/postgres" --version | awk '{print $3}') is running (data in $dir, log $dir/postgres.log).

  QL3_DATABASE_URL='postgres://postgres:$password@127.0.0.1:$port/ql3?sslmode=disable'

Press ^C to stop it and delete everything.
MSG
wait "$pid"
