#!/usr/bin/env bash
# A local scale-out stack on one machine, for trying tracking=server and the launchers:
#   postgres  PostgreSQL (Debian binaries, a cluster in a folder of its own, 127.0.0.1 only)
#   mlflow    an MLflow tracking server over it (artifacts proxied: --serve-artifacts)
#   ray       a Ray head node on 127.0.0.1
#   slurm     a one-node Slurm cluster on 127.0.0.1: munged, slurmctld, slurmd (Debian's
#             slurm-wlm + munge), for hydra/launcher=submitit_slurm
# Usage: scripts/services.sh start [COMPONENT...]   default: postgres mlflow ray
#        scripts/services.sh stop [COMPONENT...]    default: every component that runs
#        scripts/services.sh status
# State (data, config, logs, PIDs, ports) lives in $RUNNER_SERVICES_DIR, default
# artifacts/services/ (Slurm's in its slurm/ folder). `start` writes services.env there:
# `source` it, then run with tracking=server and/or hydra/launcher=ray|submitit_slurm
# (docs/scale_out.md). Every daemon is stopped by its own PID.
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
SLURM="$STATE/slurm"
SLURM_NODE=localhost
SLURM_PARTITION=local
SLURM_JOB_AGE=3600   # s a finished job stays in slurmctld's memory (bin/sacct reads it there)
COMPONENTS=(postgres mlflow ray slurm)

export PATH="$PATH:/usr/sbin:/sbin"   # munged, slurmctld and slurmd live there
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

# a PID that exists and is not a zombie (an exited daemon whose parent has not reaped it)
running() {
  local stat
  kill -0 "$1" 2>/dev/null || return 1
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 0   # no /proc: kill -0 says enough
  stat="${stat##*) }"
  [ "${stat:0:1}" != Z ]
}

alive() { [ -f "$1" ] && running "$(cat "$1")"; }

# initdb refuses to run as root: as root, PostgreSQL runs as `nobody` in a folder it owns.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u nobody -- "$@"; else "$@"; fi
}

wait_for() {  # wait_for SECONDS PIDFILE DESCRIPTION COMMAND...
  local seconds=$1 pidfile=$2 what=$3; shift 3
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if [ -n "$pidfile" ] && [ -f "$pidfile" ] && ! alive "$pidfile"; then
      die "$what exited; see its log in $STATE"
    fi
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

# -- Slurm: one node on 127.0.0.1, every file in $SLURM --------------------------------

require_slurm() {
  local b
  for b in munged mungekey munge slurmctld slurmd sbatch squeue sinfo scontrol scancel sacct; do
    command -v "$b" >/dev/null \
      || die "$b not found: install Debian's slurm-wlm and munge (scripts/ci_system_deps.sh)"
  done
}

slurm_conf() {  # slurm.conf of the one-node cluster, on stdout
  local ctld_port=$1 node_port=$2 hardware user
  # the node as slurmd sees this machine: CPUs, sockets, cores, threads, RealMemory (MB)
  hardware="$(slurmd -C | head -1)"
  hardware="${hardware#NodeName=* }"
  user="$(id -un)"
  cat <<EOF
# written by scripts/services.sh start slurm: a one-node cluster on 127.0.0.1
ClusterName=runner
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$node_port
SlurmUser=$user
SlurmdUser=$user
# munge, through this folder's munged (key, socket, PID and log all in $SLURM)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SLURM/munge/munge.socket
StateSaveLocation=$SLURM/state
SlurmdSpoolDir=$SLURM/spool
SlurmctldPidFile=$SLURM/slurmctld.pid
SlurmdPidFile=$SLURM/slurmd.pid
SlurmctldLogFile=$SLURM/log/slurmctld.log
SlurmdLogFile=$SLURM/log/slurmd.log
PlugStackConfig=$SLURM/plugstack.conf
# no cgroups and no accounting database: processes tracked through /proc
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/backfill
# cores are the consumable resource; memory is checked against RealMemory only
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
KillWait=10
# finished jobs stay queryable (squeue --states=all, bin/sacct) this many seconds
MinJobAge=$SLURM_JOB_AGE
NodeName=$SLURM_NODE NodeAddr=127.0.0.1 $hardware State=UNKNOWN
PartitionName=$SLURM_PARTITION Nodes=$SLURM_NODE Default=YES MaxTime=INFINITE State=UP
EOF
}

write_sacct() {  # bin/sacct: submitit's one sacct question, answered without a database
  local real
  real="$(command -v sacct)"
  cat > "$SLURM/bin/sacct" <<EOF
#!/usr/bin/env bash
# Written by scripts/services.sh start slurm. This one-node cluster keeps no accounting
# database, where Slurm's sacct only says "accounting storage is disabled". submitit asks
#   sacct -o JobID,State,NodeList --parsable2 -j ID [-j ID ...]
# to notice jobs that ended without writing their result (failed, cancelled, timed out);
# that question is answered here from slurmctld's memory (squeue --states=all keeps a
# finished job MinJobAge=$SLURM_JOB_AGE s). Any other call goes to Slurm's own sacct.
export SLURM_CONF="\${SLURM_CONF:-$SLURM/slurm.conf}"
args=("\$@") fields="" parsable="" ids=()
while [ \$# -gt 0 ]; do
  case \$1 in
    -o | --format) fields=\$2; shift 2 ;;
    --format=*) fields=\${1#*=}; shift ;;
    -P | --parsable2) parsable=1; shift ;;
    -j | --jobs) IFS=, read -ra more <<< "\$2"; ids+=("\${more[@]}"); shift 2 ;;
    --jobs=*) IFS=, read -ra more <<< "\${1#*=}"; ids+=("\${more[@]}"); shift ;;
    *) exec "$real" "\${args[@]}" ;;
  esac
