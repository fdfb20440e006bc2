"""What a new user meets first: version, help, config, and inputs that read nothing.

Each test runs the real ``memstrata`` command in a subprocess (issue 9 items 5 and 8).
"""

from __future__ import annotations

import json
import subprocess
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import memstrata
from tests.e2e.test_cli import run, run_all

WIDE = {"COLUMNS": "200"}  # keep rich from wrapping help rows
#: Every command whose ``--help`` the tests below read.
HELP_COMMANDS = (("ingest",), ("search",), ("forget",), ("ask",), ("eval", "qa"), (),
                 ("serve",), ("eval", "retrieval"))


def _event(tenant: str, user: str, session: str, n: int, role: str, text: str) -> str:
    return json.dumps({"tenant_id": tenant, "user_id": user, "session_id": session,
                       "session_date": "2024-06-01T10:00:00", "role": role, "content": text,
                       "message_id": f"{session}#{n}"})


@pytest.fixture(scope="module")
def slashed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Two users whose tenant/user pairs both join to "a/b/c", ingested once."""
    d = tmp_path_factory.mktemp("slashed")
    f = d / "slashed.jsonl"
    f.write_text("\n".join([
        _event("a/b", "c", "s1", 1, "user", "I keep bees on the roof."),
        _event("a/b", "c", "s1", 2, "assistant", "Bees need water nearby."),
        _event("a", "b/c", "s2", 1, "user", "My cat is called Sardinha."),
        _event("a", "b/c", "s2", 2, "assistant", "A fine name for a cat."),
    ]) + "\n")
    r = run("ingest", str(f), data_dir=d / "data")
    assert r.returncode == 0, r.stderr
    return d / "data", r.stdout


@pytest.fixture(scope="module")
def helps(tmp_path_factory: pytest.TempPathFactory,
          ) -> dict[tuple[str, ...], subprocess.CompletedProcess[str]]:
    """``memstrata <command> --help`` at 200 columns for each of HELP_COMMANDS, all started
    at once (each a real subprocess; help reads no data dir), by command."""
    d = tmp_path_factory.mktemp("help")
    done = run_all(*(partial(run, *command, "--help", data_dir=d, env=WIDE)
                     for command in HELP_COMMANDS))
    return dict(zip(HELP_COMMANDS, done))


def test_version_prints_the_package_version(tmp_path: Path):
    r = run("--version", data_dir=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"memstrata {memstrata.__version__}"


@pytest.mark.parametrize("command", [["ingest"], ["search"], ["forget"], ["ask"], ["eval", "qa"],
                                     []])
def test_help_shows_conventional_placeholders(helps: dict[tuple[str, ...], Any],
                                              command: list[str]):
    r = helps[tuple(command)]
    assert r.returncode == 0, r.stderr
    for placeholder in ("{", "<bool>", "<str>", "<path>", "<int>", "<list"):
        assert placeholder not in r.stdout, (placeholder, r.stdout)


def test_help_names_arguments_and_explains_top_k(tmp_path: Path,
                                                helps: dict[tuple[str, ...], Any]):
    r = helps[("ingest",)]
    assert "memstrata ingest [OPTIONS] FILE" in r.stdout
    r = helps[("search",)]
    assert "memstrata search [OPTIONS] QUERY..." in r.stdout
    top_k = next(line for line in r.stdout.splitlines() if "--top-k" in line)
    assert "How many sessions to return (default: 20" in top_k
    r = run("search", "--user", "u", "--top-k", "0", "x", data_dir=tmp_path)
    assert r.returncode == 2 and "--top-k" in r.stderr


def test_config_masks_secrets_and_nothing_else(tmp_path: Path):
    r = run("config", data_dir=tmp_path,
            env={"MEMSTRATA_LLM_API_KEY": "sk-test-secret", "MEMSTRATA_KEYWORD_ALPHA": "0.25"})
    assert r.returncode == 0, r.stderr
    lines = set(r.stdout.splitlines())
    assert "MEMSTRATA_LLM_API_KEY=***" in lines
    assert "sk-test-secret" not in r.stdout
    assert "MEMSTRATA_KEYWORD_ALPHA=0.25" in lines
    assert "MEMSTRATA_KEYWORD_MAX_MATCHES=3" in lines
    assert "MEMSTRATA_EMBED_API_KEY=" in lines  # unset secrets print empty, not ***


def test_ingest_of_a_directory_says_so(tmp_path: Path):
    r = run("ingest", str(tmp_path), data_dir=tmp_path / "d")
    assert r.returncode == 2
    assert "is a directory" in r.stderr and "no such file" not in r.stderr


def test_ingest_of_an_empty_file_fails_with_a_message(tmp_path: Path):
    f = tmp_path / "empty.jsonl"
    f.write_text("\n")
    r = run("ingest", str(f), data_dir=tmp_path / "d")
    assert r.returncode == 2
    assert "empty" in r.stderr and "nothing to ingest" in r.stderr
    assert "users" not in r.stdout


def test_locomo_file_read_as_jsonl_fails_and_names_the_format(tmp_path: Path):
    f = tmp_path / "conv.json"
    f.write_text(json.dumps([{"sample_id": "conv-1", "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bo", "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog."},
                      {"speaker": "Bo", "dia_id": "D1:2", "text": "What is its name?"}]}}],
        indent=1))
    r = run("ingest", "--format", "jsonl", str(f), data_dir=tmp_path / "d")
    assert r.returncode == 2, r.stdout
    assert "nothing ingested" in r.stderr and "try --format locomo" in r.stderr


def test_blank_question_and_blank_query_fail_alike(tmp_path: Path):
    ask, search = run_all(lambda: run("ask", "--user", "u", "  ", data_dir=tmp_path),
                          lambda: run("search", "--user", "u", "", data_dir=tmp_path))
    assert ask.returncode == search.returncode == 2
    assert "question: empty" in ask.stderr
    assert "query: empty" in search.stderr


def test_scopes_print_with_tenant_and_user_apart(slashed: tuple[Path, str]):
    data, ingest_out = slashed
    assert "users: tenant=a users=b/c; tenant=a/b users=c" in ingest_out
    first = run("sessions", "--tenant", "a/b", "--user", "c", data_dir=data)
    second = run("sessions", "--tenant", "a", "--user", "b/c", data_dir=data)
    assert "tenant=a/b user=c" in first.stdout and "s1" in first.stdout
    assert "tenant=a user=b/c" in second.stdout and "s2" in second.stdout
    r = run("search", "--tenant", "a/b", "--user", "nobody", "bees", data_dir=data)
    assert r.returncode == 0 and "no sessions found for tenant=a/b user=nobody" in r.stdout


def test_declined_forget_says_nothing_was_forgotten(slashed: tuple[Path, str]):
    data, _ = slashed
    r = run("forget", "--tenant", "a", "--user", "b/c", data_dir=data, stdin="n\n")
    assert r.returncode == 1
    assert "Forget all memory of tenant=a user=b/c?" in r.stdout
    assert "nothing forgotten" in r.stderr
    assert "s2" in run("sessions", "--tenant", "a", "--user", "b/c", data_dir=data).stdout



def test_top_k_over_the_cap_names_the_option(slashed: tuple[Path, str]):
    data, _ = slashed
    r = run("search", "--tenant", "a/b", "--user", "c", "--top-k", "5000", "bees", data_dir=data)
    assert r.returncode == 2 and "--top-k: must be between 1 and 1000" in r.stderr


def test_reading_before_any_ingest_says_what_to_run(tmp_path: Path):
    commands = (["search", "--user", "u", "bees"], ["sessions", "--user", "u"],
                ["ask", "--user", "u", "what bees?"])
    # Independent reads of a data dir that does not exist: run at once.
    for r in run_all(*(partial(run, *command, data_dir=tmp_path / "never")
                       for command in commands)):
        assert r.returncode == 2
        assert f"nothing ingested into {tmp_path / 'never'} yet" in r.stderr
        assert "memstrata ingest FILE" in r.stderr


def test_ask_for_a_user_with_no_data_says_so_and_fails(slashed: tuple[Path, str]):
    data, _ = slashed
    # The tenant left out: the default tenant holds nobody.
    r = run("ask", "--user", "c", "Do I keep bees?", data_dir=data)
    assert r.returncode == 1, r.stdout
    assert "no memory for tenant=default user=c" in r.stderr and "--tenant" in r.stderr
    assert "Not mentioned" not in r.stdout
    r = run("ask", "--tenant", "a/b", "--user", "nobody", "Do I keep bees?", data_dir=data)
    assert r.returncode == 1 and "tenant 'a/b' has 1 other user" in r.stderr


def test_forget_of_an_unknown_user_forgets_nothing_and_fails(slashed: tuple[Path, str]):
    data, _ = slashed
    r = run("forget", "--tenant", "a/b", "--user", "nobody", "--yes", data_dir=data)
    assert r.returncode == 1
    assert "no memory for tenant=a/b user=nobody: nothing forgotten" in r.stderr
    assert "forgot" not in r.stdout


@pytest.mark.parametrize("command", [["serve"], ["eval", "retrieval"], ["ask"]])
def test_help_paragraphs_wrap_at_the_terminal_not_mid_sentence(
        helps: dict[tuple[str, ...], Any], command: list[str]):
    r = helps[tuple(command)]  # at 200 columns
    assert r.returncode == 0
    assert "``" not in r.stdout
    # A line of prose that stops mid-sentence must have been wrapped by the terminal
    # (nearly full width), not by a line break in the docstring (about 80 columns).
    prose = [ln.strip() for ln in r.stdout.splitlines()
             if ln.strip() and not ln.strip().startswith(("│", "╭", "╰", "Usage:"))]
    assert prose
    for line in prose:
        assert line.endswith((".", ":", ")", "!", "?")) or len(line) > 140, line


def test_eval_commands_write_different_files_by_default(helps: dict[tuple[str, ...], Any]):
    for command, name in ((("eval", "qa"), "qa.json"), (("eval", "retrieval"), "retrieval.json")):
        r = helps[command]  # at 200 columns
        assert f"[default: {name}]" in r.stdout
