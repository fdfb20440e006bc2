"""``memstrata forget`` when a store fails part way (a test double stands in for Memory).

The real command cannot be made to fail one store on demand, so this runs the
typer app in-process with a stub memory whose delete returns an incomplete
receipt, the way :meth:`Memory.delete` reports a failure.
"""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

import memstrata.cli as cli
from memstrata.roles import DeleteReceipt


class StubMemory:
    """Test double: one session exists; deleting it fails in the lexical store."""

    def __init__(self, receipt: DeleteReceipt) -> None:
        self.receipt = receipt
        self.flushed = False

    def __enter__(self) -> "StubMemory":
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def session(self, scope: Any, session_id: str) -> object:
        return object()

    def sessions(self, scope: Any) -> list[object]:
        return [object()]

    def delete(self, scope: Any, session_id: str | None = None) -> DeleteReceipt:
        return self.receipt

    def flush(self) -> None:
        self.flushed = True


def _forget(monkeypatch: pytest.MonkeyPatch, receipt: DeleteReceipt):
    stub = StubMemory(receipt)
    monkeypatch.setattr(cli, "_open", lambda data_dir, **kw: stub)
    result = CliRunner().invoke(cli.app, ["forget", "--tenant", "acme", "--user", "maya",
                                          "s1", "--yes"])
    return result, stub


def test_a_delete_that_failed_part_way_says_so_and_how_to_finish(monkeypatch):
    scope = cli._scope("acme", "maya")
    receipt = DeleteReceipt(scope=scope, session_id="s1", removed={"vectors": 2},
                            complete=False,
                            errors={"lexical": "StoreError: disk full",
                                    "docs": "not attempted: an earlier store failed"})
    result, stub = _forget(monkeypatch, receipt)
    assert result.exit_code == 1
    assert "lexical: StoreError: disk full" in result.stderr
    assert "did not finish; run the same command again" in result.stderr
    assert "forgot" not in result.stdout
    assert stub.flushed  # what was removed is made visible all the same


def test_a_complete_delete_reports_each_store(monkeypatch):
    scope = cli._scope("acme", "maya")
    receipt = DeleteReceipt(scope=scope, session_id="s1",
                            removed={"vectors": 2, "lexical": 2, "docs": 2})
    result, _ = _forget(monkeypatch, receipt)
    assert result.exit_code == 0, result.stderr
    assert "2 raw turns removed (2 vectors, 2 BM25 entries)" in result.stdout
