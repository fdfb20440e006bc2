#!/usr/bin/env bash
# The container stage of CI, apart from the unit suite: build the image with podman
# (runc runtime) from a local Debian base and a host-built wheelhouse, run it read-only
# as non-root, and `podman kube play` the chart's embedded manifests. Needs the Debian
# packages podman, runc, mmdebstrap, and checkov in its own venv: tests/container/setup.sh.
# The tests are bounded to 6 minutes (preparing the base image and wheelhouse comes
# first, cached); they skip, saying why, where podman cannot run.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PYTHON:-.venv/bin/python}"
export MEMSTRATA_CONTAINER_TESTS=1
CHECKOV="${XDG_CACHE_HOME:-$HOME/.cache}/memstrata-container/checkov-venv/bin/checkov"
if [ -x "$CHECKOV" ]; then export MEMSTRATA_CHECKOV="$CHECKOV"; fi
# Inputs first (cached; mmdebstrap and the wheelhouse take minutes on a cold machine).
timeout 900 "$PY" -m tests.container.prepare
exec timeout --kill-after=20 360 "$PY" -m pytest -q -p no:cacheprovider -m container \
  --timeout=340 tests/container "$@"
