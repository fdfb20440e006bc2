"""The boundary guard: hosts use a memory through its typed seams, never around them.

A host (the query service, the stream worker, the Ray workers' hooks, the
CLI, ``memstrata check``) sees a local memory as
:class:`~memstrata.roles.HostedMemory`: its settings, meter and stores, and
two registration seams (``use_layer_executor``, ``on_layer_read``). This test
reads the source of the services and of the core with :mod:`ast` and fails,
naming the file and line, on

* ``getattr``/``hasattr`` on a memory (``getattr(memory, "settings", None)``):
  an attribute a host may need belongs on the protocol;
* an assignment to an attribute reached through a memory, or ``setattr`` on
  one (``memory.layers.executor = ...``): monkeypatching, which the seams replace;
* ``Any`` in the signature of an entry-point hook or another boundary function
  listed in :data:`BOUNDARIES` (a listed function that is gone fails too).

Like the environment guard in tests/unit/test_config.py, it checks the code as
it is; the last tests plant each kind of violation and expect it reported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.parsing import parse

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("memstrata", "query_service", "streams", "workers")
#: Names a memory goes by in the code (``memory``, ``self.memory``).
MEMORY_NAMES = frozenset({"memory"})

#: (file, function or Class.method): the hooks of the ``memstrata.executors`` entry
#: points, both sides of them, and the other functions a host hands a memory to.
BOUNDARIES: tuple[tuple[str, str], ...] = (
    ("memstrata/executor.py", "find_backend"),
    ("memstrata/executor.py", "LocalRolloutExecutor.__init__"),
    ("memstrata/executor.py", "ServiceWorkersHook.__call__"),
    ("memstrata/executor.py", "EvalRolloutsHook.__call__"),
    ("memstrata/cli/plugins.py", "find_host"),
    ("memstrata/cli/plugins.py", "EmbeddedStreamHost.__call__"),
    ("memstrata/cli/plugins.py", "HostedService.__call__"),
    ("streams/cli.py", "serve_embedded"),
    ("memstrata/check.py", "check_memory"),
    ("memstrata/check.py", "compare_vector_sample"),
    ("memstrata/check.py", "repair_sessions"),
    ("memstrata/rebuild.py", "reindex"),
    ("memstrata/controller/run.py", "Controller.open"),
    ("memstrata/controller/run.py", "Controller.for_memory"),
    ("memstrata/cli/eval_qa.py", "_rollouts"),
    ("workers/service.py", "start_service_workers"),
    ("workers/service.py", "start_prewarm"),
    ("workers/eval.py", "open_eval_rollouts"),
    ("workers/materialize.py", "attach"),
    ("workers/prewarm.py", "memory_warmer"),
    ("workers/prewarm.py", "memory_spend"),
    ("workers/readers.py", "serve_memory"),
    ("workers/readers.py", "TenantRoutedReader._for"),
    ("workers/read_service.py", "serve_reads"),
    ("workers/rollout.py", "RolloutWorker._controller"),
    ("query_service/server.py", "build_server"),
    ("query_service/server.py", "_start_workers"),
    ("query_service/server.py", "_open_chat"),
    ("query_service/server.py", "spend_path"),
    ("query_service/server.py", "_startup_totals"),
    ("query_service/server.py", "_probe_scope"),
    ("streams/runtime.py", "_open_memory"),
)


def _is_memory(node: ast.expr) -> bool:
    """``memory`` or ``<anything>.memory``."""
    return ((isinstance(node, ast.Name) and node.id in MEMORY_NAMES)
            or (isinstance(node, ast.Attribute) and node.attr in MEMORY_NAMES))


def _through_memory(node: ast.expr) -> bool:
    """An attribute chain that passes through a memory: ``memory.x``, ``self.memory.x.y``."""
    while isinstance(node, ast.Attribute):
        if _is_memory(node.value):
            return True
        node = node.value
    return False


def drilling(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for each getattr/hasattr on a memory and each patch through one."""
    return sorted(_drilling(tree))


