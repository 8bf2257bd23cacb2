#!/usr/bin/env bash
# cluster.sh — a whole ql3 cluster on this machine, for looking at (make cluster):
# an ephemeral PostgreSQL, two ql3-control replicas (admin API + worker
# ingress each), two ql3-worker processes (node profile, TLS 1.3 mTLS with a
# dev PKI made by `ql3-control pki`), and a task with a 6-field trigger that
# fires every 5 seconds. ^C (or SIGTERM) stops everything, PostgreSQL
# included, and deletes the temporary directory.
#
#   make cluster                      # builds bin/ql3-control and bin/ql3-worker first
#   ADMIN_PORT_A=5800 INGRESS_PORT_A=5801 ADMIN_PORT_B=5810 INGRESS_PORT_B=5811 scripts/cluster.sh
#   KEEP=1 scripts/cluster.sh         # keep the directory (logs, certificates) after ^C
#
# Loopback only; durability is off (fsync=off). Not for production.
set -euo pipefail

die() { echo "cluster: $*" >&2; exit 1; }

root=$(cd "$(dirname "$0")/.." && pwd)
ctl=${QL3_CONTROL_BIN:-$root/bin/ql3-control}
wkr=${QL3_WORKER_BIN:-$root/bin/ql3-worker}
[ -x "$ctl" ] && [ -x "$wkr" ] || die "build the binaries first: make build-control build-worker"
ADMIN_PORT_A=${ADMIN_PORT_A:-5800} INGRESS_PORT_A=${INGRESS_PORT_A:-5801}
ADMIN_PORT_B=${ADMIN_PORT_B:-5810} INGRESS_PORT_B=${INGRESS_PORT_B:-5811}

bin=${QL3_PG_BIN:-}
if [ -z "$bin" ]; then
	bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5V | tail -n1 || true)
fi
[ -n "$bin" ] && [ -x "$bin/initdb" ] && [ -x "$bin/postgres" ] ||
	die "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin (apt-get install postgresql, or set QL3_PG_BIN)"
command -v jq >/dev/null || die "jq is required (apt-get install jq)"

# initdb and postgres refuse to run as root. setpriv execs (no process in
# between), so $! is the postmaster itself and stopping it cannot orphan it.
as_server=()
if [ "$(id -u)" -eq 0 ]; then
	pg_user=${QL3_PG_USER:-postgres}
	id "$pg_user" >/dev/null 2>&1 || die "running as root needs the unprivileged OS user '$pg_user' (QL3_PG_USER)"
	command -v setpriv >/dev/null || die "running as root needs setpriv (util-linux)"
	as_server=(setpriv --reuid="$(id -u "$pg_user")" --regid="$(id -g "$pg_user")" --init-groups --)
fi

for p in "$ADMIN_PORT_A" "$INGRESS_PORT_A" "$ADMIN_PORT_B" "$INGRESS_PORT_B"; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		die "port $p on 127.0.0.1 is in use (set ADMIN_PORT_A/INGRESS_PORT_A/ADMIN_PORT_B/INGRESS_PORT_B)"
	fi
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/ql3-cluster-XXXXXX")
chmod 711 "$dir"
pgpid="" cpids="" wpids=""
stop_all() {
	trap - INT TERM
	echo
	echo "stopping: workers (drain), control planes, PostgreSQL"
	for p in $wpids; do kill -TERM "$p" 2>/dev/null || true; done
	for p in $wpids; do wait "$p" 2>/dev/null || true; done
	for p in $cpids; do kill -TERM "$p" 2>/dev/null || true; done
	for p in $cpids; do wait "$p" 2>/dev/null || true; done
	if [ -f "$dir/pg/data/postmaster.pid" ]; then
		pgpid=$(head -n1 "$dir/pg/data/postmaster.pid" 2>/dev/null || echo "$pgpid")
	fi
	if [ -n "$pgpid" ] && kill -0 "$pgpid" 2>/dev/null; then
		kill -INT "$pgpid" 2>/dev/null || true
		for _ in $(seq 1 300); do kill -0 "$pgpid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pgpid" 2>/dev/null || true
	fi
	if [ -n "${KEEP:-}" ]; then
		echo "kept $dir"
	else
		rm -rf "$dir"
	fi
	echo "stopped."
}
trap stop_all EXIT
trap 'exit 0' INT TERM # ^C is how a user stops the demo: not an error

