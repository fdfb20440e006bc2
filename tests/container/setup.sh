#!/usr/bin/env bash
# Set-up of the container stage (run once per machine, before run.sh; needs root):
# Debian's podman (with the runc runtime; crun fails on this kernel's cgroups),
# mmdebstrap for the offline base image, prometheus for promtool and the scrape test,
# and checkov in its own virtualenv (it pins dependencies that clash with memstrata's).
set -euo pipefail
cd "$(dirname "$0")/../.."
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc mmdebstrap prometheus
fi
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/memstrata-container"
mkdir -p "$CACHE"
if [ ! -x "$CACHE/checkov-venv/bin/checkov" ]; then
  python3 -m venv "$CACHE/checkov-venv"
  "$CACHE/checkov-venv/bin/pip" install -q "checkov==3.3.30"
fi
echo "container stage ready: podman $(podman --version 2>/dev/null | cut -d' ' -f3), checkov $("$CACHE/checkov-venv/bin/checkov" --version)"
