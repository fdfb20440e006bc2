"""Make the README's picture of the main dashboard from real data.

    .venv/bin/python -m tests.deploy.dashboard_picture --minutes 4 \\
        --output docs/img/dashboard-overview.png

Starts `memstrata serve` (embedded, LLM controller against FakeOpenAIServer, a TEST
DOUBLE of an OpenAI-compatible endpoint, so tokens and cost are counted at example
prices) and a real Prometheus from infra/prometheus, drives traffic for a few minutes
(ingests, searches, answers, some refused calls), then plots every panel's own queries
with infra/grafana/preview.py. A helper for docs, not a test.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tests.deploy.test_observability import ROOT, SAMPLE, run_prometheus, run_serve

QUESTIONS = ["When did I go to Porto?", "What is my cat called?", "Where is my sister?",
             "How is my knee after the half marathon training?", "What did I plan for May?",
             "How much money do we have for Lisbon?", "What food did we love last year?"]


def drive(address: str, key: str, seconds: float) -> int:
    from memstrata.client import MemoryClient
    from memstrata.rpc import memory_pb2 as pb
    from memstrata.client.errors import RemoteError
    from memstrata.model import Scope

    rng = random.Random(7)
    maya = Scope(tenant_id="acme", user_id="maya")
    turns = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    calls = 0
    end = time.monotonic() + seconds
    with MemoryClient(address, api_key=key) as client:
        while time.monotonic() < end:
            i = calls
            t = turns[i % len(turns)]
            if i % 5 == 0:  # a trickle of new turns through the stream worker
                client.ingest([pb.TurnEvent(
                    user_id="maya", session_id=f"{t['session_id']}-r{i // len(turns)}",
                    message_id=f"m{i}", role=t["role"], content=t["content"],
                    session_date=t["session_date"][:10])])
            elif i % 3 == 0:
                client.answer(maya, rng.choice(QUESTIONS))
            else:
                client.search(maya, rng.choice(QUESTIONS))
            if i % 17 == 0:
                try:
                    client.search(Scope(tenant_id="globex", user_id="x"), "refused")
                except RemoteError:
                    pass
            calls += 1
            time.sleep(rng.uniform(0.05, 0.3))
    return calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=4)
    ap.add_argument("--output", type=Path, default=ROOT / "docs" / "img" /
                    "dashboard-overview.png")
    args = ap.parse_args()
    binary = shutil.which("prometheus")
    if binary is None:
        sys.exit("needs the prometheus binary (apt-get install -y prometheus)")
    sys.path.insert(0, str(ROOT / "infra" / "grafana"))
    import preview

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        with run_serve(tmp) as served, run_prometheus(served, tmp, binary) as base:
            calls = drive(served.address, served.key, args.minutes * 60)
            time.sleep(3)  # the last scrape
            n = preview.draw(base, ROOT / "infra" / "grafana" / "dashboards" /
                             "memstrata-overview.json", args.minutes + 0.5, "30s", args.output)
    print(f"{calls} calls in {args.minutes:g} min; wrote {args.output} ({n} panels with data)")


if __name__ == "__main__":
    main()
