"""``memstrata eval qa``: answer every question of a benchmark and score the answers."""

from __future__ import annotations

import json
import sys
import tempfile
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from memstrata.cli.eval_cmd import eval_app, load_eval_dataset, write_plot

if TYPE_CHECKING:  # annotations only: the command loads these when it runs
    from memstrata.controller.config import ControllerSettings
    from memstrata.eval.datasets import Dataset
    from memstrata.executor import RolloutExecutor
    from memstrata.roles import HostedMemory

# Wide enough for the side-by-side table even when stdout is a pipe or a CI log.
console = Console(width=None if sys.stdout.isatty() else 150)
err = Console(stderr=True)

Without = Annotated[
    Optional[list[str]],
    typer.Option("--without", "-w",
                 help="Switch a part off (repeatable): controller, l1, l2, l3, reflect, "
                      "decompose, interpret_dates, notes, draft."),
]
PolicyOpt = Annotated[
    Optional[str],
    typer.Option("--policy", help="auto (LLM when configured), rules (offline) or llm."),
]
BaselinesOpt = Annotated[
    Optional[str],
    typer.Option("--baselines", help="Also answer with these baselines, same questions and "
                                     "generator, comma-separated: full-context (the user's "
                                     "whole haystack, cut to --context-tokens), rag-l3 (the "
                                     "--rag-turns best raw turns).")]
ContextTokensOpt = Annotated[
    int, typer.Option("--context-tokens", min=256, max=2_000_000,
                      help="full-context baseline: estimated tokens of haystack kept "
                           "(oldest turns dropped first).")]
RagTurnsOpt = Annotated[
    int, typer.Option("--rag-turns", min=1, max=200,
                      help="rag-l3 baseline: raw turns given to the generator.")]


def controller_settings(without: list[str] | None, policy: str | None) -> Any:
    """Controller settings of this command's configuration plus its switches (exit 2 if bad)."""
    from memstrata.cli import _config
    from memstrata.config import ConfigError
    from memstrata.controller.config import ControllerSettings

    config = _config(None, **({"controller": {"policy": policy}} if policy else {}))
    try:
        return config.get(ControllerSettings).without(without or [])
    except ConfigError as exc:
        err.print(f"[red]{escape(str(exc))}[/red]")
        raise typer.Exit(2) from None


def _fmt(x: float | None, pct: bool = False) -> str:
    if x is None:
        return "-"
    return f"{x * 100:.1f}" if pct else f"{x:.3f}"


