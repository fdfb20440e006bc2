"""The text helpers' memo caches and the one cap on all of them (``MEMSTRATA_CACHE_MAX_ENTRIES``)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata import memo
from memstrata.unit_caches import DEFAULT_ENTRIES, UnitCache, set_bound

PACKAGE = Path(memo.__file__).resolve().parent


@pytest.fixture
def uncapped() -> Iterator[None]:
    memo.set_cap(None)
    yield
    memo.set_cap(None)
    set_bound(DEFAULT_ENTRIES)


def counted(maxsize: int) -> tuple[list[int], object]:
    calls: list[int] = []

    @memo.memo(maxsize)
    def square(x: int) -> int:
        calls.append(x)
        return x * x

    return calls, square


def test_a_memo_computes_each_argument_once_within_its_bound(uncapped: None) -> None:
    calls, square = counted(3)
    assert [square(x) for x in (1, 2, 1, 2)] == [1, 4, 1, 4]  # type: ignore[operator]
    assert calls == [1, 2]
    for x in range(10):
        square(x)  # type: ignore[operator]
    handle = square.memo  # type: ignore[attr-defined]
    assert handle.entries() == 3 and handle.bound() == 3
    assert square.__name__ == "square"  # type: ignore[attr-defined]


def test_the_cap_bounds_live_and_later_caches_and_lifts_again(uncapped: None) -> None:
    _, live = counted(100)
    for x in range(50):
        live(x)  # type: ignore[operator]
    memo.set_cap(8)
    h = live.memo  # type: ignore[attr-defined]
    assert h.entries() == 0 and h.bound() == 8
    for x in range(50):
        live(x)  # type: ignore[operator]
    assert h.entries() == 8
    _, later = counted(100)
    _, small = counted(4)
    assert later.memo.bound() == 8 and small.memo.bound() == 4  # type: ignore[attr-defined]
    assert memo.held_entries() >= 8
    memo.set_cap(None)
    assert h.bound() == 100 and memo.cap() is None


def test_a_cap_of_zero_memoises_nothing_but_still_answers(uncapped: None) -> None:
    calls, square = counted(100)
    memo.set_cap(0)
    assert square(3) == square(3) == 9  # type: ignore[operator]
    assert calls == [3, 3] and square.memo.entries() == 0  # type: ignore[attr-defined]


def test_an_out_of_range_cap_is_refused_with_the_field_name(uncapped: None) -> None:
    with pytest.raises(ValueError, match=r"cache_max_entries: -1 is outside 0\.\.1000000"):
        memo.set_cap(-1)
    with pytest.raises(ValueError, match="cache_max_entries"):
        memo.set_cap(memo.MAX_CAP + 1)
    assert memo.cap() is None


def test_the_setting_caps_the_memo_caches_and_the_unit_caches(uncapped: None) -> None:
    from memstrata import process_memory
    from memstrata.config import Settings
    from memstrata.text.keywords import normalize

    units: UnitCache[int, int] = UnitCache()
    process_memory.apply(Settings(cache_max_entries=5, unit_cache_entries=100,
                                  malloc_mmap_threshold_kb=0))
    for w in ("apples", "pears", "plums", "figs", "limes", "kiwis", "dates"):
        normalize(w)
    assert normalize.memo.entries() == 5  # type: ignore[attr-defined]
    assert units.size == 5
    process_memory.apply(Settings(cache_max_entries=500, unit_cache_entries=100,
                                  malloc_mmap_threshold_kb=0))
    assert units.size == 100 and normalize.memo.bound() == 500  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="cache_max_entries"):
        Settings(cache_max_entries=-1)


def _big_lru_caches() -> list[str]:
    """``functools.lru_cache`` decorators in the package that may hold more than 256 entries."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for dec in node.decorator_list:
                name = ast.unparse(dec)
                if "lru_cache" not in name and name not in ("cache", "functools.cache"):
                    continue
                size = None
                if isinstance(dec, ast.Call):
                    for kw in dec.keywords:
                        if kw.arg == "maxsize" and isinstance(kw.value, ast.Constant):
                            size = kw.value.value
                    if dec.args and isinstance(dec.args[0], ast.Constant):
                        size = dec.args[0].value
                elif "lru_cache" in name:
                    size = 128
                if size is None or size > 256:
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    return found


def test_every_large_cache_in_the_package_is_under_the_cap() -> None:
    """A new helper with a big ``lru_cache`` would grow past MEMSTRATA_CACHE_MAX_ENTRIES."""
    assert _big_lru_caches() == []


def test_each_memo_decorated_helper_is_registered() -> None:
    import importlib

    names = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and any(
                    ast.unparse(d).startswith("memo(") for d in node.decorator_list):
                parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
                module = importlib.import_module(".".join(parts))
                names.append(node.name)
                assert getattr(module, node.name).memo in memo.handles()
    assert len(names) >= 19


def test_the_cache_fill_is_exported_once_per_served_registry(uncapped: None) -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from memstrata.process_memory import register_cache_metrics
    from memstrata.text.keywords import normalize

    memo.set_cap(3)
    for w in ("apples", "pears", "plums", "figs"):
        normalize(w)
    worker, service = CollectorRegistry(), CollectorRegistry()
    assert register_cache_metrics(worker)
    assert not register_cache_metrics(worker)
    assert not register_cache_metrics(service, included=[worker])
    text = generate_latest(worker).decode()
    bound = float(text.split('memstrata_process_cache_bound_entries{cache="text"} ')[1].split()[0])
    held = float(text.split('memstrata_process_cache_entries{cache="text"} ')[1].split()[0])
    assert 3 <= held <= bound <= 3 * len(memo.handles())
    assert 'memstrata_process_cache_entries{cache="units"}' in text
    assert "memstrata_process_cache" not in generate_latest(service).decode()
