#!/usr/bin/env bash
# A local scale-out stack on one machine, for trying tracking=server and hydra/launcher=ray:
#   PostgreSQL (Debian binaries, a cluster in a folder of its own, 127.0.0.1 only)
#   an MLflow tracking server over it (artifacts proxied: --serve-artifacts)
#   a Ray head node on 127.0.0.1
# Usage: scripts/services.sh start|stop|status
# State (data, logs, PIDs, ports) lives in $RUNNER_SERVICES_DIR, default artifacts/services/.
# `start` writes services.env there: `source` it, then run with tracking=server and/or
# hydra/launcher=ray (docs/scale_out.md). Every service is stopped by its own PID.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PY:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || PY="$(command -v python3)"
BIN="$(dirname "$PY")"
STATE="${RUNNER_SERVICES_DIR:-${RUNNER_ARTIFACTS_DIR:-$ROOT/artifacts}/services}"
RAY_CPUS="${RAY_NUM_CPUS:-2}"
RAY_STORE_BYTES="${RAY_OBJECT_STORE_BYTES:-100000000}"   # Ray's minimum is ~75 MB
PG_USER=runner
PG_DB=mlflow

export MLFLOW_DISABLE_TELEMETRY=true MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false
export RAY_USAGE_STATS_ENABLED=0
# Ray on one machine: without this, Ray replaces 127.0.0.1 by the machine's outward IP and
# its drivers then look for the head there. A multi-node cluster must not set it.
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0

die() { echo "services: $*" >&2; exit 1; }

pg_bindir() {
  local d
  if command -v pg_config >/dev/null && [ -x "$(pg_config --bindir)/initdb" ]; then
    pg_config --bindir; return
  fi
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && { echo "$d"; return; }
  done
  die "PostgreSQL binaries not found: install Debian's postgresql (scripts/ci_system_deps.sh)"
}

free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# initdb refuses to run as root: as root, PostgreSQL runs as `nobody` in a folder it owns.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u nobody -- "$@"; else "$@"; fi
}

wait_for() {  # wait_for SECONDS PIDFILE DESCRIPTION COMMAND...
  local seconds=$1 pidfile=$2 what=$3; shift 3
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if [ -n "$pidfile" ] && ! alive "$pidfile"; then die "$what exited; see its log in $STATE"; fi
    [ $SECONDS -lt $deadline ] || die "$what not ready after ${seconds}s; see its log in $STATE"
    sleep 0.5
  done
}

start_postgres() {
  local bindir port
  bindir="$(pg_bindir)"
  mkdir -p "$STATE/pg"
  if [ "$(id -u)" = 0 ]; then chown nobody "$STATE/pg"; fi
  chmod 700 "$STATE/pg"
  if [ ! -s "$STATE/pg/password" ]; then
    "$PY" -c 'import secrets; print(secrets.token_hex(16))' > "$STATE/pg/password"
    chmod 600 "$STATE/pg/password"
  fi
  if [ ! -f "$STATE/pg/data/PG_VERSION" ]; then
    # the password file must be readable by the cluster's owner for initdb only
    install -m 600 "$STATE/pg/password" "$STATE/pg/pwfile"
    if [ "$(id -u)" = 0 ]; then chown nobody "$STATE/pg/pwfile"; fi
    as_pg "$bindir/initdb" -D "$STATE/pg/data" -U "$PG_USER" --pwfile="$STATE/pg/pwfile" \
      --auth=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >"$STATE/pg/initdb.log" 2>&1 \
      || die "initdb failed; see $STATE/pg/initdb.log"
    rm -f "$STATE/pg/pwfile"
  fi
  port="$(free_port)"
  # TCP on 127.0.0.1 only, no Unix socket (nothing outside this folder to write to)
  as_pg "$bindir/pg_ctl" -D "$STATE/pg/data" -l "$STATE/pg/postgres.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=''" start \
    >/dev/null || die "PostgreSQL did not start; see $STATE/pg/postgres.log"
  head -1 "$STATE/pg/data/postmaster.pid" > "$STATE/postgres.pid"
  echo "$port" > "$STATE/postgres.port"
  # libpq reads the password from here: it never appears in a URI or a command line
  printf '127.0.0.1:%s:*:%s:%s\n' "$port" "$PG_USER" "$(cat "$STATE/pg/password")" \
    > "$STATE/pgpass"
  chmod 600 "$STATE/pgpass"
  export PGPASSFILE="$STATE/pgpass"
  if ! "$bindir/psql" -h 127.0.0.1 -p "$port" -U "$PG_USER" -d postgres -tAc \
      "SELECT 1 FROM pg_database WHERE datname='$PG_DB'" | grep -q 1; then
    "$bindir/createdb" -h 127.0.0.1 -p "$port" -U "$PG_USER" "$PG_DB"
  fi
}

