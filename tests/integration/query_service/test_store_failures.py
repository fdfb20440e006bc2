"""Store failures answer "retry later", never "your request is wrong" (issue 31, item 8).

Before: on a full disk Ingest answered INVALID_ARGUMENT (do not retry) quoting the
store's error (SQL, paths), and DeleteSession answered INTERNAL. Now both answer
UNAVAILABLE with a ``retry-after-ms`` hint and a message without internals, and
the refused batch leaves nothing behind (direct route here; the embedded route on
a real full volume is tests/e2e/test_serve_disk_full.py).

The memory's doc store is ``FailingStore``, a TEST DOUBLE that fails one method as
a full disk does (tests/integration/test_write_failures.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import grpc
import pytest

from memstrata.client import AsyncMemoryClient, Unavailable, event
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.limits import TurnLimits
from memstrata.model import Scope
from query_service.keys import add_key
from query_service.server import build_server
from query_service.settings import ServiceSettings
from tests.integration.test_write_failures import _memory

USER = Scope(tenant_id="acme", user_id="dana")
INTERNALS = ("sqlite", "OperationalError", "StoreError", "put_units", "put_session", "/")


def _calls(path: Path, embedder: MiniLMEmbedder, method: str) -> dict[str, Any]:
    memory, double = _memory(path / "data", embedder, "docs", method)
    keys = path / "keys.json"
    _, key = add_key(keys, "acme")

    async def scenario() -> dict[str, Any]:
        handle = await build_server(memory, ServiceSettings(port=0, keys_file=keys),
                                    turn_limits=TurnLimits())
        out: dict[str, Any] = {}
        try:
            async with AsyncMemoryClient(handle.address, api_key=key) as c:
                await c.ingest([event("dana", "kept", "k1", "user", "I keep a diary.")])
                double.armed = True
                for name, call in (
                        ("ingest", c.ingest([event("dana", f"s{n}", f"m{n}", "user",
                                                   f"Fact {n}: the shed is blue.")
                                             for n in range(4)])),
                        ("delete", c.delete(USER, "kept"))):
                    try:
                        await call
                    except Unavailable as exc:
                        out[name] = exc
                double.armed = False
                out["retried"] = await c.ingest([event("dana", f"s{n}", f"m{n}", "user",
                                                       f"Fact {n}: the shed is blue.")
                                                 for n in range(4)])
        finally:
            await handle.stop(0)
            memory.close()
        return out

    return asyncio.run(scenario())


@pytest.mark.parametrize("method", ["put_units", "put_session"])
def test_a_full_disk_answers_unavailable_with_a_hint_and_leaves_nothing(
        tmp_path: Path, embedder: MiniLMEmbedder, method: str):
    out = _calls(tmp_path, embedder, method)
    for name in ("ingest", "delete") if method == "put_session" else ("ingest",):
        exc = out[name]
        assert exc.code == grpc.StatusCode.UNAVAILABLE, name
        assert exc.retry_after_s is not None and exc.retry_after_s > 0, name
        assert "full" in exc.details and "retry" in exc.details, name
        assert not [w for w in INTERNALS if w in exc.details], (name, exc.details)
    # Nothing of the refused batch was stored: the retry finds every message new.
    assert (out["retried"].accepted, out["retried"].duplicates) == (4, 0)