def _drilling(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            name, first = node.func.id, node.args[0]
            if name in ("getattr", "hasattr") and _is_memory(first):
                yield node.lineno, f"{name} on a memory ({ast.unparse(node)[:60]})"
            if name == "setattr" and (_is_memory(first) or _through_memory(first)):
                yield node.lineno, f"setattr through a memory ({ast.unparse(node)[:60]})"
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            for t in (target.elts if isinstance(target, ast.Tuple) else [target]):
                if isinstance(t, ast.Attribute) and _through_memory(t):
                    yield node.lineno, f"assignment through a memory ({ast.unparse(t)})"


def _mentions_any(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        annotation = ast.parse(annotation.value, mode="eval").body
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name) and node.id == "Any":
            return True
        if isinstance(node, ast.Attribute) and node.attr == "Any":
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and _mentions_any(node):
            return True
    return False


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Top-level functions and methods, by ``name`` or ``Class.name`` (the last
    definition wins, as at import: overloads come before the implementation)."""
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found[f"{node.name}.{item.name}"] = item
    return found


def any_in_signature(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The parameters (and ``return``) of ``fn`` whose annotation mentions ``Any``."""
    a = fn.args
    params = [*a.posonlyargs, *a.args, *a.kwonlyargs,
              *([a.vararg] if a.vararg else []), *([a.kwarg] if a.kwarg else [])]
    bad = [p.arg for p in params if _mentions_any(p.annotation)]
    return bad + (["return"] if _mentions_any(fn.returns) else [])


def _sources() -> Iterator[tuple[str, ast.Module]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "memory_pb2" in path.name:
                continue
            rel = str(path.relative_to(ROOT))
            yield rel, parse(path.read_text(encoding="utf-8"), filename=rel)


def test_no_host_reads_or_patches_a_memory_around_its_seams() -> None:
    found = [f"{rel}:{line}: {what}" for rel, tree in _sources()
             for line, what in drilling(tree)]
    assert found == [], "use memstrata.roles.HostedMemory and its seams:\n" + "\n".join(found)


def test_no_boundary_function_has_any_in_its_signature() -> None:
    problems = []
    for rel, name in BOUNDARIES:
        path = ROOT / rel
        functions = _functions(parse(path.read_text(encoding="utf-8"), filename=rel))
        if name not in functions:
            problems.append(f"{rel}: {name} is gone (update BOUNDARIES)")
            continue
        bad = any_in_signature(functions[name])
        if bad:
            problems.append(f"{rel}:{functions[name].lineno}: {name}: Any in "
                            f"{', '.join(bad)}")
    assert problems == [], "\n".join(problems)


# -- the guard finds what it looks for --------------------------------------------------

PLANTED = '''
def host(memory, service):
    settings = getattr(memory, "settings", None)
    if hasattr(service.memory, "docs"):
        pass
    memory.layers.executor = object()
    self.memory.meter = None
    setattr(memory.layers, "facts", len)
    memory.search("fine: a call")
    other.layers = memory  # fine: memory is the value, not the target
'''


def test_the_guard_reports_each_planted_violation_with_its_line() -> None:
    found = list(drilling(ast.parse(PLANTED)))
    assert [line for line, _ in found] == [3, 4, 6, 7, 8]
    assert "getattr on a memory" in found[0][1] and "hasattr" in found[1][1]
    assert "memory.layers.executor" in found[2][1] and "setattr" in found[4][1]


@pytest.mark.parametrize(("source", "bad"), [
    ("def f(memory: Any) -> None: ...", ["memory"]),
    ("def f(x: 'Any | None' = None) -> int: ...", ["x"]),
    ("def f(x: int) -> dict[str, typing.Any]: ...", ["return"]),
    ("def f(*a: int, **k: Any) -> None: ...", ["k"]),
    ("def f(memory: 'HostedMemory', x: list['Scope']) -> 'Closable | None': ...", []),
])
def test_any_is_found_wherever_it_sits_in_a_signature(source: str, bad: list[str]) -> None:
    fn = ast.parse(source).body[0]
    assert isinstance(fn, ast.FunctionDef)
    assert any_in_signature(fn) == bad