def print_report(report: dict[str, Any], title: str) -> None:
    table = Table(title=title)
    for col, just in (("category", "left"), ("n", "right"), ("F1", "right"),
                      ("BLEU-1", "right"), ("EM", "right"), ("judge acc.", "right")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    rows = [*report["by_category"].items(), ("overall (no adversarial)", report["overall"]),
            ("overall (all)", report["overall_with_adversarial"])]
    for name, row in rows:
        label = f"[bold]{name}[/bold]" if name.startswith("overall") else name
        table.add_row(label, str(row["n"]), _fmt(row["f1"]), _fmt(row.get("bleu1")),
                      _fmt(row["em"]), _fmt(row["judge_accuracy"]))
    console.print(table)
    rates = Table(title="answered precision and coverage", box=box.SIMPLE_HEAD,
                  caption="precision: right (F1 >= 0.5, or the judge) / answered; coverage: "
                          "answered / answerable; false: answered / unanswerable")
    for col in ("category", "n", "answered", "precision", "coverage", "false"):
        rates.add_column(col, justify="left" if col == "category" else "right")
    for name, row in rows:
        rates.add_row(name, str(row["n"]), str(row.get("answered", "-")),
                      _fmt(row.get("precision")), _fmt(row.get("coverage")),
                      _fmt(row.get("false_answers")))
    console.print(rates)
    d = report["depth_distribution"]
    console.print(
        f"depth distribution over {report['drills']} drills: "
        f"L1 {d['L1'] * 100:.1f}%  L2 {d['L2'] * 100:.1f}%  L3 {d['L3'] * 100:.1f}%")
    if report.get("profile_read_share") is not None:
        console.print(f"profiles (the cross-session layer) read for "
                      f"{report['profile_read_share'] * 100:.1f}% of questions")
    console.print(
        f"sessions drilled: {_fmt(report['mean_sessions_drilled'])} of "
        f"{_fmt(report['mean_haystack_sessions'])} on average "
        f"({_fmt(report['mean_drilled_share'], pct=True)}% of the haystack); "
        f"steps {_fmt(report['mean_steps'])}; LLM calls {_fmt(report['mean_llm_calls'])}; "
        f"cost ${report['total_cost_usd']:.4f} in all")
    tokens = ", ".join(
        f"{role} {v['tokens_in']:.0f} in / {v['tokens_out']:.0f} out"
        + (" (estimated)" if v.get("estimated") else "")
        for role, v in report["mean_tokens"].items())
    console.print(f"mean tokens per question: {tokens or 'none'}")
    lat = report["latency_ms"]
    console.print(f"latency per question: p50 {_fmt(lat['p50'])} ms, p99 {_fmt(lat['p99'])} ms; "
                  f"controller overhead p50 {_fmt(report['overhead_ms']['p50'])} ms "
                  f"({_fmt(report['overhead_cpu_ms']['p50'])} ms CPU); "
                  f"ingest {report['ingest_seconds']} s, answering {report['answer_seconds']} s; "
                  f"{report['errors']} errors")
    print_protocol(report)


def print_protocol(report: dict[str, Any]) -> None:
    """Controller iterations and the retrieval/generation error split of one report."""
    it = report.get("iterations")
    if it:
        console.print(f"controller iterations per question: median {_fmt(it['p50'])}, "
                      f"p95 {_fmt(it['p95'])}, p99 {_fmt(it['p99'])}, max {_fmt(it['max'])}")
    split = report.get("error_split")
    if split:
        console.print(
            f"wrong answers (answerable): {split['retrieval']} retrieval errors (gold session "
            f"not read; {split['retrieval_partial']} read in part), {split['generation']} "
            f"generation errors (read, still wrong), {split['unknown']} without gold "
            f"evidence; {split['right']} of {split['questions']} right")


def print_comparison(rows: list[dict[str, Any]], title: str) -> None:
    """The system and the baselines side by side (answerable questions)."""
    table = Table(title=title, box=box.SIMPLE_HEAD,
                  caption="tokens and $ are means per question: LLM = answering (no judge), "
                          "read = memory or context text (estimated), build = construction; "
                          "err r/g: retrieval / generation errors; fallb.: answers given "
                          "offline because the LLM failed")
    cols = ("system", "n", "judge acc.", "F1", "BLEU-1", "precision", "coverage",
            "LLM tok", "read tok", "build tok", "$/q", "iter p50", "err r/g", "fallb.")
    for col in cols:
        table.add_column(col, justify="left" if col == "system" else "right")

    def num(x: float | None) -> str:
        return "-" if x is None else f"{x:,.0f}"

    for r in rows:
        usd = r["usd_per_question"]
        table.add_row(r["system"], str(r["questions"]), _fmt(r["judge_accuracy"]),
                      _fmt(r["f1"]), _fmt(r["bleu1"]), _fmt(r["precision"]),
                      _fmt(r["coverage"]), num(r["llm_tokens_per_question"]),
                      num(r["read_tokens_per_question"]),
                      num(r["construction_tokens_per_question"]),
                      "-" if usd is None else f"{usd:.5f}", _fmt(r["iterations_p50"]),
                      f"{r['retrieval_errors'] or 0}/{r['generation_errors'] or 0}",
                      str(r["fallbacks"] or 0))
    console.print(table)


def _rollouts(memory: HostedMemory, data: Dataset, workers: int,
              csettings: ControllerSettings) -> AbstractContextManager[RolloutExecutor]:
    """The Ray rollout pool of ``--workers`` (exit 2 when Ray or its settings are missing)."""
    from memstrata.config import ConfigError
    from memstrata.executor import ExecutorUnavailable, find_backend

    tenants = {q.scope.tenant_id for q in data.questions}
    try:
        open_pool = find_backend("eval_rollouts")
        if len(tenants) > 1:
            raise ConfigError(f"--workers: the questions span {len(tenants)} tenants; one "
                              f"run serves one")
        from memstrata.cli import _config

        return open_pool(memory, next(iter(tenants), "eval"), workers, csettings,
                         config=_config())
    except (LookupError, ConfigError, ExecutorUnavailable) as exc:
        err.print(f"[red]{escape(str(exc))}[/red]")
        raise typer.Exit(2) from None


@eval_app.command("qa")
def qa(
    dataset: Annotated[Path, typer.Option("--dataset", "-d", help="LoCoMo or LongMemEval JSON.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="locomo or longmemeval.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Result JSON.")
                      ] = Path("qa.json"),
    limit: Annotated[Optional[int], typer.Option(help="Only the first N questions.")] = None,
    plot: Annotated[Optional[Path], typer.Option(
        help="Depth-distribution PNG (default: next to --output).")] = None,
    data_dir: Annotated[Optional[Path], typer.Option(
        "--data-dir", help="Ingest into (and reuse) this store; default: a fresh temporary "
                           "one.")] = None,
    without: Without = None,
    policy: PolicyOpt = None,
    use_judge: Annotated[bool, typer.Option(
        "--judge/--no-judge", help="Grade answers with the judge model when an LLM is "
                                   "configured.")] = True,
    previous: Annotated[Optional[Path], typer.Option(
        "--previous", help="An earlier qa result file on the same dataset: F1 differences "
                           "per category, paired by question, with bootstrap 95% "
                           "intervals.")] = None,
    workers: Annotated[int, typer.Option(
        "--workers", min=0, max=4096,
        help="Answer on N Ray rollout actors (MEMSTRATA_WORKERS_* says which cluster; "
             "needs the ray extra); 0: in this process.")] = 0,
    baselines: BaselinesOpt = None,
    context_tokens: ContextTokensOpt = 32_000,
    rag_turns: RagTurnsOpt = 10,
) -> None:
    """Answer every question, report F1/EM (and LLM-judge accuracy) with depth and selectivity.

    Offline (the default) the rule policy and extractive answers run; with
    MEMSTRATA_LLM_BACKEND=openai the LLM controller, notes and generator run,
    and the judge model grades the answers. ``--baselines`` answers the same
    questions again from the full haystack and from the best raw turns, with the
    same generator, and prints them beside the system.
    """
    from memstrata.cli import _open
    from memstrata.controller.run import Controller
    from memstrata.eval.baselines import BaselineSettings, parse_baselines
    from memstrata.eval.protocol import annotate, extend_report, side_by_side
    from memstrata.eval.qa import plot_depth
    from memstrata.eval.qa_run import evaluate_qa

    try:
        names = parse_baselines(baselines)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--baselines") from None
    bsettings = BaselineSettings(context_tokens=context_tokens, rag_turns=rag_turns)
    prior = _read_previous(previous) if previous is not None else None
    data = load_eval_dataset(dataset, fmt, limit)
    csettings = controller_settings(without, policy)
    with tempfile.TemporaryDirectory(prefix="memstrata-qa-") as tmp:
        root = data_dir or Path(tmp)
        memory = _open(root)  # a held --data-dir is reported as ingest reports it
        try:
            controller = Controller.for_memory(memory, csettings)
            chat = controller.chat
            judge_client = chat if use_judge else None
            with Progress(TextColumn("{task.description:<8}"), BarColumn(),
                          MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                          console=err) as bar:
                tasks: dict[str, Any] = {}

                def tick(stage: str, done: int, total: int) -> None:
                    if stage not in tasks:
                        tasks[stage] = bar.add_task(stage, total=total)
                    bar.update(tasks[stage], completed=done)

                if workers:
                    with _rollouts(memory, data, workers, csettings) as pool:
                        run = evaluate_qa(data, memory, controller, judge_client=judge_client,
                                          progress=tick, rollouts=pool)
                else:
                    run = evaluate_qa(data, memory, controller, judge_client=judge_client,
                                      progress=tick)
                others = _baselines(data, memory, controller, names, bsettings,
                                    judge_client, csettings, tick) if names else {}
        finally:
            memory.close()
    config = {"dataset": str(dataset), "format": fmt, "mode": controller.mode,
              "policy": csettings.policy, "ablations": csettings.ablations,
              "limit": limit, "judge": judge_client is not None, "workers": workers,
              "models": ({r: chat.model_for(r) for r in  # type: ignore[union-attr]
                          ("controller", "synthesizer", "generator", "judge")}
                         if chat is not None else None)}
    extend_report(run.report, run.results)
    for b in others.values():
        extend_report(b.report, b.results)
    results = annotate([r.model_dump(mode="json") for r in run.results])
    comparison = side_by_side(run.report, {n: b.report for n, b in others.items()})
    if names:
        config["baselines"] = {"names": names, **bsettings.model_dump()}
    versus = rates = None
    if prior is not None:
        from memstrata.eval.qa import compare_rates, compare_runs

        try:
            versus = compare_runs(results, prior)
            rates = compare_rates(results, prior)
        except ValueError as exc:
            err.print(f"[red]--previous {escape(str(previous))}: {escape(str(exc))}[/red]")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(
        {"config": config, "report": run.report,
         **({"vs_previous": {"file": str(previous), "f1": versus,
                             "precision_coverage": rates}} if versus else {}),
         **({"comparison": comparison,
             "baselines": {n: {"report": b.report,
                               "results": annotate([r.model_dump(mode="json")
                                                    for r in b.results])}
                           for n, b in others.items()}} if others else {}),
         "results": results}, indent=1) + "\n")
    plot_path = plot or output.with_suffix(".depth.png")
    title = f"{dataset.name} · {controller.mode}"
    plotted = write_plot(plot_depth, run.report, plot_path, title)
    print_report(run.report, f"{dataset.name} · {len(run.results)} questions · "
                             f"{controller.mode}"
                             + (f" · without {', '.join(csettings.ablations)}"
                                if csettings.ablations else ""))
    if versus:
        print_versus(versus, previous)  # type: ignore[arg-type]
    if rates:
        print_rates_versus(rates, previous)  # type: ignore[arg-type]
    if others:
        print_comparison(comparison, f"system vs baselines · same {len(run.results)} "
                                     f"questions, same generator ({controller.mode})")
    console.print(f"wrote {output}" + (f" and {plot_path}" if plotted else ""))


def _baselines(data: Any, memory: Any, controller: Any, names: list[str], bsettings: Any,
               judge_client: Any, csettings: Any, tick: Any) -> dict[str, Any]:
    """Answer the same questions with each baseline, scored as the system's answers are."""
    from memstrata.eval.baselines import run_baselines
    from memstrata.eval.qa_run import score_answer

    def score(q: Any, a: Any) -> Any:
        return score_answer(q, a, judge_client, prices=controller.prices)

    return run_baselines(data, memory, names, score, chat=controller.chat,
                         prices=controller.prices, settings=bsettings,
                         budget_s=csettings.answer_budget_s, progress=tick)


def _read_previous(path: Path) -> list[dict[str, Any]]:
    """The results of an earlier ``eval qa`` file (exit 2 when it is not one)."""
    try:
        data = json.loads(path.read_text())
        results = data["results"]
        if not isinstance(results, list):
            raise TypeError
        return results
    except (OSError, ValueError, KeyError, TypeError):
        err.print(f"[red]--previous: {escape(str(path))} is not an eval qa result file "
                  f"(JSON with a 'results' list)[/red]")
        raise typer.Exit(2) from None


def print_versus(versus: dict[str, dict[str, float | int]], previous: Path) -> None:
    table = Table(title=f"F1 vs {previous.name} (paired, bootstrap 95% interval)")
    for col in ("category", "n", "diff", "95% interval", "better", "worse"):
        table.add_column(col, justify="left" if col == "category" else "right")
    for name, d in versus.items():
        table.add_row(name, str(d["questions"]), f"{d['diff']:+.3f}",
                      f"[{d['ci95_low']:+.3f}, {d['ci95_high']:+.3f}]", str(d["better"]),
                      str(d["worse"]))
    console.print(table)


def _interval(d: dict[str, Any]) -> str:
    if d.get("ci95_low") is None:
        return "-"
    return f"{d['ci95_low']:+.3f}..{d['ci95_high']:+.3f}"


def print_rates_versus(rates: dict[str, dict[str, dict[str, Any]]], previous: Path) -> None:
    """Precision and coverage, before and now, paired by question (one table each)."""
    for key, what, moved in (("precision", "answered precision", "right now / before only"),
                             ("coverage", "coverage", "answered now / before only")):
        table = Table(title=f"{what} vs {previous.name} (paired)", box=box.SIMPLE_HEAD,
                      caption=f"95%: bootstrap interval of the difference; +/-: {moved}")
        for col in ("category", "n", "before", "now", "diff", "95%", "+/-"):
            table.add_column(col, justify="left" if col == "category" else "right")
        for name, d in rates.items():
            r = d[key]
            diff = "-" if r.get("diff") is None else f"{r['diff']:+.3f}"
            table.add_row(name, str(r["questions"]), _fmt(r.get("before")), _fmt(r.get("now")),
                          diff, _interval(r), f"{r.get('gained', 0)}/{r.get('lost', 0)}")
        console.print(table)
