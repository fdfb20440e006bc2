#!/bin/sh
# memstrata image entry point: the first argument picks what the container runs.
#   serve | worker | up | produce | keys | config | ...   a memstrata command
#   ray-head [ray start options]                          a Ray head node
#   ray-worker [ray start options]                        a Ray worker node (needs RAY_ADDRESS)
#   healthcheck                                           gRPC health of the local service
#   any other program on PATH (python, ray, sh ...)       run as given
# exec keeps the program as PID 1, so SIGTERM reaches it (memstrata drains on SIGTERM).
set -eu
mkdir -p "${HOME:-/data/home}" "${TMPDIR:-/tmp}" 2>/dev/null || true
case "${1:-serve}" in
  ray-head)
    shift
    exec ray start --head --block --include-dashboard=false "$@" ;;
  ray-worker)
    shift
    exec ray start --block --address="${RAY_ADDRESS:?set RAY_ADDRESS to the Ray head (host:6379)}" "$@" ;;
  healthcheck)
    exec python -c 'import os, sys, grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
port = os.environ.get("MEMSTRATA_SERVICE_PORT", "50051")
with grpc.insecure_channel("127.0.0.1:" + port) as ch:
    r = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=4)
sys.exit(0 if r.status == health_pb2.HealthCheckResponse.SERVING else 1)' ;;
esac
if [ "$#" -eq 0 ]; then
  set -- serve
fi
case "$1" in
  -*) exec memstrata "$@" ;;
esac
if command -v -- "$1" >/dev/null 2>&1; then
  exec "$@"
fi
exec memstrata "$@"
