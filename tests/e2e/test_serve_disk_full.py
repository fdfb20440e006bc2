"""``memstrata serve`` on a full volume (a small tmpfs): refusals say "retry later", and a
refused batch leaves nothing behind (issue 31, item 8).

Before: IngestBatch answered INVALID_ARGUMENT ("do not retry") quoting SQLite's error,
DeleteSession answered INTERNAL, and a batch refused part way was half stored.
Mounting a tmpfs needs root (CAP_SYS_ADMIN); elsewhere this test is skipped and
tests/integration/query_service/test_store_failures.py covers the same codes with
a fault-injecting store.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from tests.support.serve_proc import QUICK_JOIN, ServeProcess, add_key, batch, stored_message_ids

pytestmark = pytest.mark.integration

INTERNALS = ("sqlite", "OperationalError", "StoreError", "Errno", "/")


@pytest.fixture
def volume(tmp_path: Path) -> Iterator[Path]:
    """A 300 MB tmpfs, unmounted afterwards."""
    vol = tmp_path / "vol"
    vol.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300m", "tmpfs", str(vol)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"mounting a tmpfs needs root: {done.stderr.strip()[:200]}")
    try:
        yield vol
    finally:
        subprocess.run(["umount", "-l", str(vol)], check=False)


def _fill(path: Path, leave_mb: float) -> None:
    """Grow ``path`` until its volume has about ``leave_mb`` free (0: none at all)."""
    st = os.statvfs(path.parent)
    size = int(st.f_bavail * st.f_frsize - leave_mb * 1e6)
    try:
        with path.open("ab") as f:
            if size > 0:
                os.posix_fallocate(f.fileno(), f.tell(), size)
            while leave_mb == 0:  # the last bytes (tmpfs counts in pages)
                f.write(b"\0" * 4096)
                f.flush()
    except OSError:  # full
        pass


def test_a_full_volume_answers_retry_later_and_leaves_nothing(tmp_path: Path, volume: Path):
    from memstrata.client import MemoryClient
    from memstrata.model import Scope
    from memstrata.rpc import memory_pb2 as pb
    from memstrata.rpc import memory_pb2_grpc as pb_grpc

    data = volume / "data"
    data.mkdir()
    key = add_key(data, "acme")
    user = Scope(tenant_id="acme", user_id="vol")
    events = [e for n in range(6) for e in batch("vol", f"s{n}", [f"s{n}-m{i}" for i in range(6)])]
    serve = ServeProcess(tmp_path, {"MEMSTRATA_DATA_DIR": str(data),  # its log stays outside
                                    "MEMSTRATA_STREAM_FRESHNESS_S": "0.3", **QUICK_JOIN})
    md = (("x-api-key", key),)
    try:
        serve.wait_serving()
        with MemoryClient(serve.address, api_key=key) as client, \
                grpc.insecure_channel(serve.address) as channel:
            stub = pb_grpc.MemoryServiceStub(channel)
            client.ingest(batch("vol", "keep", ["k1", "k2"]) + batch("vol", "gone", ["g1"]))
            filler = volume / "filler"
            _fill(filler, leave_mb=40)  # under the 100 MB reserve, not empty

            with pytest.raises(grpc.RpcError) as refused:
                stub.IngestBatch(pb.IngestBatchRequest(events=events), metadata=md, timeout=60)
            stub.DeleteSession(pb.SessionRequest(user_id="vol", session_id="gone"),
                               metadata=md, timeout=60)  # deletes still work there
            _fill(filler, leave_mb=0)
            with pytest.raises(grpc.RpcError) as delete_full:
                stub.DeleteSession(pb.SessionRequest(user_id="vol", session_id="keep"),
                                   metadata=md, timeout=60)
            left = stored_message_ids(client, user)
            filler.unlink()
            retried = client.ingest(events)
            after = stored_message_ids(client, user)
        assert serve.proc.poll() is None, serve.log()  # it never died on the full volume
    finally:
        serve.stop()

    for name, call in (("ingest", refused.value), ("delete", delete_full.value)):
        assert call.code() == grpc.StatusCode.UNAVAILABLE, (name, call.details())
        hint = dict(call.trailing_metadata() or ())
        assert int(hint.get("retry-after-ms", 0)) > 0, (name, hint)
        assert not [w for w in INTERNALS if w in call.details()], (name, call.details())
    assert left == {"k1", "k2"}  # none of the refused batch; "gone" deleted
    assert (retried.accepted, retried.duplicates) == (36, 0)
    assert after == {"k1", "k2", *(e.message_id for e in events)}
