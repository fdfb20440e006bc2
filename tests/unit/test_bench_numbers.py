"""``bench/numbers.py``: the README's numbers table rendered from the benches' JSON
through the committed summary, and ``--check`` catching any disagreement."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from bench import numbers

TRACING = {"ratio_on_off": [1.3891, 1.2725, 1.5165], "ratio_sampled_off": [1.1049, 0.96, 1.27]}


def _write(root: Path, name: str, data: Mapping[str, object]) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def _readme(table: str) -> str:
    return f"# x\n\n{numbers.HEADING}\n\nsome words\n\n{table}\n## Documentation\n"


def test_rows_render_in_order_with_their_commands_and_absent_rows_left_out() -> None:
    table = numbers.render({"idle_sweep": {"number": "1.1 s"},
                            "recall_locomo": {"number": "0.877"}})
    lines = table.splitlines()
    assert lines[:2] == numbers.TABLE_HEAD.splitlines()
    assert lines[2] == ("| session recall@5, LoCoMo dev (hybrid L0 retriever) | 0.877 | "
                        "`memstrata eval retrieval -d $LOCOMO_PATH -f locomo -o retrieval.json` |")
    assert lines[3].startswith("| idle sweep of 50k sessions") and "| 1.1 s |" in lines[3]
    assert len(lines) == 4


def test_record_takes_what_each_json_holds_and_keeps_the_rest(tmp_path: Path) -> None:
    _write(tmp_path, "bench/out/tracing_overhead.json", TRACING)
    _write(tmp_path, "bench/out/service_load.json", {"checks": [
        {"check": "service Search p99 < 50 ms at 8 callers", "ok": True, "value": "48.8 ms"}]})
    summary = {"search_cpu": {"number": "0.45 (0.42-0.48)"}, "suite": {"number": "637 s"}}
    changed = numbers.record(summary, tmp_path, today="2026-12-04")
    assert sorted(changed) == ["search_p99", "tracing"]
    assert summary["tracing"]["number"] == "1.39x (1.27-1.52); 1 in 10 sampled 1.10x"
    assert summary["search_p99"] == {"number": "48.8 ms", "recorded": "2026-12-04",
                                     "from": ["bench/out/service_load.json"]}
    assert summary["search_cpu"] == {"number": "0.45 (0.42-0.48)"}  # its check is not there
    assert numbers.record(summary, tmp_path) == []  # nothing new the second time


def test_a_small_locomo_file_is_not_taken_for_locomo_dev(tmp_path: Path) -> None:
    mini = {"format": "locomo", "questions": 16, "system": {"session_recall@5": 1.0}}
    _write(tmp_path, "retrieval.json", mini)
    assert numbers.measured(numbers.BY_KEY["recall_locomo"], tmp_path) is None
    _write(tmp_path, "retrieval.json", {**mini, "questions": 885})
    assert numbers.measured(numbers.BY_KEY["recall_locomo"], tmp_path) == "1.000"


def test_check_finds_a_stale_readme_and_a_stale_summary(tmp_path: Path) -> None:
    summary = {"tracing": {"number": "1.39x (1.27-1.52); 1 in 10 sampled 1.10x"}}
    good = _readme(numbers.render(summary))
    assert numbers.check(summary, good, tmp_path) == []
    stale = good.replace("| 1.39x", "| 1.25x")
    assert any("the README shows" in p for p in numbers.check(summary, stale, tmp_path))
    assert any("has no row" in p for p in numbers.check(summary, _readme(""), tmp_path))
    _write(tmp_path, "bench/out/tracing_overhead.json",
           {**TRACING, "ratio_on_off": [1.5, 1.4, 1.6]})
    problems = numbers.check(summary, good, tmp_path)
    assert len(problems) == 1 and "gives '1.50x (1.40-1.60)" in problems[0], problems


def test_every_recorded_row_is_one_the_tool_knows() -> None:
    summary = numbers.load()
    assert summary, "bench/numbers.json is missing"
    assert set(summary) <= set(numbers.BY_KEY), set(summary) - set(numbers.BY_KEY)
    assert all(str(entry["number"]).strip() for entry in summary.values())


def test_the_readme_table_is_the_recorded_one() -> None:
    readme = (numbers.ROOT / "README.md").read_text(encoding="utf-8")
    problems = [p for p in numbers.check(numbers.load(), readme, numbers.ROOT)
                if "README" in p]
    assert not problems, "\n".join(problems) + "\n(paste `python -m bench.numbers` into the README)"
