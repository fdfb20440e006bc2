"""A keys file that goes bad while the service runs: the last good keys keep serving.

A real server (the real servicer, interceptor and keys module) over the shared
test memory reads its own keys file; the test damages that file the way a
half-finished hand edit does, then calls with a good key and with a garbage one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from memstrata.controller.config import ControllerSettings
from memstrata.limits import TurnLimits
from memstrata.rpc import memory_pb2 as pb
from memstrata.rpc import memory_pb2_grpc as pb_grpc
from query_service.interceptors.auth import BAD_KEY, KEYS_UNAVAILABLE
from query_service.keys import KeyRing, KeysFileError, add_key
from query_service.server import build_server
from query_service.settings import ServiceSettings
from tests.integration.query_service.conftest import Service

#: Text that only the damaged file holds: no status or log line may repeat it.
MARKER = "zz-private-marker-41"

DAMAGES = {
    # Cut off mid-write: not JSON at all.
    "truncated": '{"keys": {"abc": {"tenant": "acme", "sha256": "' + MARKER,
    # Valid JSON that the schema refuses: pydantic would quote the bad value.
    "bad-hash": '{"keys": {"abc": {"tenant": "acme", "sha256": "' + MARKER + '"}}}',
}


@pytest.fixture
def own_server(service: Service, tmp_path: Path) -> Iterator[tuple[str, Path, str]]:
    """(address, keys file, a good acme key) of a server that reads its own keys file."""
    keys_path = tmp_path / "keys.json"
    _, key = add_key(keys_path, "acme")
    settings = ServiceSettings(port=0, metrics_port=None, keys_file=keys_path, grace_s=1)
    handle = service.loop.run(build_server(
        service.memory, settings, controller_settings=ControllerSettings(policy="rules"),
        turn_limits=TurnLimits(), start_workers=False))
    try:
        yield handle.address, keys_path, key
    finally:
        service.loop.run(handle.stop(0))


def _search(stub: pb_grpc.MemoryServiceStub, key: str) -> pb.SearchReply:
    return stub.Search(pb.SearchRequest(user_id="maya", queries=["kitten"]),
                       metadata=(("x-api-key", key),), timeout=30)


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_keys_file_keeps_the_last_good_keys(own_server, caplog, damage):
    address, keys_path, good = own_server
    caplog.set_level(logging.INFO)
    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.MemoryServiceStub(channel)
        assert _search(stub, good).hits  # the file is good: the key works

        keys_path.write_text(DAMAGES[damage])
        for _ in range(5):  # every call, not just the first after the damage
            assert _search(stub, good).hits
        for garbage in ("msk_abc_" + "x" * 40, "not-a-key", "msk_0_0"):
            with pytest.raises(grpc.RpcError) as info:
                _search(stub, garbage)
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
            details = info.value.details() or ""
            assert details == BAD_KEY
            assert str(keys_path) not in details and MARKER not in details

        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 1, [r.getMessage() for r in errors]
        text = errors[0].getMessage()
        assert str(keys_path) in text and "last good" in text
        assert MARKER not in caplog.text and "Traceback" not in caplog.text

        # Once the file is good again it is read again: a key minted now works.
        keys_path.unlink()
        _, fresh = add_key(keys_path, "acme")
        assert _search(stub, fresh).hits
        with pytest.raises(grpc.RpcError) as info:
            _search(stub, good)  # the repaired file no longer holds the old key
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_a_failing_key_check_is_unavailable_without_internals(own_server, caplog,
                                                              monkeypatch):
    """Whatever goes wrong inside the key check, the caller sees a plain UNAVAILABLE."""
    address, keys_path, good = own_server
    caplog.set_level(logging.INFO)

    def broken_ring(self: KeyRing, key: str) -> None:  # test double: a bug in the ring
        raise KeysFileError(f"keys file {keys_path}: {MARKER}")

    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.MemoryServiceStub(channel)
        monkeypatch.setattr(KeyRing, "grant_for", broken_ring)
        for _ in range(3):
            with pytest.raises(grpc.RpcError) as info:
                _search(stub, good)
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
            assert info.value.details() == KEYS_UNAVAILABLE
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 1 and errors[0].exc_info is not None  # once, with its traceback
        monkeypatch.undo()
        assert _search(stub, good).hits
