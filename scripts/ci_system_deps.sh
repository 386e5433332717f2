#!/usr/bin/env bash
# System packages the test suite needs beyond Python, installed the same way by .ci/run and
# on a fresh developer machine: PostgreSQL's server binaries (initdb, pg_ctl, postgres) for
# scripts/services.sh and the tracking-server tests, which run their own clusters in folders
# of their own. No system-wide cluster is created or started.
set -euo pipefail

if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "ci_system_deps: PostgreSQL missing; as root run: apt-get install postgresql" >&2
  exit 1
fi
# postgresql-common would create and start a 'main' cluster on port 5432: not wanted
mkdir -p /etc/postgresql-common/createcluster.d
echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/no-main-cluster.conf
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends postgresql postgresql-client
