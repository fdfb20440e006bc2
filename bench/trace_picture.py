"""docs/img/tracing-waterfall.png: one turn's trace and one answer's, from real spans.

```bash
.venv/bin/python -m bench.trace_picture
```

A real ``memstrata serve`` (embedded broker, stream worker and query
service in one process) runs with tracing switched on by ``OTEL_*``
variables, exporting OTLP/HTTP to a receiver on loopback
(``tests/support/otlp_receiver.py``, which decodes the requests with
``opentelemetry-proto``). This script is its client, traced too: it ingests
``examples/sample_turns.jsonl`` (tenant ``acme``), then sends one more turn
and asks one question. The two traces (the turn's: client -> Ingest -> Kafka
-> stream worker -> store writes -> L0 notice; the answer's: client -> Answer
-> controller steps) are drawn as waterfalls with matplotlib; the spans are
kept in ``bench/out/trace_picture.json``.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from bench._common import OUT_DIR, ROOT, console, setup_matplotlib
from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan

SAMPLE = ROOT / "examples" / "sample_turns.jsonl"
PICTURE = ROOT / "docs" / "img" / "tracing-waterfall.png"
QUESTION = "What is the name of my sister?"
COLORS = {"memstrata-client": "#4C72B0", "memstrata-serve": "#DD8452"}


def _events() -> list[Any]:
    from memstrata.client import event

    out = []
    for line in SAMPLE.read_text().splitlines():
        r = json.loads(line)
        if r["tenant_id"] == "acme":
            out.append(event(r["user_id"], r["session_id"], r["message_id"], r["role"],
                             r["content"], session_date=datetime.fromisoformat(
                                 r["session_date"])))
    return out


def _tree(spans: list[ReceivedSpan]) -> list[tuple[int, ReceivedSpan]]:
    """The spans depth-first (children by start time), with their depth."""
    ids = {s.span_id for s in spans}
    children: dict[str, list[ReceivedSpan]] = {}
    for s in spans:
        children.setdefault(s.parent_span_id if s.parent_span_id in ids else "", []).append(s)
    out: list[tuple[int, ReceivedSpan]] = []

    def walk(parent: str, depth: int) -> None:
        for s in sorted(children.get(parent, []), key=lambda x: (x.start_ns, x.end_ns)):
            out.append((depth, s))
            walk(s.span_id, depth + 1)

    walk("", 0)
    return out


def draw(ax: Any, spans: list[ReceivedSpan], title: str) -> None:
    rows = _tree(spans)
    t0 = min(s.start_ns for s in spans)
    total = (max(s.end_ns for s in spans) - t0) / 1e6
    for y, (_depth, s) in enumerate(rows):
        left, width = (s.start_ns - t0) / 1e6, s.ms
        color = COLORS.get(s.service, "#55A868")
        ax.barh(y, max(width, total / 400), left=left, color=color, height=0.6)
        ax.text(left + max(width, total / 400) + total / 150, y, f"{width:.1f} ms",
                va="center", fontsize=7, color="#333333")
    from matplotlib.patches import Patch

    labels = ["  " * d + s.name for d, s in rows]
    ax.set_yticks(range(len(rows)))
    # Left-aligned, so a child's indentation under its parent shows.
    ax.set_yticklabels(labels, fontsize=8, family="monospace", ha="left")
    ax.tick_params(axis="y", pad=4.9 * max(len(x) for x in labels) + 4, length=0)
    ax.invert_yaxis()
    ax.set_xlim(0, total * 1.15)
    ax.set_xlabel("ms since the trace began")
    ax.set_title(title, fontsize=10, loc="left", pad=18)
    services = dict.fromkeys(s.service for _, s in rows)
    ax.legend(handles=[Patch(color=COLORS.get(n, "#55A868"), label=f"service.name={n}")
                       for n in services], loc="lower right", bbox_to_anchor=(1.0, 1.0),
              ncol=len(services), fontsize=7, frameon=False)


def main() -> None:
    from memstrata.client import MemoryClient, event
    from memstrata.model import Scope
    from memstrata.telemetry import setup
    from tests.support.serve_proc import ServeProcess, add_key

    receiver = OtlpReceiver().start()
    otel = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":
            receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "200"}
    data = Path(tempfile.mkdtemp(prefix="memstrata-trace-picture-"))
    key = add_key(data, "acme")
    serve = ServeProcess(data, env={**otel, "OTEL_SERVICE_NAME": "memstrata-serve"})
    try:
        serve.wait_serving()
        os.environ.update(otel)
        setup.setup_from_env("memstrata-client")
        with MemoryClient(serve.address, api_key=key) as client:
            console.print("ingesting the sample history ...")
            events = _events()
            for sid in dict.fromkeys(e.session_id for e in events):
                client.ingest([e for e in events if e.session_id == sid])
            client.ingest([event("maya", "2024-05-20-after-trip", "2024-05-20-after-trip#9",
                                 "user", "Ines says the pasteis de nata were the best part.",
                                 session_date=datetime(2024, 5, 20, 19, 0))])
            answer = client.answer(Scope(tenant_id="acme", user_id="maya"), QUESTION)
        setup.shutdown()  # the client's last spans
        console.print(f"answer: {answer.answer!r}, trace {answer.summary.trace_id}")

        def ready(spans: list[ReceivedSpan]) -> bool:
            names = {(s.trace_id, s.name) for s in spans}
            return any(n == "memstrata.l0.v1 send" for _, n in names) and any(
                t == answer.summary.trace_id and n == "invoke_agent memstrata.controller"
                for t, n in names)

        spans = receiver.wait_for(ready, 60)
    finally:
        serve.stop()
        receiver.stop()
    ingest = max((s for s in spans if s.service == "memstrata-client"
                  and s.name.endswith("/IngestBatch")), key=lambda s: s.start_ns)
    turn = [s for s in spans if s.trace_id == ingest.trace_id]
    asked = [s for s in spans if s.trace_id == answer.summary.trace_id]
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "trace_picture.json").write_text(json.dumps(
        {"turn": [asdict(s) for s in turn], "answer": [asdict(s) for s in asked]}, indent=1))
    plt = setup_matplotlib()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 0.28 * (len(turn) + len(asked)) + 2.6),
                                      height_ratios=[len(turn) + 1, len(asked) + 1])
    draw(top, turn, f"One turn (IngestBatch of one message): trace {ingest.trace_id}")
    draw(bottom, asked, f"One answer ({QUESTION!r}): trace {answer.summary.trace_id}")
    fig.tight_layout()
    PICTURE.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PICTURE, dpi=110)
    console.print(f"{len(turn)} + {len(asked)} spans drawn: {PICTURE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