done
if [ "\${fields,,}" != "jobid,state,nodelist" ] || [ -z "\$parsable" ] || [ \${#ids[@]} -eq 0 ]; then
  exec "$real" "\${args[@]}"
fi
echo "JobID|State|NodeList"
for id in "\${ids[@]}"; do  # one at a time: squeue fails the whole call on an unknown id
  squeue --noheader --states=all --jobs="\$id" --format='%i|%T|%N' 2>/dev/null || true
done
EOF
  chmod 755 "$SLURM/bin/sacct"
}

node_idle() { [ "$(sinfo --noheader --nodes="$SLURM_NODE" --format=%T)" = idle ]; }

start_slurm() {
  local socket
  require_slurm
  mkdir -p "$SLURM/munge" "$SLURM/state" "$SLURM/spool" "$SLURM/log" "$SLURM/bin"
  # munged wants its socket's folder searchable by everyone and the key readable by
  # its owner only
  chmod 755 "$SLURM" "$SLURM/munge" "$SLURM/log"
  socket="$SLURM/munge/munge.socket"
  [ ${#socket} -le 100 ] \
    || die "$socket is too long for a Unix socket (108 bytes): set a shorter RUNNER_SERVICES_DIR"
  if [ ! -s "$SLURM/munge/munge.key" ]; then
    mungekey --create --keyfile="$SLURM/munge/munge.key"
  fi
  munged --key-file="$SLURM/munge/munge.key" --socket="$socket" \
    --pid-file="$SLURM/munged.pid" --log-file="$SLURM/log/munged.log" \
    --seed-file="$SLURM/munge/munged.seed" \
    || die "munged did not start; see $SLURM/log/munged.log"
  wait_for 30 "$SLURM/munged.pid" munged munge --socket="$socket" --no-input
  slurm_conf "$(free_port)" "$(free_port)" > "$SLURM/slurm.conf"
  : > "$SLURM/plugstack.conf"   # no SPANK plugins (not /etc/slurm's)
  write_sacct
  export SLURM_CONF="$SLURM/slurm.conf"
  slurmctld -f "$SLURM_CONF" || die "slurmctld did not start; see $SLURM/log/slurmctld.log"
  wait_for 60 "$SLURM/slurmctld.pid" slurmctld scontrol ping
  slurmd -f "$SLURM_CONF" -N "$SLURM_NODE" || die "slurmd did not start; see $SLURM/log/slurmd.log"
  wait_for 60 "$SLURM/slurmd.pid" "slurmd (node $SLURM_NODE idle)" node_idle
}

stop_slurm() {
  [ -f "$SLURM/slurm.conf" ] || return 0
  export SLURM_CONF="$SLURM/slurm.conf"
  local jobs
  if alive "$SLURM/slurmctld.pid" && alive "$SLURM/slurmd.pid"; then
    # jobs first: a job's slurmstepd and tasks would outlive slurmd
    jobs="$(squeue --noheader --format=%A 2>/dev/null | sort -un | xargs)"
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086
      scancel $jobs 2>/dev/null || true
      for _ in $(seq 60); do
        [ -z "$(squeue --noheader 2>/dev/null)" ] && break
        sleep 0.5
      done
      echo "cancelled Slurm jobs $jobs"
    fi
  fi
  stop_pid slurmd "$SLURM/slurmd.pid"
  stop_pid slurmctld "$SLURM/slurmctld.pid"
  stop_pid munged "$SLURM/munged.pid"
}

slurm_status() {
  local port="" node=""
  if [ -f "$SLURM/slurm.conf" ]; then
    port="$(sed -n 's/^SlurmctldPort=//p' "$SLURM/slurm.conf")"
    node="$(sed -n "s/^NodeName=$SLURM_NODE NodeAddr=127.0.0.1 //p" "$SLURM/slurm.conf")"
    node="${node% State=UNKNOWN}"
  fi
  show munged "$SLURM/munged.pid" "socket $SLURM/munge/munge.socket"
  show slurmctld "$SLURM/slurmctld.pid" "127.0.0.1:$port partition $SLURM_PARTITION"
  if alive "$SLURM/slurmd.pid"; then
    node="$(SLURM_CONF="$SLURM/slurm.conf" sinfo --noheader --nodes="$SLURM_NODE" \
      --format=%T 2>/dev/null): $node"
  fi
  show slurmd "$SLURM/slurmd.pid" "node $SLURM_NODE $node"
}

# -- the stack -----------------------------------------------------------------------------

write_env() {  # services.env: the environment of what runs now (removed when nothing does)
  local lines=()
  if alive "$STATE/mlflow.pid"; then
    lines+=("export MLFLOW_TRACKING_URI=http://127.0.0.1:$(cat "$STATE/mlflow.port")")
  fi
  if alive "$STATE/ray.pid"; then
    lines+=("export RAY_ADDRESS=127.0.0.1:$(cat "$STATE/ray.port")"
      "export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0")
  fi
  if alive "$SLURM/slurmctld.pid"; then
    # bin/ first on PATH: its sacct answers submitit without an accounting database
    lines+=("export SLURM_CONF=$SLURM/slurm.conf" "export PATH=$SLURM/bin:\$PATH")
  fi
  if [ ${#lines[@]} -eq 0 ]; then
    rm -f "$STATE/services.env"
    return
  fi
  {
    echo "# written by scripts/services.sh; source it before a run"
    printf '%s\n' "${lines[@]}"
  } > "$STATE/services.env"
}

pidfile_of() {  # the PID file of a daemon, one per process this script starts
  case $1 in
    munged | slurmctld | slurmd) echo "$SLURM/$1.pid" ;;
    *) echo "$STATE/$1.pid" ;;
  esac
}

components() {  # components NAME...: check the names; all of them when none is given
  local name
  [ $# -gt 0 ] || set -- "${COMPONENTS[@]}"
  for name in "$@"; do
    case " ${COMPONENTS[*]} " in
      *" $name "*) ;;
      *) die "unknown component '$name' (known: ${COMPONENTS[*]})" ;;
    esac
  done
  echo "$@"
}

start() {  # start [COMPONENT...]: default postgres mlflow ray
  local wanted name
  [ $# -gt 0 ] || set -- postgres mlflow ray
  wanted=" $(components "$@") "
  mkdir -p "$STATE"
  for name in postgres mlflow ray munged slurmctld slurmd; do
    case $name in munged | slurmctld | slurmd) [[ $wanted == *" slurm "* ]] || continue ;; esac
    case $name in postgres | mlflow | ray) [[ $wanted == *" $name "* ]] || continue ;; esac
    if alive "$(pidfile_of "$name")"; then
      die "$name already runs (PID $(cat "$(pidfile_of "$name")")); stop first"
    fi
  done
  if [[ $wanted == *" mlflow "* && $wanted != *" postgres "* ]] && ! alive "$STATE/postgres.pid"; then
    die "mlflow needs postgres: start postgres mlflow"
  fi
  [[ $wanted != *" postgres "* ]] || start_postgres
  [[ $wanted != *" mlflow "* ]] || start_mlflow
  [[ $wanted != *" ray "* ]] || start_ray
  [[ $wanted != *" slurm "* ]] || start_slurm
  write_env
  status
}

stop_pid() {  # stop_pid NAME [PIDFILE]: SIGTERM to its process group, SIGKILL after 40 s
  local name=$1 pidfile=${2:-$STATE/$1.pid} pid
  if ! alive "$pidfile"; then rm -f "$pidfile"; return; fi
  pid="$(cat "$pidfile")"
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid"
  for _ in $(seq 80); do running "$pid" || break; sleep 0.5; done
  if running "$pid"; then
    echo "services: $name (PID $pid) ignored SIGTERM; killing it" >&2
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid"
  fi
  rm -f "$pidfile"
  echo "stopped $name (PID $pid)"
}

stop_postgres() {
  if alive "$STATE/postgres.pid"; then
    # pg_ctl stops the server through its PID file (postmaster.pid), waiting for it
    as_pg "$(pg_bindir)/pg_ctl" -D "$STATE/pg/data" -m fast -w stop >/dev/null
    # pg_ctl returns once postmaster.pid is gone; the process itself exits just after
    for _ in $(seq 60); do alive "$STATE/postgres.pid" || break; sleep 0.5; done
    alive "$STATE/postgres.pid" && die "postgres (PID $(cat "$STATE/postgres.pid")) still runs"
    echo "stopped postgres (PID $(cat "$STATE/postgres.pid"))"
  fi
  rm -f "$STATE/postgres.pid"
}

stop() {  # stop [COMPONENT...]: default every component
  local wanted
  [ -d "$STATE" ] || { echo "nothing to stop ($STATE does not exist)"; return; }
  wanted=" $(components "$@") "
  [[ $wanted != *" slurm "* ]] || stop_slurm
  if [[ $wanted == *" ray "* ]]; then
    stop_pid ray
    if [ -f "$STATE/ray.tmpdir" ]; then rm -rf "$(cat "$STATE/ray.tmpdir")" "$STATE/ray.tmpdir"; fi
  fi
  [[ $wanted != *" mlflow "* ]] || stop_pid mlflow
  [[ $wanted != *" postgres "* ]] || stop_postgres
  write_env
}

show() {  # show NAME PIDFILE WHERE: one status line
  if alive "$2"; then
    printf '%-9s running  PID %-7s %s\n' "$1" "$(cat "$2")" "$3"
  else
    printf '%-9s stopped\n' "$1"
  fi
}

status() {
  show postgres "$STATE/postgres.pid" \
    "127.0.0.1:$(cat "$STATE/postgres.port" 2>/dev/null) data $STATE/pg/data"
  show mlflow "$STATE/mlflow.pid" \
    "http://127.0.0.1:$(cat "$STATE/mlflow.port" 2>/dev/null) artifacts $STATE/mlflow-artifacts"
  show ray "$STATE/ray.pid" \
    "127.0.0.1:$(cat "$STATE/ray.port" 2>/dev/null) ($(cat "$STATE/ray.cpus" 2>/dev/null) CPUs)"
  slurm_status
  [ -f "$STATE/services.env" ] && echo "environment: source $STATE/services.env"
  return 0
}

usage="usage: $0 start [COMPONENT...] | stop [COMPONENT...] | status  (components: ${COMPONENTS[*]})"
case "${1:-}" in
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  status) status ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
