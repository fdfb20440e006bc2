"""Every command the README and the docs show is checked against the code, so the
docs cannot drift from it: a ``memstrata`` command must name existing subcommands
and only options they accept, a ``python -m bench.X`` command only options its
parser accepts, any other ``python -m`` module must exist, a ``pip install`` extra
must be declared and a ``MEMSTRATA_*`` assignment must be a known setting. Nothing
is run: the click commands and the benches' argparse parsers are inspected."""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import re
import shlex
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import typer

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "bench" / "README.md",
        ROOT / "bench" / "RESULTS.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: Programs the docs use that are not memstrata's: their command lines are not checked.
OTHER_PROGRAMS = {"helm", "kubectl", "docker", "curl", "gzip", "cp", "openssl", "podman",
                  "export", "llama-server", "vllm", "grpcurl", "jq", "git", "cat", "echo",
                  "mkdir", "tar"}
SHELL_BLOCKS = {"bash", "sh", "shell", "zsh"}
PROMPT_BLOCKS = {"console", "text", ""}  # only their "$ " lines are commands
ALTERNATIVE = "\x1f"  # stands for a "|" between two words: alternatives, not a pipe
COMMAND_START = re.compile(
    r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:\.venv/bin/)?(?:memstrata\s|python3?\s+-m\s)")


@dataclass(frozen=True)
class Shown:
    """One command line as a page shows it."""

    where: str
    line: str


@dataclass
class Spec:
    """What a command accepts: option name -> how many values it takes, positionals."""

    options: dict[str, int]
    max_positionals: int | None  # None: any number
    subcommands: dict[str, Any] = field(default_factory=dict)


# -- finding the commands -------------------------------------------------------------

def _fenced(path: Path) -> list[Shown]:
    shown: list[Shown] = []
    lang: str | None = None
    pending = ""
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fence = re.match(r"^\s*```+\s*([\w-]*)", raw)
        if fence:
            lang = fence.group(1).lower() if lang is None else None
            pending = ""
            continue
        if lang is None:
            continue
        line = raw.strip()
        if lang in PROMPT_BLOCKS:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        elif lang not in SHELL_BLOCKS:
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        if line and not line.startswith("#"):
            shown.append(Shown(f"{path.relative_to(ROOT)}:{number}", line))
    return shown


def _inline(path: Path) -> list[Shown]:
    """Inline code that starts like a command (``memstrata ...``, ``python -m ...``)."""
    shown: list[Shown] = []
    in_fence = False
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if re.match(r"^\s*```", raw):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for match in re.finditer(r"(`+)(.+?)\1", raw):
            span = match.group(2).strip().replace("\\|", "|")
            if COMMAND_START.match(span + " ") and len(span.split()) > 1:
                shown.append(Shown(f"{path.relative_to(ROOT)}:{number}", span))
    return shown


def shown_commands() -> list[Shown]:
    return [s for path in DOCS for s in (*_fenced(path), *_inline(path))]


# -- what the code accepts ------------------------------------------------------------

def _click_spec(command: Any) -> Spec:
    """Typer carries its own click: its parameters are told apart by ``param_type_name``."""
    options: dict[str, int] = {"--help": 0}
    max_positionals: int | None = 0
    for param in command.params:
        if param.param_type_name == "option":
            takes = 0 if (param.is_flag or param.count) else max(param.nargs, 1)
            for name in (*param.opts, *param.secondary_opts):
                options[name] = takes
        elif param.param_type_name == "argument" and max_positionals is not None:
            max_positionals = None if param.nargs < 0 else max_positionals + param.nargs
    subcommands = dict(getattr(command, "commands", {}))
    return Spec(options, max_positionals, subcommands)


@functools.cache
def _memstrata() -> Any:
    from memstrata import cli

    cli._register_subcommands()
    return typer.main.get_command(cli.app)


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser, argv: list[str]) -> None:
        super().__init__(parser.prog)
        self.parser, self.argv = parser, argv


