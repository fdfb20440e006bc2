"""``python -m memstrata.client.health_probe``: a gRPC health check that speaks TLS.

The kubelet's gRPC probes connect in plaintext only, so a query service that
serves TLS (``MEMSTRATA_SERVICE_TLS_CERT``) cannot be probed by them; the chart
runs this module as an exec probe instead. It imports grpc and the health
stubs only (a fraction of a second), asks the standard ``grpc.health.v1``
service and exits 0 when the answer is SERVING, 1 otherwise (NOT_SERVING while
draining, no answer, a refused certificate), printing one line on failure.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["main", "probe"]


def probe(address: str, *, ca: Path | None, cert: Path | None = None, key: Path | None = None,
          server_name: str | None = None, service: str = "", timeout_s: float = 3.0) -> str:
    """The health status name the service at ``address`` reports (raises when none)."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    if ca is None:
        channel = grpc.insecure_channel(address)
    else:
        creds = grpc.ssl_channel_credentials(
            ca.read_bytes(), key.read_bytes() if key else None,
            cert.read_bytes() if cert else None)
        options = [("grpc.ssl_target_name_override", server_name)] if server_name else []
        channel = grpc.secure_channel(address, creds, options=options)
    with channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=timeout_s)
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memstrata.client.health_probe",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--address", default="127.0.0.1:50051")
    parser.add_argument("--ca", type=Path, help="PEM CA bundle (TLS); unset: plaintext")
    parser.add_argument("--cert", type=Path, help="client certificate (mutual TLS)")
    parser.add_argument("--key", type=Path, help="client key (mutual TLS)")
    parser.add_argument("--server-name", help="name the server certificate must carry")
    parser.add_argument("--service", default="", help="health service name ('': the server)")
    parser.add_argument("--timeout", type=float, default=3.0)
    args = parser.parse_args(argv)
    if (args.cert is None) != (args.key is None):
        parser.error("--cert and --key go together")
    try:
        status = probe(args.address, ca=args.ca, cert=args.cert, key=args.key,
                       server_name=args.server_name, service=args.service,
                       timeout_s=args.timeout)
    except Exception as exc:  # noqa: BLE001 - any failure is a failed probe, said in one line
        print(f"health probe of {args.address}: {type(exc).__name__}: {exc}"[:500],
              file=sys.stderr)
        return 1
    if status != "SERVING":
        print(f"health probe of {args.address}: {status}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
