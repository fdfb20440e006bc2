"""A small OTLP/HTTP trace receiver on loopback: what a collector would get, decoded.

It answers ``POST /v1/traces`` (protobuf, optionally gzip-compressed) by
decoding the ``ExportTraceServiceRequest`` with ``opentelemetry-proto`` and
keeping each span as a :class:`ReceivedSpan`. Used in a thread by the tests,
and as a process of its own (spans as JSON lines) by ``bench/tracing_overhead.py``
and ``bench/trace_picture.py`` so its CPU is not counted with the service's::

    python -m tests.support.otlp_receiver --port-file PORT_FILE --out SPANS.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import json
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["OtlpReceiver", "ReceivedSpan", "decode_request", "read_spans"]


@dataclass
class ReceivedSpan:
    """One span as the receiver decoded it (ids in hex; ``parent_span_id`` "" for a root)."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    start_ns: int
    end_ns: int
    service: str
    scope: str
    attributes: dict[str, Any] = field(default_factory=dict)
    #: (trace_id, span_id) of each linked span.
    links: list[tuple[str, str]] = field(default_factory=list)
    status: int = 0

    @property
    def ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind) if kind else None


def decode_request(body: bytes) -> list[ReceivedSpan]:
    """The spans of one serialized ``ExportTraceServiceRequest``."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    req = ExportTraceServiceRequest()
    req.ParseFromString(body)
    out: list[ReceivedSpan] = []
    for rs in req.resource_spans:
        resource = {kv.key: _value(kv.value) for kv in rs.resource.attributes}
        for ss in rs.scope_spans:
            for s in ss.spans:
                out.append(ReceivedSpan(
                    trace_id=s.trace_id.hex(), span_id=s.span_id.hex(),
                    parent_span_id=s.parent_span_id.hex(), name=s.name, kind=int(s.kind),
                    start_ns=int(s.start_time_unix_nano), end_ns=int(s.end_time_unix_nano),
                    service=str(resource.get("service.name", "")), scope=ss.scope.name,
                    attributes={kv.key: _value(kv.value) for kv in s.attributes},
                    links=[(ln.trace_id.hex(), ln.span_id.hex()) for ln in s.links],
                    status=int(s.status.code)))
    return out


class OtlpReceiver:
    """``http://127.0.0.1:PORT/v1/traces`` in a background thread; spans in :attr:`spans`."""

    def __init__(self, port: int = 0, on_spans: Callable[[list[ReceivedSpan]], None] | None
                 = None) -> None:
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self._lock = threading.Lock()
        self._on_spans = on_spans
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding", "") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                receiver._add(decode_request(body))
                from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
                    ExportTraceServiceResponse,
                )

                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True,
                                       name="otlp-receiver")

    def _add(self, spans: list[ReceivedSpan]) -> None:
        with self._lock:
            self.spans.extend(spans)
            self.requests += 1
        if self._on_spans is not None:
            self._on_spans(spans)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def endpoint(self) -> str:
        """For ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (the full URL, path included)."""
        return f"http://127.0.0.1:{self.port}/v1/traces"

    def start(self) -> "OtlpReceiver":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def snapshot(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self.spans)

    def wait_for(self, check: Callable[[list[ReceivedSpan]], bool], timeout_s: float,
                 step_s: float = 0.1) -> list[ReceivedSpan]:
        """Until ``check(spans)`` holds; the spans then (AssertionError after ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        while True:
            spans = self.snapshot()
            if check(spans):
                return spans
            if time.monotonic() >= deadline:
                names = sorted({f"{s.service}:{s.name}" for s in spans})
                raise AssertionError(f"the receiver did not get the spans in {timeout_s:g} s; "
                                     f"it has {len(spans)}: {names}")
            time.sleep(step_s)


def read_spans(path: Path) -> list[ReceivedSpan]:
    """Spans a receiver process wrote (one JSON object a line)."""
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            data = json.loads(line)
            data["links"] = [tuple(x) for x in data.get("links", [])]
            out.append(ReceivedSpan(**data))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description="OTLP/HTTP trace receiver on 127.0.0.1")
    ap.add_argument("--port-file", type=Path, required=True,
                    help="written with the port once listening")
    ap.add_argument("--out", type=Path, required=True, help="spans, one JSON object a line")
    args = ap.parse_args()
    out = args.out.open("a")
    lock = threading.Lock()

    def write(spans: list[ReceivedSpan]) -> None:
        with lock:
            for s in spans:
                out.write(json.dumps(asdict(s)) + "\n")
            out.flush()

    receiver = OtlpReceiver(on_spans=write).start()
    args.port_file.write_text(str(receiver.port))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    receiver.stop()
    out.close()


if __name__ == "__main__":
    main()
