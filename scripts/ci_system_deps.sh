#!/usr/bin/env bash
# System packages the test suite needs beyond Python, installed the same way by .ci/run
# and on a fresh developer machine (as root, or through sudo):
# - chromium + chromium-driver: the MLflow UI test (tests/test_mlflow_ui.py) opens the
#   experiment page in headless Chromium and checks what a user sees.
# - postgresql: the server binaries (initdb, pg_ctl, postgres) for scripts/services.sh and
#   the tracking-server tests, which run clusters of their own in their own folders; no
#   system-wide cluster is created or started.
set -euo pipefail

PACKAGES=(chromium chromium-driver postgresql postgresql-client)

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
# postgresql-common would create and start a 'main' cluster on port 5432: not wanted
$SUDO mkdir -p /etc/postgresql-common/createcluster.d
echo "create_main_cluster = false" \
  | $SUDO tee /etc/postgresql-common/createcluster.d/no-main-cluster.conf >/dev/null
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y "${missing[@]}"
