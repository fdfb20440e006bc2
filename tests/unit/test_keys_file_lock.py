"""Concurrent ``keys add`` / ``keys revoke``: none undoes another's change.

Each worker is a real process running the same functions as the CLI commands
against one keys file; between them they add and revoke many keys at once.
Before the file lock, two read-modify-writes that overlapped lost one of them
(a revocation the command had reported done came back as a live key).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from query_service.keys import KeyRing, read_keys_file

ROOT = Path(__file__).resolve().parents[2]

#: One worker: add ROUNDS keys for its tenant, revoking every one right after its add;
#: prints the ids it added and the ids whose revocation it was told succeeded.
WORKER = """
import json, sys
from pathlib import Path
from query_service.keys import add_key, revoke_key
path, tenant, rounds = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
added, revoked = [], []
for _ in range(rounds):
    key_id, _key = add_key(path, tenant)
    added.append(key_id)
    revoke_key(path, key_id)
    revoked.append(key_id)
    key_id, _key = add_key(path, tenant)  # a second key that stays live
    added.append(key_id)
print(json.dumps({"added": added, "revoked": revoked}))
"""

WORKERS = 6
ROUNDS = 25


def test_concurrent_adds_and_revokes_all_land(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(path), f"t{i}", str(ROUNDS)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=ROOT, env=env) for i in range(WORKERS)]
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        reports.append(json.loads(out))

    data = read_keys_file(path)
    added = [k for r in reports for k in r["added"]]
    revoked = {k for r in reports for k in r["revoked"]}
    assert len(added) == WORKERS * ROUNDS * 2 == len(set(added))
    missing = set(added) - set(data.keys)
    assert not missing, f"{len(missing)} added keys lost"
    undone = {k for k in revoked if not data.keys[k].revoked}
    assert not undone, f"{len(undone)} reported revocations lost"
    live = {k for k, e in data.keys.items() if not e.revoked}
    assert live == set(added) - revoked
    # Every write replaced the file whole: no temporary file is left, and it stays 0600.
    assert sorted(p.name for p in tmp_path.iterdir()) == [".keys.json.lock", "keys.json"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / ".keys.json.lock").stat().st_mode) == 0o600


def test_the_ring_sees_a_replace_even_with_the_same_size_and_time(tmp_path: Path) -> None:
    """An atomic replace is a new inode: the ring reloads even if mtime and size match."""
    path = tmp_path / "keys.json"
    body = {"keys": {"abc": {"tenant": "acme", "sha256": "0" * 64}}}
    path.write_text(json.dumps(body))
    ring = KeyRing(path)
    assert ring.tenants == {"acme"}
    st = path.stat()
    other = tmp_path / "new.json"
    body["keys"]["abc"]["tenant"] = "acmf"  # same length
    other.write_text(json.dumps(body))
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(other, path)
    assert ring.tenant_for("msk_abc_x") is None  # a call refreshes the ring
    assert ring.tenants == {"acmf"}


def test_keys_commands_refuse_a_damaged_file_in_one_line(tmp_path: Path) -> None:
    """A damaged file is named with what is wrong, exit 2, no traceback, never rewritten."""
    from typer.testing import CliRunner

    from query_service.cli import keys_app

    path = tmp_path / "keys.json"
    damaged = '{"keys": {"abc": {"tenant": "acme", "sha256": "zz-marker"}}}'
    path.write_text(damaged)
    runner = CliRunner()
    for args in (["add", "acme"], ["list"], ["revoke", "abc"]):
        result = runner.invoke(keys_app, [*args, "--keys-file", str(path),
                                         "--data-dir", str(tmp_path / "data")])
        assert result.exit_code == 2, (args, result.output)
        assert isinstance(result.exception, SystemExit)  # a clean exit, not a crash
        assert "keys.abc.sha256" in result.output and "zz-marker" not in result.output
        assert path.read_text() == damaged
