#!/usr/bin/env bash
# Starts (and stops) the services the tests and benchmarks use: a throwaway Postgres cluster on 127.0.0.1 and
# pgbouncer in transaction mode in front of it, each on a free port, from Debian's `postgresql` and `pgbouncer`.
#
#   scripts/services.sh start   start them unless running; prints the file of variables the tests read
#   scripts/services.sh stop    stop them and remove the cluster
#   scripts/services.sh env     print the variables (CORE_TEST_POSTGRES_URL, CORE_TEST_PGBOUNCER_URL)
#
# The cluster lives in $CORE_SERVICES_DIR (default $TMPDIR/core-services-<uid>), trusts local connections as user
# `core`, and is meant for tests only. Postgres refuses to run as root: as root, it runs as the `postgres` user
# the Debian package creates.
set -euo pipefail
# runuser and pgbouncer are system programs (/usr/sbin), which a PATH without the sbin folders misses.
export PATH="$PATH:/usr/sbin:/sbin"

DIR=${CORE_SERVICES_DIR:-${TMPDIR:-/tmp}/core-services-$(id -u)}
ENV_FILE=$DIR/env
HOST=127.0.0.1

# Debian's postgresql and pgbouncer, and strace (which holds a process at a system call for the journal's kill -9
# tests), installed when missing where this may (root, with apt-get), so the README's `npm install && npm test` sets
# up what the store tests need on a fresh Debian machine too.
install_missing() {
  if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && { command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ]; } &&
    command -v strace >/dev/null; then
    return 0
  fi
  [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null || return 0
  echo "installing Debian's postgresql, pgbouncer and strace for the store tests" >&2
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql pgbouncer strace; } >&2 || true
}

bindir() {
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$found" ] || [ ! -x "$found/initdb" ]; then
    echo "Postgres is not installed: the store tests need Debian's postgresql and pgbouncer." >&2
    echo "Install them with: apt-get install -y postgresql pgbouncer   (or set CORE_TEST_POSTGRES_URL and CORE_TEST_PGBOUNCER_URL)" >&2
    exit 3
  fi
  command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ] || {
    echo "pgbouncer is not installed. Install it with: apt-get install -y pgbouncer" >&2
    exit 3
  }
  echo "$found"
}

# Runs a command as the cluster's owner: this user, or `postgres` when this is root.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
  node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })'
}

running() {
  [ -f "$ENV_FILE" ] || return 1
  # shellcheck disable=SC1090
  . "$ENV_FILE"
  "$(bindir)/pg_isready" -q -h "$HOST" -p "$CORE_TEST_POSTGRES_PORT" &&
    "$(bindir)/pg_isready" -q -h "$HOST" -p "$CORE_TEST_PGBOUNCER_PORT"
}

start() {
  local bin pg_port bouncer_port pgbouncer
  install_missing
  bin=$(bindir)
  pgbouncer=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
  if running; then echo "$ENV_FILE"; return 0; fi
  stop_quietly
  mkdir -p "$DIR"
  chmod 0755 "$DIR"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$DIR"
  as_owner "$bin/initdb" -D "$DIR/pg" -U core --auth=trust -E UTF8 --no-locale >"$DIR/initdb.log" 2>&1 || {
    cat "$DIR/initdb.log" >&2
    exit 1
  }
  pg_port=$(free_port)
  as_owner "$bin/pg_ctl" -D "$DIR/pg" -l "$DIR/postgres.log" -w -t 60 \
    -o "-c listen_addresses=$HOST -p $pg_port -c unix_socket_directories=$DIR -c max_connections=200" start </dev/null >/dev/null 2>&1 9>&- || {
    cat "$DIR/postgres.log" >&2
    exit 1
  }
  bouncer_port=$(free_port)
  as_owner tee "$DIR/users.txt" >/dev/null <<<'"core" ""'
  as_owner tee "$DIR/pgbouncer.ini" >/dev/null <<INI
[databases]
* = host=$HOST port=$pg_port
[pgbouncer]
listen_addr = $HOST
listen_port = $bouncer_port
unix_socket_dir =
auth_type = trust
auth_file = $DIR/users.txt
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 20
# Each test makes a database of its own, and so a pool: idle server connections are closed soon, or a few runs of
# the tests in a row would hold all of Postgres's max_connections (the default keeps them 10 minutes).
server_idle_timeout = 5
logfile = $DIR/pgbouncer.log
pidfile = $DIR/pgbouncer.pid
INI
  # Daemons keep no descriptor of this script's (its lock, its output).
  as_owner "$pgbouncer" -d "$DIR/pgbouncer.ini" </dev/null >/dev/null 2>&1 9>&- || {
    cat "$DIR/pgbouncer.log" >&2
    exit 1
  }
  for _ in $(seq 1 100); do "$bin/pg_isready" -q -h "$HOST" -p "$bouncer_port" && break; sleep 0.1; done
  cat >"$ENV_FILE" <<VARS
CORE_TEST_POSTGRES_PORT=$pg_port
CORE_TEST_PGBOUNCER_PORT=$bouncer_port
CORE_TEST_POSTGRES_URL=postgres://core@$HOST:$pg_port/postgres
CORE_TEST_PGBOUNCER_URL=postgres://core@$HOST:$bouncer_port/postgres
VARS
  running || { echo "the services did not come up; see $DIR/*.log" >&2; exit 1; }
  echo "$ENV_FILE"
}

stop_quietly() {
  if [ -f "$DIR/pgbouncer.pid" ]; then kill "$(cat "$DIR/pgbouncer.pid")" 2>/dev/null || true; fi
  if [ -d "$DIR/pg" ]; then as_owner "$(bindir)/pg_ctl" -D "$DIR/pg" -m immediate stop >/dev/null 2>&1 || true; fi
  rm -rf "$DIR"
}

case "${1:-}" in
  start)
    mkdir -p "$(dirname "$DIR")"
    # Test processes starting at once start one set of services.
    exec 9>"$DIR.lock"
    flock 9
    start
    ;;
  stop)
    exec 9>"$DIR.lock"
    flock 9
    stop_quietly
    ;;
  env)
    running && grep -v _PORT= "$ENV_FILE"
    ;;
  install)
    mkdir -p "$(dirname "$DIR")"
    exec 9>"$DIR.lock"
    flock 9
    install_missing
    ;;
  *)
    echo "usage: scripts/services.sh start|stop|env|install" >&2
    exit 2
    ;;
esac
