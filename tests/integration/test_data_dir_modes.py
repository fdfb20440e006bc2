"""A data dir is private to its owner: folders 0700, files 0600, like the keys file.

Before, the stores' files were 0644 and their folders 0755 under the usual
umask, so any local user could read every tenant's turns from SQLite and the
indexes while the keys file beside them was 0600.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata.config import Settings
from memstrata.memory import Memory
from memstrata.model import Scope
from memstrata.store.lock import LOCK_NAME
from tests.support.conversation import sessions


def open_to_others(root: Path) -> list[str]:
    """Every path under ``root`` (itself included) that grants group or others anything,
    or a folder that is not 0700, with its mode."""
    found = []
    for path in [root, *root.rglob("*")]:
        if path.is_symlink():
            continue
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077 or (path.is_dir() and mode != 0o700):
            found.append(f"{path.relative_to(root.parent)} {mode:o}")
    return found


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """The common 022 (files 0644, folders 0755 by default), whatever the runner uses."""
    saved = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(saved)


def test_an_ingest_into_a_fresh_data_dir_leaves_nothing_readable_to_others(tmp_path: Path):
    before = current_umask()
    data = tmp_path / "data"
    with Memory.open(Settings(data_dir=data)) as memory:
        memory.ingest(sessions())
        memory.flush()
        # Files the engines create later (segments, the WAL) are private too.
        memory.delete(Scope(tenant_id="acme", user_id="maya"), sessions()[0].meta.session_id)
        memory.flush()
        assert (data / "docs.sqlite3").exists() and (data / "lexical").is_dir()
        assert open_to_others(data) == []
    assert open_to_others(data) == []
    # The process's umask is its own again once the data dir is let go.
    assert current_umask() == before


def test_an_old_data_dir_is_closed_to_others_when_opened(tmp_path: Path):
    """A data dir made by an older version (0755, a 0644 lock file) is fixed on open."""
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    os.chmod(data, 0o755)
    (data / LOCK_NAME).write_text("")
    os.chmod(data / LOCK_NAME, 0o644)
    with Memory.open(Settings(data_dir=data)):
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
        assert stat.S_IMODE((data / LOCK_NAME).stat().st_mode) == 0o600
