"""``import memstrata.client`` loads no engine: a client is light to install and to start.

Checked in a fresh interpreter (modules other tests imported would hide a
stray import): the client is imported, a client object is made (a gRPC
channel connects lazily, so nothing is dialled), an answer is read back from
its wire form, and none of the engine's modules may be loaded by then.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("grpc", reason="the client needs the grpc extra")

#: Third-party engines and the core's engine packages a client must not load.
ENGINE = ("numpy", "tantivy", "onnxruntime", "onnx", "tokenizers", "qdrant_edge",
          "qdrant_client", "opensearchpy", "openai", "memstrata.controller",
          "memstrata.retrieval", "memstrata.memory", "memstrata.store", "memstrata.embed",
          "memstrata.layers", "memstrata.synth", "memstrata.evidence", "memstrata.llm")

_PROBE = """
import json, sys
import memstrata.client as client
from memstrata.client import (AsyncMemoryClient, Durability, InvalidRequest, MemoryClient,
                              RemoteSessionNotFound, event)
from memstrata.contract import Answer, QueryError, SessionNotFound
from memstrata.rpc import memory_pb2 as pb
from memstrata.rpc.answers import answer_from_wire

c = MemoryClient("127.0.0.1:1", api_key="probe")
answer = answer_from_wire(pb.AnswerReply(question="q", answer="a", mode="llm",
                                         summary=pb.TraceSummary(policy="rules")))
assert isinstance(answer, Answer) and answer.summary.policy == "rules"
assert issubclass(RemoteSessionNotFound, SessionNotFound)
assert issubclass(InvalidRequest, QueryError)
event("u", "s", "m1", "user", "hi")
c.close()
print(json.dumps(sorted(sys.modules)))
"""


def _loaded() -> list[str]:
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def test_importing_the_client_and_making_one_loads_no_engine() -> None:
    loaded = _loaded()
    bad = sorted(m for m in loaded if any(m == e or m.startswith(e + ".") for e in ENGINE))
    assert not bad, f"import memstrata.client loaded engine modules: {bad}"
    # The probe really went through the client and the wire package.
    assert {"memstrata.client.sync", "memstrata.rpc.answers", "grpc"} <= set(loaded)


def test_the_contract_types_are_the_engines_own() -> None:
    """Moved beside the roles, the classes are still the ones the engine raises and returns."""
    from memstrata import contract
    from memstrata.controller import Answer, SourceRef
    from memstrata.evidence.trace import RoleTokens, TraceSummary
    from memstrata.layers.lazy import SessionNotFound
    from memstrata.memory import SessionNotFound as MemorySessionNotFound
    from memstrata.retrieval.hybrid import QueryError
    from memstrata.roles import QueryError as RolesQueryError
    from memstrata.roles import SessionNotFound as RolesSessionNotFound

    assert (Answer, SourceRef, RoleTokens, TraceSummary) == (
        contract.Answer, contract.SourceRef, contract.RoleTokens, contract.TraceSummary)
    assert SessionNotFound is MemorySessionNotFound is RolesSessionNotFound \
        is contract.SessionNotFound
    assert QueryError is RolesQueryError is contract.QueryError
