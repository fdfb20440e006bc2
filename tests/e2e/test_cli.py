"""The installed ``memstrata`` command, run as a user would (a real subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample_turns.jsonl"


def run(*args: str, data_dir: Path, env: dict[str, str] | None = None,
        stdin: str | None = None):
    full_env = {**os.environ, "MEMSTRATA_DATA_DIR": str(data_dir), **(env or {})}
    return subprocess.run([sys.executable, "-m", "memstrata", *args], capture_output=True,
                          text=True, env=full_env, timeout=240, input=stdin)


def run_all(*calls: Callable[[], subprocess.CompletedProcess[str]],
            ) -> list[subprocess.CompletedProcess[str]]:
    """Independent commands at once (each a real subprocess), results in the order given.

    Each ``memstrata`` start costs an interpreter and its imports, mostly waiting on
    one core; commands that do not depend on each other need not wait in line.
    """
    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(lambda call: call(), calls))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory, sample_copy: Callable[[Path], Path],
             ) -> Path:
    """The sample ingested through the CLI (tests/e2e/conftest.py checks that ingest's output)."""
    return sample_copy(tmp_path_factory.mktemp("cli") / "data")


def test_reingest_is_a_no_op(data_dir: Path):
    r = run("ingest", str(SAMPLE), data_dir=data_dir)
    assert r.returncode == 0, r.stderr
    assert "0 ingested" in r.stdout and "5 unchanged" in r.stdout


def test_search_prints_ranked_sessions_as_json(data_dir: Path):
    r = run("search", "--tenant", "acme", "--user", "maya", "--json", "half marathon knee",
            data_dir=data_dir)
    assert r.returncode == 0, r.stderr
    hits = json.loads(r.stdout)
    assert hits[0]["session_id"] == "2024-04-10-running"
    assert all(u["scope"] == {"tenant_id": "acme", "user_id": "maya"}
               for h in hits for u in h["units"])


def test_show_prints_all_four_layers(data_dir: Path):
    r = run("show", "--tenant", "acme", "--user", "maya", "2024-03-02-trip", data_dir=data_dir)
    assert r.returncode == 0, r.stderr
    for heading in ("L0 summaries", "L1 key facts", "L2 turn notes", "L3 raw turns"):
        assert heading in r.stdout
    assert "Cervejaria Ramiro" in r.stdout  # the raw text is kept verbatim


def test_bad_records_are_named_and_skipped(tmp_path: Path):
    lines = SAMPLE.read_text().splitlines()
    broken = json.loads(lines[1])
    broken["role"] = "moderator"
    lines[1] = json.dumps(broken)
    lines.insert(3, "{oops")
    f = tmp_path / "bad.jsonl"
    f.write_text("\n".join(lines) + "\n")
    r = run("ingest", str(f), data_dir=tmp_path / "d")
    assert r.returncode == 0, r.stderr
    assert "line 2: field 'role'" in r.stderr
    assert "line 4: invalid JSON" in r.stderr
    assert "2 skipped records" in r.stdout


def test_usage_errors_name_the_option(tmp_path: Path):
    # Four refused commands, independent of each other: run at once.
    user, layers, qdrant, rrf = run_all(
        lambda: run("search", "--user", "has space", "x", data_dir=tmp_path),
        lambda: run("show", "--user", "u", "--layers", "0,9", "s", data_dir=tmp_path),
        lambda: run("search", "--user", "u", "x", data_dir=tmp_path,
                    env={"MEMSTRATA_VECTOR_BACKEND": "qdrant"}),
        lambda: run("search", "--user", "u", "x", data_dir=tmp_path,
                    env={"MEMSTRATA_RRF_K": "0"}))
    assert user.returncode == 2 and "--user" in user.stderr
    assert layers.returncode == 2 and "--layers" in layers.stderr
    assert qdrant.returncode == 2 and "MEMSTRATA_QDRANT_URL is required" in qdrant.stderr
    assert rrf.returncode == 2 and "MEMSTRATA_RRF_K" in rrf.stderr


def test_forget_removes_a_session_then_a_user_and_nothing_else(
        tmp_path: Path, sample_copy: Callable[[Path], Path]):
    d = sample_copy(tmp_path / "f")
    r = run("forget", "--tenant", "acme", "--user", "maya", "2024-04-10-running", "--yes",
            data_dir=d)
    assert r.returncode == 0, r.stderr
    assert "2 raw turns removed" in r.stdout
    r = run("search", "--tenant", "acme", "--user", "maya", "--json", "half marathon knee",
            data_dir=d)
    assert "2024-04-10-running" not in {h["session_id"] for h in json.loads(r.stdout)}
    r = run("forget", "--tenant", "acme", "--user", "maya", "--yes", data_dir=d)
    assert r.returncode == 0 and "removed" in r.stdout
    r = run("search", "--tenant", "acme", "--user", "maya", "--json", "Lisbon", data_dir=d)
    assert json.loads(r.stdout) == []
    # the same user id in another tenant is untouched
    r = run("search", "--tenant", "globex", "--user", "maya", "--json", "bees", data_dir=d)
    assert [h["session_id"] for h in json.loads(r.stdout)] == ["2024-02-01-notes"]
    r = run("forget", "--tenant", "acme", "--user", "leo", "nope", "--yes", data_dir=d)
    assert r.returncode == 1 and "no session 'nope'" in r.stderr


def test_readme_seafood_question_names_the_restaurant(data_dir: Path):
    """The sister is named only in another session ("my sister Inês"); the place she liked
    is in the turn about Inês, not in the one that repeats "seafood places"."""
    r = run("ask", "--tenant", "acme", "--user", "maya", "Which seafood place did my sister like?",
            data_dir=data_dir)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "Cervejaria Ramiro"
    assert "source: 2024-05-20-after-trip" in r.stdout


def test_trace_numbers_are_the_steps_the_summary_counts(data_dir: Path):
    for question in ("Which seafood place did my sister like?", "When did I go to Porto?",
                     "What is my cat called?"):
        r = run("ask", "--tenant", "acme", "--user", "maya", "--trace", question,
                data_dir=data_dir)
        assert r.returncode == 0, r.stderr
        out = r.stdout.splitlines()
        start = next(i for i, ln in enumerate(out) if ln.startswith("trace ("))
        summary = next(ln for ln in out if " steps, " in ln)
        counted = int(summary.split(" steps, ")[0])
        labels = [ln.split()[0] for ln in out[start + 1:] if ln.startswith("  ")
                  and ln.split()[0] in {"·", "↳"} | {str(n) for n in range(100)}]
        numbers = [int(x) for x in labels if x.isdigit()]
        assert counted >= 1 and numbers == list(range(1, counted + 1)), (question, labels)
        assert labels[0] == "·" and labels[-1] == "·"  # the cues before, the answer after
