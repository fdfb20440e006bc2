"""How an item maps onto a memstrata session, without a service (memstrata.integrations.items).

Also the import-linter contract of the integrations, checked to bite: a planted
import of the engine breaks it.
"""

from __future__ import annotations

import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra (pip install -e '.[all,test]')")

from langgraph.store.base import InvalidNamespaceError, MatchCondition

from memstrata.integrations import items
from memstrata.model import Message, Scope, SessionMeta, Turn

WHEN = datetime(2024, 6, 1, 12, 30, tzinfo=timezone.utc)


def meta_of(where: items.Location, session_id: str | None = None) -> SessionMeta:
    return SessionMeta(scope=Scope(tenant_id="acme", user_id=where.user),
                       session_id=session_id or where.session_id, session_date=WHEN,
                       labels=where.labels(WHEN))


def test_an_item_has_one_stable_session_named_by_its_labels() -> None:
    where = items.locate(("maya", "memories", "2024"), "pet/cat")
    assert where.session_id == items.locate(("maya", "memories", "2024"), "pet/cat").session_id
    assert where.session_id.startswith("lg:") and len(where.session_id) == 35
    others = {items.locate(("maya", "memories"), "2024").session_id,
              items.locate(("maya", "memories", "2024"), "pet").session_id,
              items.locate(("maya", "memories/2024"), "pet/cat").session_id}
    assert where.session_id not in others
    # The same namespace and key of another user is the same session id in another scope.
    assert items.locate(("leo", "memories", "2024"), "pet/cat").session_id == where.session_id
    assert items.located(meta_of(where)) == where
    # A session whose labels do not hash to its id is not taken for an item.
    assert items.located(meta_of(where, "lg:" + "0" * 32)) is None
    assert items.located(SessionMeta(scope=Scope(tenant_id="acme", user_id="maya"),
                                     session_id="2024-05-20-chat")) is None


def test_a_value_is_written_as_text_and_read_back_from_its_json() -> None:
    where = items.locate(("maya",), "k")
    value = {"text": "Sardinha eats salmon", "tags": ["cat", "food"], "n": 2}
    written = items.encode(where, value)
    assert written.text == 'text: Sardinha eats salmon\ntags: ["cat", "food"]\nn: 2'
    assert items.encode(where, {"memory": "just this"}).text == "just this"
    assert items.encode(where, value, ["tags[*]"]).text == "cat\nfood"
    assert items.encode(where, {}).text == "{}"  # no text at all: the JSON stands in
    turns = [Turn(index=1, messages=[Message(role="user", content=written.text),
                                     Message(role="assistant", content=written.value_json)])]
    item = items.decode(meta_of(where), turns)
    assert item is not None and item.value == value
    assert item.created_at == item.updated_at == WHEN and item.namespace == ("maya",)
    assert items.decode(meta_of(where), turns[:0]) is None


def test_filters_follow_langgraphs_rules() -> None:
    value = {"kind": "pet", "age": 4, "owner": {"name": "maya"}, "tags": ["a", "b"]}
    assert items.matches(value, {})
    assert items.matches(value, {"kind": "pet", "owner": {"name": "maya"}})
    assert not items.matches(value, {"kind": "food"})
    assert items.matches(value, {"age": {"$gte": 4, "$lt": 5}})
    assert not items.matches(value, {"age": {"$gt": 4}})
    assert items.matches(value, {"kind": {"$ne": "food"}, "tags": ["a", "b"]})
    assert not items.matches(value, {"tags": ["a"]})
    assert not items.matches(value, {"kind": {"$gt": 1}})  # not a number: no match
    with pytest.raises(ValueError, match=r"unknown operator '\$regex'"):
        items.matches(value, {"kind": {"$regex": "p.*"}})


def test_namespace_conditions_match_prefixes_and_suffixes_with_wildcards() -> None:
    ns = ("maya", "memories", "2024")
    assert items.fits(ns, MatchCondition("prefix", ("maya", "*")))
    assert items.fits(ns, MatchCondition("suffix", ("*", "2024")))
    assert not items.fits(ns, MatchCondition("prefix", ("maya", "prefs")))
    assert not items.fits(ns, MatchCondition("suffix", ("a", "b", "c", "d")))


def test_a_namespace_must_start_with_a_valid_user() -> None:
    with pytest.raises(InvalidNamespaceError, match="must start with the memstrata user"):
        items.locate((), "k")
    with pytest.raises(InvalidNamespaceError, match="must start with the memstrata user"):
        items.check_user(("*", "memories"), "prefix")
    with pytest.raises(InvalidNamespaceError, match=r"namespace\[0\]: user 'a\\nb'"):
        items.locate(("a\nb",), "k")
    assert items.check_user(("maya@acme",), "prefix") == "maya@acme"


def test_a_planted_engine_import_breaks_the_integrations_contract(tmp_path: Path) -> None:
    pytest.importorskip("importlinter", reason="import-linter comes with the test extra")
    from tests.unit.test_import_contracts import PACKAGES, ROOT, _lint

    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "memstrata/integrations/probe.py").write_text("import memstrata.memory\n")
    out = _lint(tmp_path, {**os.environ, "PYTHONPATH": str(tmp_path)})
    assert out.returncode == 1, out.stdout[-3000:]
    broken = [ln for ln in out.stdout.splitlines() if " BROKEN" in ln]
    assert len(broken) == 1 and broken[0].startswith(
        "The framework integrations speak to memory only through the client"), out.stdout[-3000:]
