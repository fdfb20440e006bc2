"""``memstrata migrate``: a data dir whose fingerprint names another encoder is re-encoded.

The sample file is ingested with float products (``MEMSTRATA_EMBED_ARITHMETIC=float``,
another encoder id, same dimension), then opened with the default: refused by the
fingerprint; ``migrate`` re-encodes every unit and the data dir opens and finds again.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata.cli import app
from memstrata.cli import migrate_cmd  # noqa: F401 - registers `migrate`
from memstrata.config import Settings
from memstrata.fingerprint import IndexMismatch
from memstrata.ingest.formats import read_file
from memstrata.memory import Memory
from memstrata.rebuild import REENCODE_MARK

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample_turns.jsonl"
pytestmark = pytest.mark.integration


def _migrate(data: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["migrate", *args, "--data-dir", str(data)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_migrate_reencodes_a_data_dir_another_encoder_wrote(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for k in [k for k in os.environ if k.startswith("MEMSTRATA_")]:
        monkeypatch.delenv(k)
    data = tmp_path / "data"
    with Memory.open(Settings(data_dir=data, embed_arithmetic="float")) as old:
        old.ingest(read_file(SAMPLE).sessions)
        units = sum(t.units for t in old.docs.session_tallies()
                    if not t.scope.tenant_id.startswith("#"))
        old_id = old.fingerprint.embedder
    assert units > 0
    with pytest.raises(IndexMismatch, match="memstrata migrate"):
        Memory.open(Settings(data_dir=data))

    code, out = _migrate(data, "--dry-run")
    assert code == 0 and "re-encode every vector" in out and old_id in out
    with pytest.raises(IndexMismatch):  # a dry run changes nothing
        Memory.open(Settings(data_dir=data))

    code, out = _migrate(data)
    assert code == 0, out
    assert f"re-encoding: {units}/{units} L0 units" in out and "migrated" in out
    assert not (data / REENCODE_MARK).exists()
    assert list(data.glob("vectors.before-migrate-*")), "the old vectors are kept aside"
    with Memory.open(Settings(data_dir=data)) as memory:
        assert memory.fingerprint.embedder != old_id
        assert memory.vectors.count() == units  # every unit re-encoded, none twice
        first = next(t for t in memory.docs.session_tallies()
                     if not t.scope.tenant_id.startswith("#"))
        unit = memory.docs.session_units(first.scope, first.session_id)[0]
        hits = memory.search(first.scope, unit.summary, top_k=5)
        assert first.session_id in {h.session_id for h in hits}

    code, out = _migrate(data)  # a second run has nothing to do
    assert code == 0 and "nothing to migrate" in out
