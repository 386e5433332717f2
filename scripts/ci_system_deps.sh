#!/usr/bin/env bash
# System packages the test suite needs beyond Python (none at the moment; kept so
# .ci/run and a fresh developer machine install the same things).
set -euo pipefail
exit 0
