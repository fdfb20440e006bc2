"""CPU per turn of the redaction step, on against off, side by side in one run (LoCoMo turns).

Two measurements, both in process CPU time (``time.process_time``: every thread,
the encoder's included):

1. **The step alone**: the redactor over every message of the dataset, in
   modes off, mask and drop; on the dataset as it is (LoCoMo holds almost no
   sensitive values, so this is the cost of looking) and with one value of each
   kind put into one message in ten (the cost of finding and masking). Reported
   in microseconds per message and per turn.
2. **The write path**: ``Memory.ingest`` of the dataset's sessions into fresh
   data dirs on the embedded stack (extractive L0, MiniLM, Qdrant Edge, tantivy,
   SQLite) with redaction off and with mask, alternated over ``--rounds`` so
   both meet the same machine; CPU ms per turn and the mask/off ratio with its
   95% interval over the rounds.

    LOCOMO_PATH=... .venv/bin/python -m bench.redaction [--dataset PATH] [--rounds 2]
        [--sessions 60]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from bench._common import (
    OUT_DIR,
    console,
    load_average,
    locomo_default,
    print_table,
    ratio_interval,
    require_dataset,
)
from memstrata.config import Settings
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.ingest.formats import read_file
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.memory import Memory
from memstrata.model import Message, Session
from memstrata.redact.policy import Policy, Rule
from memstrata.redact.redactor import Redactor
from memstrata.redact.rules import RuleDetector
from memstrata.redact.types import RULE_KINDS
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store

KINDS = frozenset(RULE_KINDS)
#: Put into one message in ten for the "with values" variant.
VALUES = " Reach me at maya.lind@example.org or +44 20 7946 0958; card 4111 1111 1111 1111, " \
         "IBAN GB82 WEST 1234 5698 7654 32, server 203.0.113.77."


def redactor(mode: str) -> Redactor:
    return Redactor([RuleDetector()], Policy(Rule(mode, KINDS), {}))  # type: ignore[arg-type]


def with_values(messages: list[Message]) -> list[Message]:
    return [m.model_copy(update={"content": m.content + VALUES}) if i % 10 == 0 else m
            for i, m in enumerate(messages)]


def step_cpu_us(r: Redactor, messages: list[Message], min_s: float = 1.0) -> float:
    """CPU microseconds per message of ``r`` over ``messages`` (repeated for >= ``min_s``)."""
    passes = 0
    start = time.process_time()
    while True:
        for m in messages:
            r.message("bench", m)
        passes += 1
        used = time.process_time() - start
        if used >= min_s:
            return used / (passes * len(messages)) * 1e6


def ingest_cpu_s(sessions: list[Session], encoder: MiniLMEmbedder, mode: str) -> float:
    """Process CPU seconds of one ``Memory.ingest`` (and its flush) into a fresh data dir."""
    with tempfile.TemporaryDirectory() as tmp:
        s = Settings(data_dir=Path(tmp))
        memory = Memory(s, ExtractiveBuilder(), encoder, open_vector_store(s, encoder.dim),
                        open_lexical_store(s), open_doc_store(s),
                        session_lexical=open_lexical_store(s, sessions=True),
                        redactor=redactor(mode))
        try:
            start = time.process_time()
            memory.ingest(sessions)
            return time.process_time() - start
        finally:
            memory.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", type=Path, default=locomo_default())
    ap.add_argument("--rounds", type=int, default=2, help="alternated ingest rounds per mode")
    ap.add_argument("--sessions", type=int, default=60,
                    help="sessions ingested per round (the step alone reads them all)")
    args = ap.parse_args()
    dataset = require_dataset(args.dataset)
    sessions = list(read_file(dataset, tenant_id="bench").sessions)
    messages = [m for s in sessions for t in s.turns for m in t.messages]
    turns = sum(len(s.turns) for s in sessions)
    per_turn = len(messages) / turns
    console.print(f"{dataset.name}: {len(sessions)} sessions, {turns} turns, {len(messages)} "
                  f"messages; load average {load_average():.2f}")

    spiked = with_values(messages)
    step: dict[str, dict[str, float]] = {}
    for label, data in (("as is", messages), ("1 in 10 with values", spiked)):
        step[label] = {mode: step_cpu_us(redactor(mode), data) for mode in ("off", "mask", "drop")}
    print_table("The redaction step alone (CPU per message; per turn = x "
                f"{per_turn:.2f})", ["messages", "off us", "mask us", "drop us",
                                     "mask us/turn"],
                [[label, v["off"], v["mask"], v["drop"], v["mask"] * per_turn]
                 for label, v in step.items()])

    part = sessions[:args.sessions]
    part_turns = sum(len(s.turns) for s in part)
    encoder = MiniLMEmbedder()
    ingest_cpu_s(part[:2], encoder, "off")  # warm-up: encoder and stores loaded once
    rounds: list[dict[str, float]] = []
    for i in range(args.rounds):
        order = ("off", "mask") if i % 2 == 0 else ("mask", "off")
        got = {mode: ingest_cpu_s(part, encoder, mode) for mode in order}
        rounds.append(got)
        console.print(f"round {i + 1}: off {got['off']:.2f} s, mask {got['mask']:.2f} s CPU "
                      f"({part_turns} turns); load average {load_average():.2f}")
    ratio, low, high = ratio_interval([r["mask"] / r["off"] for r in rounds])
    off_ms = sum(r["off"] for r in rounds) / len(rounds) / part_turns * 1e3
    mask_ms = sum(r["mask"] for r in rounds) / len(rounds) / part_turns * 1e3
    print_table(f"Memory.ingest of {len(part)} sessions ({part_turns} turns), "
                f"{args.rounds} rounds", ["redaction", "CPU ms/turn", "mask/off"],
                [["off", off_ms, 1.0], ["mask", mask_ms, ratio]])
    console.print(f"mask/off CPU per turn: {ratio:.3f} (95% interval {low:.3f}-{high:.3f}); "
                  f"the step itself: {step['as is']['mask'] * per_turn:.1f} us/turn on LoCoMo "
                  f"as is")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / "redaction.json"
    out.write_text(json.dumps({"dataset": str(dataset), "messages": len(messages),
                               "turns": turns, "step_us_per_message": step,
                               "ingest_rounds_cpu_s": rounds, "ingest_turns": part_turns,
                               "ingest_ms_per_turn": {"off": off_ms, "mask": mask_ms},
                               "mask_over_off": [ratio, low, high],
                               "load_average": load_average()}, indent=2))
    console.print(f"wrote {out}")


if __name__ == "__main__":
    main()
