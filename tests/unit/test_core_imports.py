"""The core's import graph: no circle, and the two executor seams apart (issue 32).

Imports are read with :mod:`ast`, annotation-only ones (``if TYPE_CHECKING:``)
included: import-linter skips those, yet a circle of them still ties two
modules together for a reader. Imports inside functions are left out (the CLI
defers its commands on purpose, so ``--help`` stays fast).

The layer seam (``roles.LayerRequest``, ``roles.LayerExecutor``, the in-process
``layers.executor``) is what a hosted memory takes; the rollout seam
(``memstrata.executor``) answers questions with a controller. Before they were
split, ``executor`` held both and ``roles`` and ``executor`` imported each
other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from tests.support.parsing import parse

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "memstrata"


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in CORE.rglob("*.py")}


def _resolve(name: str) -> str | None:
    """The core module ``name`` lands in (``memstrata.a.B`` -> ``memstrata.a``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(path: Path, *, in_functions: bool) -> set[str]:
    """Core modules ``path`` imports: at module level (annotation-only ones too)."""
    found: set[str] = set()
    stack: list[ast.AST] = [parse(path.read_text(encoding="utf-8"))]
    while stack:
        node = stack.pop()
        if not in_functions and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                found.add(sub if sub in MODULES else node.module)
        stack.extend(ast.iter_child_nodes(node))
    return {m for m in map(_resolve, found) if m is not None and m != _module(path)}


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, edges = work[-1]
            for w in edges:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph.get(w, ()))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    part = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        part.append(w)
                        if w == v:
                            break
                    if len(part) > 1:
                        out.append(sorted(part))
    return out


def test_the_circle_finder_finds_a_planted_circle() -> None:
    planted = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": [], "e": ["e"]}
    assert circles(planted) == [["a", "b", "c"]]
    assert circles({"a": ["b"], "b": []}) == []


def test_no_import_circle_in_the_core() -> None:
    graph = {m: _imports(p, in_functions=False) for m, p in MODULES.items()}
    assert circles(graph) == []


SEAMS = ("memstrata.executor", "memstrata.controller")


@pytest.mark.parametrize("module", sorted(
    m for m in MODULES
    if m == "memstrata.roles" or m.startswith(("memstrata.layers", "memstrata.memory"))))
def test_the_layer_seam_imports_nothing_of_the_rollouts(module: str) -> None:
    reached = _imports(MODULES[module], in_functions=True)
    assert sorted(m for m in reached if m.startswith(SEAMS)) == []


def test_the_rollout_seam_takes_no_layer_request() -> None:
    reached = _imports(MODULES["memstrata.executor"], in_functions=True)
    assert sorted(m for m in reached if m.startswith("memstrata.layers")) == []
    import memstrata.executor as rollouts

    assert not hasattr(rollouts, "LayerRequest") and not hasattr(rollouts, "LayerExecutor")


def test_each_in_process_executor_meets_its_own_protocol() -> None:
    from memstrata.executor import LocalRolloutExecutor, RolloutExecutor
    from memstrata.layers.executor import LocalLayerExecutor
    from memstrata.llm.extractive import ExtractiveBuilder
    from memstrata.roles import LayerExecutor

    layers = LocalLayerExecutor(ExtractiveBuilder())
    assert isinstance(layers, LayerExecutor) and not isinstance(layers, RolloutExecutor)
    rollouts = LocalRolloutExecutor(controller=None)  # type: ignore[arg-type]
    assert isinstance(rollouts, RolloutExecutor) and not isinstance(rollouts, LayerExecutor)


def test_a_request_for_an_unknown_layer_names_the_field() -> None:
    from memstrata.layers.executor import build_items
    from memstrata.llm.extractive import ExtractiveBuilder
    from memstrata.model import Scope, SessionMeta
    from memstrata.roles import LayerRequest

    scope = Scope(tenant_id="t", user_id="u")
    request = LayerRequest(scope=scope, session_id="s", layer="L7", builder_version="v",
                           digest="d", meta=SessionMeta(scope=scope, session_id="s"), turns=())
    with pytest.raises(ValueError, match="layer: expected one of L1, L2, got 'L7'"):
        build_items(ExtractiveBuilder(), request)
