"""The committed gRPC code matches what proto/generate.py makes from the .proto files."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "memstrata" / "rpc"

pytest.importorskip("grpc_tools", reason="grpcio-tools (the grpc extra) generates the code")


def _generator():
    spec = importlib.util.spec_from_file_location("proto_generate", ROOT / "proto" / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_code_is_not_stale(tmp_path: Path):
    gen = _generator()
    fresh = gen.generate(tmp_path / "out")
    names = sorted(p.name for p in fresh)
    assert names == sorted(p.name for p in COMMITTED.glob(gen.GENERATED_GLOB) if p.is_file()), \
        "memstrata/rpc has other generated files than proto/generate.py writes"
    stale = [p.name for p in fresh if p.read_text() != (COMMITTED / p.name).read_text()]
    assert not stale, f"regenerate with `python proto/generate.py`: {stale} are stale"


def test_generated_code_imports_relatively():
    from memstrata.rpc import memory_pb2, memory_pb2_grpc

    assert memory_pb2.DESCRIPTOR.package == "memstrata.v1"
    assert memory_pb2_grpc.MemoryServiceStub is not None