# 1. PostgreSQL on a private socket directory (no TCP port at all).
mkdir -p "$dir/pg/sock"
[ ${#as_server[@]} -gt 0 ] && chown -R "$pg_user" "$dir/pg"
"${as_server[@]}" "$bin/initdb" -D "$dir/pg/data" -U postgres -A trust -E UTF8 --locale=C --no-sync --no-instructions \
	>"$dir/pg/initdb.log" 2>&1 || { cat "$dir/pg/initdb.log" >&2; die "initdb failed"; }
printf 'local all all trust\n' >"$dir/pg/data/pg_hba.conf"
[ ${#as_server[@]} -gt 0 ] && chown "$pg_user" "$dir/pg/data/pg_hba.conf"
chmod 777 "$dir/pg/sock"
"${as_server[@]}" "$bin/postgres" -D "$dir/pg/data" -k "$dir/pg/sock" -c listen_addresses= -c fsync=off \
	-c synchronous_commit=off -c max_connections=100 -c log_min_messages=warning >"$dir/pg/postgres.log" 2>&1 &
pgpid=$!
for _ in $(seq 1 300); do
	"$bin/pg_isready" -q -h "$dir/pg/sock" -U postgres && break
	kill -0 "$pgpid" 2>/dev/null || { cat "$dir/pg/postgres.log" >&2; die "postgres exited during startup"; }
	sleep 0.1
done
"$bin/pg_isready" -q -h "$dir/pg/sock" -U postgres || die "postgres not ready after 30 s"
"$bin/psql" -X -q -h "$dir/pg/sock" -U postgres -d postgres -c 'CREATE DATABASE ql3' >/dev/null
export QL3_DSN="host=$dir/pg/sock user=postgres dbname=ql3 sslmode=disable"
echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') ready (socket $dir/pg/sock)"

# 2. Roles, migrations, grants.
"$ctl" migrate >"$dir/migrate.log" 2>&1 || { cat "$dir/migrate.log" >&2; die "migrate failed"; }
echo "migrated"

# 3. Dev PKI: a CA, the ingress certificate, one client certificate per worker.
pki="$dir/pki"
"$ctl" pki init --dir "$pki" >/dev/null
"$ctl" pki issue-server --dir "$pki" --host 127.0.0.1,localhost >/dev/null
echo "dev PKI in $pki (P-256 CA and ingress certificate; worker certificates below)"

# 4. Two control-plane replicas: admin API + worker ingress each.
start_control() { # name admin_port ingress_port
	QL3_LOG_LEVEL=info "$ctl" serve --listen "127.0.0.1:$2" --ingress-listen "127.0.0.1:$3" \
		--ingress-tls-cert "$pki/ingress.crt" --ingress-tls-key "$pki/ingress.key" --ingress-client-ca "$pki/ca.crt" \
		>"$dir/control-$1.log" 2>&1 &
	cpids="$cpids $!"
}
start_control a "$ADMIN_PORT_A" "$INGRESS_PORT_A"
start_control b "$ADMIN_PORT_B" "$INGRESS_PORT_B"
for _ in $(seq 1 300); do
	[ "$(cat "$dir"/control-*.log | grep -c 'worker ingress listening' || true)" -ge 2 ] && break
	for p in $cpids; do kill -0 "$p" 2>/dev/null || { cat "$dir"/control-*.log >&2; die "a control plane exited"; }; done
	sleep 0.1
done
[ "$(cat "$dir"/control-*.log | grep -c 'worker ingress listening' || true)" -ge 2 ] || die "control planes not listening after 30 s (logs in $dir)"
echo "control planes: admin API http://127.0.0.1:$ADMIN_PORT_A and http://127.0.0.1:$ADMIN_PORT_B"

# 5. An API token for the CLI (written to a 0600 file, never printed).
umask 077
export QL3_SERVER="http://127.0.0.1:$ADMIN_PORT_A" QL3_TOKEN_FILE="$dir/token"
"$ctl" token create --name cluster-demo 2>/dev/null | tail -n1 | awk '{print $NF}' >"$dir/token"
unset QL3_TOKEN

# 6. Register the workers (bound to their certificate identity), issue their
#    credentials into their own 0700 directories, start them.
for w in worker-1 worker-2; do
	identity=$("$ctl" pki issue-worker --dir "$pki" --name "$w" 2>/dev/null)
	"$ctl" worker register --name "$w" --tls-identity "$identity" >/dev/null
	"$ctl" worker issue-credential --id "$w" --credential-file "$pki/workers/$w/credential" >/dev/null
done
start_worker() { # name ingress_port
	mkdir -m 0700 "$dir/$1"
	QL3_INGRESS_URL="https://127.0.0.1:$2" QL3_CREDENTIAL_FILE="$pki/workers/$1/credential" \
		QL3_CERT_FILE="$pki/workers/$1/client.crt" QL3_KEY_FILE="$pki/workers/$1/client.key" \
		QL3_CA_FILE="$pki/workers/$1/ca.crt" QL3_STATE_DIR="$dir/$1" QL3_PROFILE=node QL3_LOG_LEVEL=info \
		"$wkr" >"$dir/$1.log" 2>&1 &
	wpids="$wpids $!"
}
start_worker worker-1 "$INGRESS_PORT_A"
start_worker worker-2 "$INGRESS_PORT_B"
echo "workers: worker-1 → ingress 127.0.0.1:$INGRESS_PORT_A, worker-2 → ingress 127.0.0.1:$INGRESS_PORT_B (node profile, mTLS)"

# 7. A task that fires every 5 seconds (6-field cron: seconds first).
"$ctl" project create --name demo >/dev/null
printf '%s' '{"kind":"qinglong/command@v1","shell":{"command":"echo hello from $(hostname) at $(date -u +%T); sleep 1"}}' >"$dir/spec.json"
task=$("$ctl" task create --project demo --name hello --spec-file "$dir/spec.json" --json | jq -r '.id')
[ -n "$task" ] && [ "$task" != null ] || die "task create failed"
"$ctl" trigger create --task "$task" --name every-5s --expression '*/5 * * * * *' >/dev/null

cat <<MSG

ql3 cluster is running (everything in $dir).

  Admin API      http://127.0.0.1:$ADMIN_PORT_A  and  http://127.0.0.1:$ADMIN_PORT_B
                 (bearer token in $dir/token)
  Task           demo/hello ($task), trigger '*/5 * * * * *'

Try, in another terminal:
  export QL3_SERVER=http://127.0.0.1:$ADMIN_PORT_A QL3_TOKEN_FILE=$dir/token
  $ctl worker list
  $ctl run list --task $task
  $ctl run show --id <run id>
  $ctl run logs -f --id <run id>
  $ctl run now --task $task
  curl -s -H "Authorization: Bearer \$(cat $dir/token)" http://127.0.0.1:$ADMIN_PORT_B/api/v1/runs | jq .
  tail -f $dir/control-a.log $dir/worker-1.log

Press ^C to stop everything (workers drain, then control planes, then PostgreSQL).
MSG

# Wait until ^C, or until a component dies (then say which and stop).
while :; do
	for p in $cpids $wpids "$pgpid"; do
		if ! kill -0 "$p" 2>/dev/null; then
			echo "cluster: process $p exited; logs in $dir" >&2
			KEEP=1
			exit 1
		fi
	done
	sleep 1 &
	wait $! || true
done
