"""The controller needs nothing but the reader protocol: every reader answers alike.

The LoCoMo-style fixture is ingested once into a real embedded Memory; the
controller then answers every question over the local memory and over each
reader in ``READERS``, and the answers and traces must be identical apart
from timings. ``WireFormReader`` (a TEST DOUBLE, tests/support/wire_reader.py)
sends every result through its JSON wire form, as a remote reader would. A
remote reader (the gRPC client) joins the comparison by adding a factory to
``READERS``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Settings
from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import Controller
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.eval.datasets import Question, load_dataset
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.memory import Memory
from memstrata.roles import MemoryReader
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store
from tests.support.wire_reader import WireFormReader

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "locomo_mini.json"

#: Reader factories compared with the local Memory: name -> (memory -> reader).
READERS: dict[str, Callable[[Memory], MemoryReader]] = {
    "wire-form": WireFormReader,
}
#: Fields that measure time, not behaviour; and whether an L1/L2 read was a cache hit,
#: which depends on which run read the layer first.
_TIMINGS = {"ms", "ms_total", "ms_llm", "ms_memory", "cpu_ms_total", "cpu_ms_memory", "cached"}


@pytest.fixture(scope="module")
def dataset():
    return load_dataset(FIXTURE, "locomo")


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory, dataset,
           embedder: MiniLMEmbedder) -> Iterator[Memory]:
    s = Settings(data_dir=tmp_path_factory.mktemp("readers"))
    m = Memory(s, ExtractiveBuilder(), embedder, open_vector_store(s, embedder.dim),
               open_lexical_store(s), open_doc_store(s))
    m.ingest(dataset.parsed.sessions)
    yield m
    m.close()


def _untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in _TIMINGS}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _answers(reader: MemoryReader, questions: list[Question], **switches: Any) -> list[Any]:
    ctl = Controller(reader, ControllerSettings(policy="rules", **switches))
    return [_untimed(ctl.answer(q.scope, q.question, q.asked_on).model_dump(mode="json"))
            for q in questions]


@pytest.fixture(scope="module")
def local_answers(memory: Memory, dataset) -> list[Any]:
    return _answers(memory, dataset.questions)


@pytest.mark.parametrize("name", sorted(READERS))
def test_reader_gives_identical_answers_and_traces(name: str, memory: Memory, dataset,
                                                   local_answers: list[Any]):
    reader = READERS[name](memory)
    assert isinstance(reader, MemoryReader)
    theirs = _answers(reader, dataset.questions)
    assert len(theirs) == len(local_answers) == len(dataset.questions)
    for q, mine, other in zip(dataset.questions, local_answers, theirs):
        assert other == mine, q.question
    # The comparison is not vacuous: the controller read every layer and answered.
    tools = {s["tool"] for a in local_answers for s in a["steps"]}
    assert {"search", "read_facts", "read_turns", "read_raw"} <= tools
    assert sum(1 for a in local_answers if not a["abstained"]) >= len(local_answers) // 2
    if isinstance(reader, WireFormReader):
        assert {"search", "sessions", "facts", "notes", "raw"} <= set(reader.calls)


@pytest.mark.parametrize("name", sorted(READERS))
def test_reader_without_the_controller_gives_identical_top_k(name: str, memory: Memory,
                                                             dataset):
    qs = dataset.questions[:4]
    assert _answers(READERS[name](memory), qs, use_controller=False) == \
        _answers(memory, qs, use_controller=False)


def test_controller_open_takes_a_plain_reader(memory: Memory, dataset):
    """A reader that is not a Memory gets its LLM and query limit from the settings."""
    sent: list[str] = []

    class Spy(WireFormReader):
        def search(self, scope, queries, top_k=None):  # type: ignore[no-untyped-def]
            sent.extend([queries] if isinstance(queries, str) else queries)
            return super().search(scope, queries, top_k)

    ctl = Controller.open(Spy(memory), ControllerSettings(policy="rules"),
                          app_settings=Settings(max_query_chars=40))
    assert ctl.max_query_chars == 40 and ctl.chat is None
    q = dataset.questions[0]
    a = ctl.answer(q.scope, q.question + " " + "and more words " * 10, q.asked_on)
    assert a.answer and sent and max(len(x) for x in sent) == 40
