"""``memstrata eval ...``: evaluation commands (retrieval here; QA in :mod:`eval_qa`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

if TYPE_CHECKING:
    from memstrata.eval.datasets import Dataset

eval_app = typer.Typer(
    name="eval",
    help="Measure retrieval and answers on LoCoMo or LongMemEval files.",
    no_args_is_help=True,
)
# Wide enough for the metric table even when stdout is a pipe or a CI log.
console = Console(width=140)
err = Console(stderr=True)


def parse_ks(text: str) -> list[int]:
    """``"5,10"`` -> [5, 10]; anything else is a usage error naming --k."""
    try:
        ks = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        ks = []
    if not ks or any(k < 1 or k > 50 for k in ks):
        raise typer.BadParameter(f"expected comma-separated integers from 1 to 50, got {text!r}",
                                 param_hint="--k")
    return ks


def load_eval_dataset(path: Path, fmt: str, limit: int | None) -> "Dataset":
    """Read a benchmark file for an eval command; bad options exit with the option's name."""
    from memstrata.eval.datasets import load_dataset
    from memstrata.ingest.formats import FormatError

    if fmt not in ("locomo", "longmemeval"):
        raise typer.BadParameter(f"must be locomo or longmemeval, got {fmt!r}",
                                 param_hint="--format")
    if limit is not None and limit < 1:
        raise typer.BadParameter("must be at least 1", param_hint="--limit")
    try:
        data = load_dataset(path, fmt)  # type: ignore[arg-type]
    except FormatError as exc:
        err.print(f"[red]{escape(str(exc))}[/red]")
        raise typer.Exit(2) from None
    if limit is not None:
        data.questions = data.questions[:limit]
    return data


def write_plot(draw: Any, *args: Any) -> bool:
    """Draw a PNG when matplotlib is installed; otherwise say how to get it (no failure)."""
    try:
        draw(*args)
    except ImportError as exc:
        if "matplotlib" not in str(exc):
            raise
        from memstrata.eval.protocol import PLOTS_HINT

        err.print(f"[yellow]no plot written: {escape(PLOTS_HINT)}[/yellow]")
        return False
    return True


#: The parts of the search ``eval retrieval --without`` may switch off.
RETRIEVAL_PARTS = ("graph", "profile_match")


def retrieval_parts(off: set[str]) -> tuple[bool, bool]:
    """Whether searches expand through the relation graph and match the named entities'
    bullets: as the answer path's settings say (``MEMSTRATA_CONTROLLER_USE_GRAPH``,
    ``..._USE_PROFILE_MATCH``), unless ``--without`` names the part."""
    from memstrata.cli import _config
    from memstrata.controller.config import ControllerSettings

    c = _config(None).get(ControllerSettings)
    return "graph" not in off and c.use_graph, "profile_match" not in off and c.use_profile_match


@eval_app.command("retrieval")
def retrieval(
    dataset: Annotated[Path, typer.Option("--dataset", "-d", help="LoCoMo or LongMemEval JSON.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="locomo or longmemeval.")],
    k: Annotated[str, typer.Option("--k", help="Cut-offs, comma-separated.")] = "5,10",
    output: Annotated[Path, typer.Option("--output", "-o", help="Result JSON.")
                      ] = Path("retrieval.json"),
    plot: Annotated[Optional[Path], typer.Option(
        help="Recall-curve PNG (default: next to --output).")] = None,
    limit: Annotated[Optional[int], typer.Option(help="Only the first N questions.")] = None,
    previous: Annotated[Optional[Path], typer.Option(
        help="An earlier result file of the same dataset: pair this run's system with it.")]
    = None,
    without: Annotated[Optional[list[str]], typer.Option(
        "--without", help="Switch a part of the retriever off: graph (relation-graph "
                          "expansion) or profile_match (the named entities' closest "
                          "bullets); each follows its MEMSTRATA_CONTROLLER_USE_* setting "
                          "as answers do.")] = None,
) -> None:
    """Session and turn Recall@k and NDCG@k of the hybrid retriever and two raw-turn baselines.

    The dataset is ingested into a fresh temporary embedded store; retrieval
    settings come from the usual MEMSTRATA_* variables, and the relation graph
    expands searches only when answers do (MEMSTRATA_CONTROLLER_USE_GRAPH, off by
    default; MEMSTRATA_CONTROLLER_USE_PROFILE_MATCH likewise), so the numbers are the
    product's. ``--previous`` adds the paired difference to an earlier run (another
    retriever setting), with its bootstrap interval, as ``system_vs.previous``.
    """
    from memstrata.cli import _settings
    from memstrata.eval.retrieval import compare_runs, evaluate, plot_curves

    ks = parse_ks(k)
    off = {w.strip().lower() for w in without or ()}
    if off - set(RETRIEVAL_PARTS):
        raise typer.BadParameter(
            f"retrieval ablations are: {', '.join(RETRIEVAL_PARTS)}; got "
            f"{sorted(off - set(RETRIEVAL_PARTS))}", param_hint="--without")
    before = json.loads(previous.read_text()) if previous is not None else None
    data = load_eval_dataset(dataset, fmt, limit)
    settings = _settings(None)
    graph, match = retrieval_parts(off)
    with Progress(TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err) as bar:
        tasks: dict[str, TaskID] = {}

        def tick(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done)

        run = evaluate(data, ks, settings, progress=tick, graph=graph, match=match)
    if before is not None:
        try:
            run.result["system_vs"]["previous"] = compare_runs(run.result, before, ks)
        except ValueError as exc:
            err.print(f"[red]--previous {escape(str(previous))}: {escape(str(exc))}[/red]")
            raise typer.Exit(2) from None
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(run.result, indent=2) + "\n")
    plot_path = plot or output.with_suffix(".png")
    plotted = write_plot(plot_curves, run.curves, plot_path,
                         f"session Recall@k · {dataset.name}")
    print_table(run.result, ks)
    console.print(f"wrote {output}" + (f" and {plot_path}" if plotted else ""))


def print_table(result: dict, ks: list[int]) -> None:
    systems = {"system": result["system"], **result["baselines"]}
    cols = [f"{m}@{k}" for m in ("session_recall", "turn_recall", "ndcg") for k in ks
            if f"{m}@{k}" in result["system"]]
    table = Table(title=f"{result['dataset']} · {result['questions']} questions "
                        "(overall excludes adversarial)")
    table.add_column("system")
    table.add_column("slice")
    for c in cols:
        table.add_column(c, justify="right")
    for name, m in systems.items():
        slices = [("overall", m)] + [(c, v) for c, v in m["by_category"].items()]
        for label, row in slices:
            table.add_row(name if label == "overall" else "", f"{label} ({row['questions']})",
                          *[f"{row[c]:.3f}" if row.get(c) is not None else "-" for c in cols])
    console.print(table)
    for base, diffs in result.get("system_vs", {}).items():
        for metric in (f"session_recall@{ks[0]}", f"ndcg@{ks[0]}"):
            d = diffs.get(metric)
            if d:
                console.print(
                    f"system - {base} {metric}: {d['diff']:+.3f} "
                    f"(95% CI {d['ci95_low']:+.3f} .. {d['ci95_high']:+.3f}; "
                    f"better on {d['better']}, worse on {d['worse']} of {d['questions']})"
                )