start_mlflow() {
  local port pg_port
  port="$(free_port)"
  pg_port="$(cat "$STATE/postgres.port")"
  mkdir -p "$STATE/mlflow-artifacts"
  PGPASSFILE="$STATE/pgpass" setsid "$PY" -m mlflow server \
    --backend-store-uri "postgresql://$PG_USER@127.0.0.1:$pg_port/$PG_DB" \
    --artifacts-destination "$STATE/mlflow-artifacts" --serve-artifacts \
    --host 127.0.0.1 --port "$port" --workers 1 \
    >"$STATE/mlflow.log" 2>&1 < /dev/null &
  echo $! > "$STATE/mlflow.pid"
  echo "$port" > "$STATE/mlflow.port"
  wait_for 120 "$STATE/mlflow.pid" "mlflow server" \
    "$PY" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/health', timeout=2)"
}

start_ray() {
  local port tmp
  port="$(free_port)"
  # Ray's socket paths must stay short (~107 bytes): its session folder lives under /tmp
  tmp="$(mktemp -d /tmp/runner-ray.XXXXXX)"
  echo "$tmp" > "$STATE/ray.tmpdir"
  # every port Ray would otherwise take at a fixed number is chosen free
  # and `stop` waits 5 s, not 30, for running tasks to drain
  RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S=5 \
  AUTOSCALER_METRIC_PORT="$(free_port)" DASHBOARD_METRIC_PORT="$(free_port)" \
  setsid "$BIN/ray" start --head --block --node-ip-address=127.0.0.1 --port="$port" \
    --num-cpus="$RAY_CPUS" --object-store-memory="$RAY_STORE_BYTES" \
    --include-dashboard=false --dashboard-agent-listen-port="$(free_port)" \
    --ray-client-server-port="$(free_port)" --disable-usage-stats --temp-dir="$tmp" \
    >"$STATE/ray.log" 2>&1 < /dev/null &
  echo $! > "$STATE/ray.pid"
  echo "$port" > "$STATE/ray.port"
  echo "$RAY_CPUS" > "$STATE/ray.cpus"
  wait_for 120 "$STATE/ray.pid" "ray head" grep -q "Ray runtime started" "$STATE/ray.log"
}

write_env() {
  cat > "$STATE/services.env" <<EOF
# written by scripts/services.sh start; source it before a run
export MLFLOW_TRACKING_URI=http://127.0.0.1:$(cat "$STATE/mlflow.port")
export RAY_ADDRESS=127.0.0.1:$(cat "$STATE/ray.port")
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0
EOF
}

start() {
  mkdir -p "$STATE"
  for svc in postgres mlflow ray; do
    alive "$STATE/$svc.pid" && die "$svc already runs (PID $(cat "$STATE/$svc.pid")); stop first"
  done
  start_postgres
  start_mlflow
  start_ray
  write_env
  status
}

stop_pid() {  # stop_pid NAME: SIGTERM to its process group, SIGKILL after 40 s
  local name=$1 pidfile="$STATE/$1.pid" pid i
  if ! alive "$pidfile"; then rm -f "$pidfile"; return; fi
  pid="$(cat "$pidfile")"
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid"
  for i in $(seq 80); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "services: $name (PID $pid) ignored SIGTERM; killing it" >&2
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid"
  fi
  rm -f "$pidfile"
  echo "stopped $name (PID $pid)"
}

stop() {
  [ -d "$STATE" ] || { echo "nothing to stop ($STATE does not exist)"; return; }
  stop_pid ray
  if [ -f "$STATE/ray.tmpdir" ]; then rm -rf "$(cat "$STATE/ray.tmpdir")" "$STATE/ray.tmpdir"; fi
  stop_pid mlflow
  if alive "$STATE/postgres.pid"; then
    # pg_ctl stops the server through its PID file (postmaster.pid), waiting for it
    as_pg "$(pg_bindir)/pg_ctl" -D "$STATE/pg/data" -m fast -w stop >/dev/null
    # pg_ctl returns once postmaster.pid is gone; the process itself exits just after
    for i in $(seq 60); do alive "$STATE/postgres.pid" || break; sleep 0.5; done
    alive "$STATE/postgres.pid" && die "postgres (PID $(cat "$STATE/postgres.pid")) still runs"
    echo "stopped postgres (PID $(cat "$STATE/postgres.pid"))"
  fi
  rm -f "$STATE/postgres.pid" "$STATE/services.env"
}

status() {
  local svc where
  for svc in postgres mlflow ray; do
    case $svc in
      postgres) where="127.0.0.1:$(cat "$STATE/postgres.port" 2>/dev/null) data $STATE/pg/data" ;;
      mlflow) where="http://127.0.0.1:$(cat "$STATE/mlflow.port" 2>/dev/null) artifacts $STATE/mlflow-artifacts" ;;
      ray) where="127.0.0.1:$(cat "$STATE/ray.port" 2>/dev/null) ($(cat "$STATE/ray.cpus" 2>/dev/null) CPUs)" ;;
    esac
    if alive "$STATE/$svc.pid"; then
      printf '%-9s running  PID %-7s %s\n' "$svc" "$(cat "$STATE/$svc.pid")" "$where"
    else
      printf '%-9s stopped\n' "$svc"
    fi
  done
  [ -f "$STATE/services.env" ] && echo "environment: source $STATE/services.env"
  return 0
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
