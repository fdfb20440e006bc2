"""Turn-at-a-time appends against one-shot ingest, and search latency under a writer.

Two measurements in one run, on the embedded stack (extractive L0, MiniLM,
Qdrant Edge, tantivy, SQLite):

1. A 30-turn session written into fresh data dirs: ``append`` one turn at a
   time (closing the session at the end), with tantivy committing every write
   and committing on flush only, against ``ingest`` of the whole session at
   once. Reported: wall time, encoder calls and texts encoded. Appending must
   not re-embed a turn whose unit did not change, so its texts should equal
   the one-shot count.
2. Search latency (p50/p99) for one user of a loaded memory, from 1 and from
   8 reader threads, each with no writer and with a writer thread appending
   turns to another user's session the whole time.

    .venv/bin/python -m bench.append_vs_ingest [--dataset PATH] [--searches N]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


from bench._common import locomo_default, require_dataset
from bench._common import console, load_average, percentiles_ms, print_table, progress
from memstrata.config import Settings
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.embed.types import Embedder
from memstrata.ingest.formats import read_file
from memstrata.layers.windowing import group_turns
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.memory import Memory
from memstrata.model import Message, Scope, Session, SessionMeta
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store
# The tests' counting wrapper: it counts what the encoder is asked, nothing else.
from tests.support.counting import CountingEmbedder

DEFAULT_DATASET = locomo_default()  # LOCOMO_PATH
QUESTIONS = ["When did she go to the support group?", "What does she like to paint?",
             "Where did they go camping last summer?", "What books has she read recently?",
             "How many children does he have?", "Which instrument does he play?"]


def memory_at(path: Path, encoder: Embedder, **settings: object) -> Memory:
    s = Settings(data_dir=path, **settings)  # type: ignore[arg-type]
    return Memory(s, ExtractiveBuilder(), encoder, open_vector_store(s, encoder.dim),
                  open_lexical_store(s), open_doc_store(s))


def thirty_turns(n: int = 30) -> list[Message]:
    topics = ["We moved the garden beds to the sunny side of the house.",
              "My brother starts his new job at the harbour office on Monday.",
              "The choir is rehearsing a Vivaldi piece for the spring concert.",
              "I booked a week in Kyoto for the cherry blossom season.",
              "The vet said the cat needs a special diet for her kidneys.",
              "Our team shipped the billing migration two days early."]
    out = []
    for i in range(n):
        out.append(Message(role="user", content=f"{topics[i % len(topics)]} (turn {i + 1})",
                           source_id=f"u{i}"))
        out.append(Message(role="assistant", content="That is good news; tell me more about it.",
                           source_id=f"a{i}"))
    return out


def append_vs_ingest(encoder: MiniLMEmbedder) -> None:
    meta = SessionMeta(scope=Scope(tenant_id="bench", user_id="ann"), session_id="s30")
    turns = group_turns(thirty_turns())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        enc = CountingEmbedder(encoder)
        with memory_at(Path(tmp) / "once", enc) as m:
            t0 = time.perf_counter()
            m.ingest([Session(meta=meta, turns=turns)])
            rows.append(["ingest at once", len(turns), time.perf_counter() - t0, enc.calls,
                         enc.texts])
            once = [u.model_dump() for u in m.l0(meta.scope, "s30")]
        same = []
        for label, commit in (("append one turn at a time", "write"),
                              ("  same, MEMSTRATA_TANTIVY_COMMIT=flush", "flush")):
            enc = CountingEmbedder(encoder)
            with memory_at(Path(tmp) / f"append-{commit}", enc, tantivy_commit=commit) as m:
                t0 = time.perf_counter()
                for t in turns:
                    m.append(meta, [t])
                m.close_session(meta.scope, "s30")
                m.flush()
                rows.append([label, len(turns), time.perf_counter() - t0, enc.calls,
                             enc.texts])
                same.append([u.model_dump() for u in m.l0(meta.scope, "s30")] == once)
    print_table("30-turn session: append vs ingest",
                ["path", "turns", "seconds", "encoder calls", "texts encoded"], rows)
    console.print(f"records identical to the one-shot ingest: {all(same)}")


def search_under_writer(encoder: MiniLMEmbedder, dataset: Path, searches: int) -> None:
    parsed = read_file(dataset)
    scope = parsed.sessions[0].scope
    rows = []
    with tempfile.TemporaryDirectory() as tmp, memory_at(Path(tmp), encoder) as m:
        with progress() as bar:
            task = bar.add_task("load", total=parsed.turns)
            m.ingest(parsed.sessions, progress=lambda n: bar.advance(task, n))
        m.search(scope, QUESTIONS[0])  # warm
        writer_meta = SessionMeta(scope=Scope(tenant_id="bench", user_id="writer"),
                                  session_id="live")
        for threads in (1, 8):
            for writing in (False, True):
                stop = threading.Event()
                appended = [0]

                def writer(stop: threading.Event = stop, appended: list[int] = appended) -> None:
                    msgs = thirty_turns(10_000)
                    i = 0
                    while not stop.is_set() and i < len(msgs):
                        m.append_messages(writer_meta, msgs[i : i + 2])
                        appended[0] += 1
                        i += 2

                def one(i: int) -> float:
                    t0 = time.perf_counter()
                    m.search(scope, QUESTIONS[i % len(QUESTIONS)])
                    return time.perf_counter() - t0

                w = threading.Thread(target=writer) if writing else None
                if w:
                    w.start()
                t0 = time.perf_counter()
                with ThreadPoolExecutor(max_workers=threads) as pool:
                    samples = list(pool.map(one, range(searches)))
                wall = time.perf_counter() - t0
                stop.set()
                if w:
                    w.join()
                p50, p99 = percentiles_ms(samples)
                rows.append([threads, "yes" if writing else "no", searches, p50, p99,
                             searches / wall, appended[0] if writing else 0])
    print_table(f"search latency, {dataset.name} ({parsed.turns} turns loaded), "
                f"one user's sessions",
                ["reader threads", "writer appending", "searches", "p50 ms", "p99 ms",
                 "searches/s", "turns appended meanwhile"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--searches", type=int, default=400)
    args = parser.parse_args()
    # Without LoCoMo the search half runs on the invented LongMemEval-style set.
    dataset = require_dataset(args.dataset or Path("examples/longmemeval_dev.json"))
    encoder = MiniLMEmbedder()
    encoder.embed_documents(["warm up"])
    console.print(f"load average {load_average():.2f}")
    append_vs_ingest(encoder)
    search_under_writer(encoder, dataset, args.searches)
    console.print(f"load average {load_average():.2f}")


if __name__ == "__main__":
    main()
