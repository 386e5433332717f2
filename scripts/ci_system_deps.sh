#!/usr/bin/env bash
# System packages the test suite needs beyond Python, installed the same way by .ci/run
# and by `make setup` on a fresh developer machine (as root, or through sudo; Debian/apt):
# - chromium + chromium-driver: the MLflow UI test (tests/test_mlflow_ui.py) opens the
#   experiment page in headless Chromium and checks what a user sees.
# - postgresql: the server binaries (initdb, pg_ctl, postgres) for scripts/services.sh and
#   the tracking-server tests, which run clusters of their own in their own folders; no
#   system-wide cluster is created or started.
# - slurm-wlm + munge: slurmctld, slurmd, sbatch/squeue/sinfo and munged for
#   `scripts/services.sh slurm-start` and tests/test_slurm.py, which run a one-node
#   cluster in a folder of its own; the packages' system-wide daemons are neither started
#   nor enabled.
set -euo pipefail

PACKAGES=(chromium chromium-driver postgresql postgresql-client slurm-wlm munge)
DAEMONS=(munge slurmctld slurmd)   # services the Slurm packages would start and enable

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "scripts/ci_system_deps.sh: missing ${missing[*]}; neither root nor sudo here: run this script as root" >&2
    exit 2
  fi
  SUDO="sudo"
fi
# postgresql-common would create and start a 'main' cluster on port 5432: not wanted
$SUDO mkdir -p /etc/postgresql-common/createcluster.d
echo "create_main_cluster = false" \
  | $SUDO tee /etc/postgresql-common/createcluster.d/no-main-cluster.conf >/dev/null
# Package scripts start services through invoke-rc.d / deb-systemd-invoke, which ask
# policy-rc.d first: "101" forbids every start during this install. A policy-rc.d already
# there (container images ship one) is kept; one put here is removed afterwards.
policy=/usr/sbin/policy-rc.d
own_policy=""
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 755 "$policy"
  own_policy=1
fi
cleanup() { if [ -n "$own_policy" ]; then $SUDO rm -f "$policy"; fi; }
trap cleanup EXIT
enabled() {  # the boot-time links of $1 (systemd and SysV init)
  ls /etc/systemd/system/*.wants/"$1".service /etc/rc?.d/S??"$1" 2>/dev/null || true
}
declare -A before
for daemon in "${DAEMONS[@]}"; do before[$daemon]="$(enabled "$daemon")"; done
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y "${missing[@]}"
# ... and they enable their daemons for the next boot: undo that for each daemon this
# install enabled (one this machine had enabled before is left as it was)
for daemon in "${DAEMONS[@]}"; do
  [ -z "${before[$daemon]}" ] || continue
  [ -n "$(enabled "$daemon")" ] || continue
  if command -v deb-systemd-helper >/dev/null; then
    $SUDO deb-systemd-helper disable "$daemon.service" >/dev/null 2>&1 || true
  fi
  if [ -f "/etc/init.d/$daemon" ]; then
    $SUDO update-rc.d "$daemon" disable >/dev/null 2>&1 || true
  fi
done
