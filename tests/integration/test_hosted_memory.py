"""The seams a host plugs into a local memory (``memstrata.roles.HostedMemory``).

A host routes L1/L2 builds to another executor and counts cache reads through
``use_layer_executor`` and ``on_layer_read`` (what ``workers.materialize.attach``
uses), warms L1 with ``warm_facts``; the controller is opened from settings
(``Controller.open``) or from a hosted memory's own (``Controller.for_memory``);
the index fingerprint names the encoder's model through ``Embedder.model_id``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Settings
from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import Controller
from memstrata.embed.minilm import INT8_MODEL_ID, MODEL_ID, MiniLMEmbedder
from memstrata.embed.openai_embed import OpenAIEmbedder
from memstrata.layers.executor import LocalLayerExecutor
from memstrata.llm.types import Built
from memstrata.memory import Memory, embedder_id
from memstrata.roles import HostedMemory, LayerRequest, WarmsUp
from tests.support.conversation import MAYA, open_memory


class CountingExecutor:
    """TEST DOUBLE: a LayerExecutor that builds in-process and counts its builds."""

    def __init__(self, memory: Memory) -> None:
        self.inner = LocalLayerExecutor(memory.builder)
        self.layers: list[str] = []

    def build_layer(self, request: LayerRequest) -> Built[dict[str, Any]]:
        self.layers.append(request.layer)
        return self.inner.build_layer(request)


@pytest.fixture
def memory(tmp_path: Path, embedder: MiniLMEmbedder) -> Iterator[Memory]:
    m = open_memory(tmp_path / "data", embedder)
    yield m
    m.close()


def _session(memory: Memory) -> str:
    return memory.sessions(MAYA)[0].session_id


def test_builds_go_to_the_registered_executor_and_the_old_one_comes_back(memory: Memory):
    sid = _session(memory)
    counting = CountingExecutor(memory)
    previous = memory.use_layer_executor(counting)
    assert isinstance(previous, LocalLayerExecutor)
    memory.facts(MAYA, sid)
    memory.notes(MAYA, sid)
    memory.facts(MAYA, sid)  # cached: not built again
    assert counting.layers == ["L1", "L2"]
    assert memory.use_layer_executor(previous) is counting
    other = memory.sessions(MAYA)[1].session_id
    memory.facts(MAYA, other)
    assert counting.layers == ["L1", "L2"]  # the put-back executor built that one


def test_a_read_hook_sees_every_layer_read_until_removed(memory: Memory):
    sid = _session(memory)
    seen: list[tuple[str, bool]] = []
    remove = memory.on_layer_read(lambda layer, cached: seen.append((layer, cached)))
    memory.facts(MAYA, sid)
    memory.facts(MAYA, sid)
    memory.notes(MAYA, sid)
    assert memory.warm_facts(MAYA, sid) is False  # warming reads through the hook too
    assert seen == [("L1", False), ("L1", True), ("L2", False), ("L1", True)]
    remove()
    memory.notes(MAYA, sid)
    assert len(seen) == 4


def test_warm_facts_says_whether_it_built(memory: Memory):
    sid = _session(memory)
    assert memory.warm_facts(MAYA, sid) is True
    assert memory.warm_facts(MAYA, sid) is False


def test_a_memory_is_a_hosted_memory_and_warms_up(memory: Memory):
    hosted: HostedMemory = memory  # mypy checks the protocol; this checks it at run time
    assert isinstance(hosted, WarmsUp)
    assert hosted.settings is memory.settings and hosted.meter is memory.meter
    memory.warm_up()  # loads the encoder; nothing to assert but that it runs


def test_the_controller_is_opened_from_settings_or_from_a_hosted_memory(memory: Memory):
    own = Controller.for_memory(memory, ControllerSettings(policy="rules"))
    assert own.max_query_chars == memory.settings.max_query_chars and own.chat is None
    given = Controller.open(memory, ControllerSettings(policy="rules"),
                            app_settings=Settings(max_query_chars=40))
    assert given.max_query_chars == 40
    with pytest.raises(TypeError, match="app_settings"):
        Controller.open(memory, ControllerSettings(policy="rules"))  # type: ignore[call-arg]


def test_the_fingerprint_names_the_model_through_model_id(embedder: MiniLMEmbedder):
    # As before the interface named it: the ONNX model and the arithmetic.
    assert embedder.model_id in (MODEL_ID, INT8_MODEL_ID)
    assert embedder_id(embedder) == f"minilm:{embedder.model_id}"
    openai = OpenAIEmbedder(Settings(embed_backend="openai", embed_model="embed-m",
                                     llm_base_url="http://127.0.0.1:9"))
    assert openai.model_id == "embed-m" and embedder_id(openai) == "openai:embed-m"