def _bench_parser(module: str, argv: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser the bench builds for ``argv``, taken at its ``parse_args`` call (the
    bench's main stops there: nothing is measured)."""
    loaded = importlib.import_module(module)

    def capture(self: argparse.ArgumentParser, args: Any = None, namespace: Any = None) -> Any:
        raise _Captured(self, list(sys.argv[1:] if args is None else args))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_args", capture)
        patch.setattr(argparse.ArgumentParser, "parse_known_args", capture)
        patch.setattr(sys, "argv", [module, *argv])
        try:
            loaded.main()
        except _Captured as got:
            return got.parser, got.argv
    raise AssertionError(f"{module}.main() returned without parsing its arguments")


def _argparse_spec(parser: argparse.ArgumentParser) -> Spec:
    options = {name: (0 if action.nargs == 0 else 1)
               for name, action in parser._option_string_actions.items()}
    max_positionals: int | None = 0
    for action in parser._actions:
        if action.option_strings or max_positionals is None:
            continue
        if action.nargs in ("*", "+", argparse.REMAINDER):
            max_positionals = None
        else:
            max_positionals += action.nargs if isinstance(action.nargs, int) else 1
    return Spec(options, max_positionals)


# -- checking one command line --------------------------------------------------------

def _words(line: str) -> list[list[str]]:
    """The simple commands of a shell line: split at pipes, ``&&``, ``;``, ``$(``, ``)``
    and redirections; ``<placeholder>``s become one word."""
    line = re.sub(r"<([A-Za-z][^<>]*)>", "PLACEHOLDER", line)
    line = re.sub(r"(?<=[\w-])\|(?=[\w-])", ALTERNATIVE, line)  # create|check
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands: list[list[str]] = [[]]
    redirected = False
    for token in lexer:
        if token and set(token) <= set("();<>|&"):
            redirected = ">" in token or "<" in token
            commands.append([])
        elif redirected:
            redirected = False  # the file a redirection names
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def _alternatives(words: list[str]) -> list[list[str]]:
    """``create|check`` and ``--scopes/--user`` stand for several commands."""
    for i, word in enumerate(words):
        name, _, value = word.rpartition("=")  # NAME=false|true: the values alternate
        parts = [f"{name}={v}" if name else v for v in value.split(ALTERNATIVE)] if (
            ALTERNATIVE in value) else (
            word.split("/") if word.startswith("--") and "/--" in word else None)
        if parts:
            return [w for part in parts
                    for w in _alternatives([*words[:i], part, *words[i + 1:]])]
    return [words]


def _check_args(spec: Spec, args: list[str], what: str) -> list[str]:
    problems: list[str] = []
    positionals = 0
    i = 0
    while i < len(args):
        word = args[i].strip("[]")
        i += 1
        if word in ("...", "") or word.endswith("..."):
            continue
        if word.startswith("-") and len(word) > 1 and not re.match(r"^-\d", word):
            name, _, value = word.partition("=")
            if name not in spec.options:
                problems.append(f"{what}: no option {name}")
                continue
            if not value:
                i += spec.options[name]
        else:
            positionals += 1
    if spec.max_positionals is not None and positionals > spec.max_positionals:
        problems.append(f"{what}: {positionals} arguments, it takes {spec.max_positionals}")
    return problems


def _check_memstrata(app: Any, args: list[str]) -> list[str]:
    command, path = app, "memstrata"
    while (spec := _click_spec(command)).subcommands:
        if not args:
            return []  # the group alone, as in "`memstrata keys`"
        head = args[0].strip("[]")
        if head.startswith("-"):  # the group's own options (--version, --help)
            return _check_args(Spec(spec.options, 0), args, path)
        if head not in spec.subcommands:
            return [f"{path}: no subcommand {head!r}"]
        command, path, args = spec.subcommands[head], f"{path} {head}", args[1:]
    return _check_args(spec, args, path)


@functools.cache
def _extras() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return set(project["optional-dependencies"])


@functools.cache
def _known_variables() -> str:
    return (ROOT / "docs" / "settings-reference.md").read_text(encoding="utf-8")


def check(words: list[str]) -> list[str]:
    """The problems of one simple command, or why it is not memstrata's."""
    problems: list[str] = []
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        name = words.pop(0).split("=", 1)[0]
        if name.startswith("MEMSTRATA_") and f"`{name}`" not in _known_variables():
            problems.append(f"unknown setting {name}")
    if not words:
        return problems
    program, args = Path(words[0]).name, words[1:]
    if program == "memstrata":
        return problems + _check_memstrata(_memstrata(), args)
    if program in ("python", "python3") and args[:1] == ["-m"] and len(args) > 1:
        module, rest = args[1], args[2:]
        if module == "memstrata":
            return problems + _check_memstrata(_memstrata(), rest)
        if importlib.util.find_spec(module) is None:
            return problems + [f"no module {module}"]
        if module.startswith("bench.") and rest:
            parser, seen = _bench_parser(module, rest)
            return problems + _check_args(_argparse_spec(parser), seen, module)
        return problems
    if program == "pip" and args[:1] == ["install"]:
        for word in args[1:]:
            extras = re.search(r"\[([\w,.-]+)\]", word)
            if extras:
                problems += [f"no extra {e!r} in pyproject.toml"
                             for e in extras.group(1).split(",") if e not in _extras()]
        return problems
    if program in OTHER_PROGRAMS or program.startswith(("~", "$")):
        return problems
    return problems + [f"program {program!r} is neither memstrata's nor in OTHER_PROGRAMS"]


def problems_of(line: str) -> list[str]:
    return [problem for simple in _words(line) for words in _alternatives(simple)
            for problem in check(list(words))]


def test_the_docs_show_commands() -> None:
    shown = shown_commands()
    where = {s.where.split(":")[0] for s in shown}
    assert len(shown) > 100, len(shown)
    assert {"README.md", "docs/cli.md", "docs/evaluation.md", "bench/README.md"} <= where


def test_every_command_in_the_docs_matches_the_code() -> None:
    problems = [f"{s.where}: {problem}   [{s.line}]"
                for s in shown_commands() for problem in problems_of(s.line)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("line", "problem"), [
    (".venv/bin/memstrata search --tenant acme --colour red q",
     "memstrata search: no option --colour"),
    ("memstrata keys ad acme", "memstrata keys: no subcommand 'ad'"),
    ("memstrata keys add|revoke|set-policy", "memstrata keys: no subcommand 'set-policy'"),
    ("MEMSTRATA_PROFILES=false|maybe|true memstrata ingest --colour x f",
     "memstrata ingest: no option --colour"),
    ("memstrata sessions --tenant a --user b extra",
     "memstrata sessions: 1 arguments, it takes 0"),
    ("MEMSTRATA_NO_SUCH_THING=1 memstrata serve", "unknown setting MEMSTRATA_NO_SUCH_THING"),
    ("python -m bench.tracing_overhead --calls 3 --colour",
     "bench.tracing_overhead: no option --colour"),
    ("python -m bench.service_load --noisy --storm --colour red",
     "bench.service_load: no option --colour"),
    ("python -m bench.no_such_bench", "no module bench.no_such_bench"),
    ("pip install -e '.[kafka,nosuch]'", "no extra 'nosuch' in pyproject.toml"),
    ("rsync -a a b", "program 'rsync' is neither memstrata's nor in OTHER_PROGRAMS"),
])
def test_a_drifted_command_is_caught(line: str, problem: str) -> None:
    found = problems_of(line)
    assert any(problem in p for p in found), (line, found)


@pytest.mark.parametrize("line", [
    "export MEMSTRATA_API_KEY=$(.venv/bin/memstrata keys add acme)   # shown once",
    "memstrata export --tenant acme --user maya | gzip > maya.jsonl.gz",
    "memstrata retention dry-run [--tenant T] [--json] [--as-of 2027-01-01]",
    "memstrata keys add --scopes/--user/--tenants",
    "python -m bench.service_load $LOCOMO_PATH --callers 8 ...",
    "MEMSTRATA_PROFILES=false|true memstrata ingest $LOCOMO_PATH --data-dir D",
    "MEMSTRATA_API_KEY=msk_... memstrata search --remote 127.0.0.1:50051 -t acme -u maya kayak",
])
def test_a_sound_command_passes(line: str) -> None:
    assert problems_of(line) == []
