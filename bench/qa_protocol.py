"""The LongMemEval-style QA protocol against any OpenAI-compatible endpoint: system + baselines.

```bash
.venv/bin/python -m bench.qa_protocol --base-url http://127.0.0.1:8000/v1 --model MODEL \\
    [--judge-model MODEL] [--dataset examples/longmemeval_dev.json] [--format longmemeval] \\
    [--limit N] [--baselines full-context,rag-l3] [--context-tokens 32000] [--rag-turns 10] \\
    [--price-in USD --price-out USD] [--output bench/out/qa_protocol.json]
```

Every LLM role (layer builder, controller, notes, generator) is served by
``--model`` at ``--base-url`` (a local vLLM or llama.cpp server, or a hosted
API); the judge by ``--judge-model`` (default: the same). The dataset is
ingested into a fresh temporary store (with ``--limit``, only the haystacks of
the questions kept), then each question is answered by:

* **system**: the LLM controller over the four layers, notes, generator;
* **full-context**: the user's whole haystack (cut to ``--context-tokens``),
  same generator and answer prompt;
* **rag-l3**: the ``--rag-turns`` best raw turns (BM25 + dense over raw turns),
  same generator.

Each answer is graded by the judge with the rule of its question type
(:mod:`memstrata.eval.judge_prompts`). Written: one JSON (config, the
side-by-side rows, every report and per-question result) and one Markdown
table (accuracy, F1, BLEU-1, tokens and cost per question, then accuracy per
question type), both also printed. Cost uses ``--price-in/--price-out`` (USD
per million tokens for ``--model``; 0 for a local model) or ``--price-table``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench._common import OUT_DIR, console, progress
from memstrata.config import load_settings
from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import Controller
from memstrata.eval.baselines import BaselineSettings, parse_baselines, run_baselines
from memstrata.eval.datasets import Dataset, load_dataset
from memstrata.eval.protocol import annotate, extend_report, side_by_side
from memstrata.eval.qa_run import evaluate_qa, score_answer
from memstrata.llm.usage import ModelPrice, PriceTable
from memstrata.memory import Memory

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATASET = ROOT / "examples" / "longmemeval_dev.json"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", required=True,
                    help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    ap.add_argument("--model", required=True, help="Model name for every role.")
    ap.add_argument("--judge-model", default=None, help="Judge model (default: --model).")
    ap.add_argument("--api-key", default=None, help="Key for the endpoint (local: none).")
    ap.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    ap.add_argument("--format", default="longmemeval", choices=["longmemeval", "locomo"])
    ap.add_argument("--limit", type=int, default=None, help="Only the first N questions.")
    ap.add_argument("--baselines", default="full-context,rag-l3")
    ap.add_argument("--context-tokens", type=int, default=32_000,
                    help="full-context: estimated tokens of haystack kept (oldest out).")
    ap.add_argument("--rag-turns", type=int, default=10, help="rag-l3: raw turns given.")
    ap.add_argument("--price-in", type=float, default=0.0,
                    help="USD per million input tokens of --model (and the judge).")
    ap.add_argument("--price-out", type=float, default=0.0,
                    help="USD per million output tokens.")
    ap.add_argument("--price-table", type=Path, default=None,
                    help="JSON/TOML price table instead of --price-in/--price-out.")
    ap.add_argument("--timeout-s", type=float, default=120.0, help="Seconds per LLM call.")
    ap.add_argument("--answer-budget-s", type=float, default=600.0,
                    help="Seconds one whole answer may take (system and baselines).")
    ap.add_argument("--output", type=Path, default=OUT_DIR / "qa_protocol.json")
    args = ap.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        ap.error("--limit: must be at least 1")
    try:
        args.baseline_names = parse_baselines(args.baselines)
        args.baseline_settings = BaselineSettings(context_tokens=args.context_tokens,
                                                  rag_turns=args.rag_turns)
    except ValueError as exc:  # pydantic's ValidationError is one; it names the field
        ap.error(f"--baselines/--context-tokens/--rag-turns: {exc}")
    if args.price_in < 0 or args.price_out < 0:
        ap.error("--price-in/--price-out: must be at least 0")
    return args


def restrict(data: Dataset, limit: int | None) -> Dataset:
    """The first ``limit`` questions and only the haystacks they are asked about."""
    if limit is None:
        return data
    data.questions = data.questions[:limit]
    users = {q.scope for q in data.questions}
    data.parsed.sessions = [s for s in data.parsed.sessions if s.scope in users]
    return data


def prices_for(args: argparse.Namespace) -> PriceTable:
    if args.price_table is not None:
        return PriceTable.load(args.price_table)
    price = ModelPrice(input_per_mtok=args.price_in, output_per_mtok=args.price_out)
    return PriceTable(models={m: price for m in {args.model, args.judge_model or args.model}})


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Ingest, answer with the system and the baselines, grade, and compare."""
    from memstrata.llm.openai_compat import ChatClient

    data = restrict(load_dataset(args.dataset, args.format), args.limit)
    prices = prices_for(args)
    judge_model = args.judge_model or args.model
    with tempfile.TemporaryDirectory(prefix="memstrata-qa-protocol-") as tmp:
        settings = load_settings(
            data_dir=Path(tmp) / "memory", llm_backend="openai", llm_base_url=args.base_url,
            llm_api_key=args.api_key, llm_timeout_s=args.timeout_s,
            **{f"llm_model_{r}": args.model
               for r in ("builder", "controller", "synthesizer", "generator")})
        memory = Memory.open(settings)
        try:
            chat = ChatClient(settings, memory.meter, models={"judge": judge_model})
            csettings = ControllerSettings(policy="llm", answer_budget_s=args.answer_budget_s)
            controller = Controller(memory, csettings, chat, prices,
                                    max_query_chars=settings.max_query_chars)
            with progress() as bar:
                tasks: dict[str, Any] = {}

                def tick(stage: str, done: int, total: int) -> None:
                    if stage not in tasks:
                        tasks[stage] = bar.add_task(stage, total=total)
                    bar.update(tasks[stage], completed=done)

                t0 = time.perf_counter()
                system = evaluate_qa(data, memory, controller, judge_client=chat,
                                     progress=tick)
                others = run_baselines(
                    data, memory, args.baseline_names,
                    lambda q, a: score_answer(q, a, chat, prices=prices),
                    chat=chat, prices=prices, settings=args.baseline_settings,
                    budget_s=args.answer_budget_s, progress=tick,
                    work_dir=Path(tmp) / "rag")
                seconds = time.perf_counter() - t0
        finally:
            memory.close()
    extend_report(system.report, system.results)
    for b in others.values():
        extend_report(b.report, b.results)
    reports = {"system": system.report, **{n: b.report for n, b in others.items()}}
    return {
        "config": {"base_url": args.base_url, "model": args.model, "judge_model": judge_model,
                   "dataset": str(args.dataset), "format": args.format, "limit": args.limit,
                   "questions": len(data.questions), "sessions": len(data.parsed.sessions),
                   "baselines": args.baseline_names, **args.baseline_settings.model_dump(),
                   "prices": prices.model_dump(), "seconds": round(seconds, 1)},
        "comparison": side_by_side(system.report, {n: b.report for n, b in others.items()}),
        "accuracy_by_type": {name: {cat: block.get("judge_accuracy")
                                    for cat, block in rep["by_category"].items()}
                             for name, rep in reports.items()},
        "reports": reports,
        "results": {"system": annotate([r.model_dump(mode="json") for r in system.results]),
                    **{n: annotate([r.model_dump(mode="json") for r in b.results])
                       for n, b in others.items()}},
    }


def _cell(x: Any, kind: str = "rate") -> str:
    if x is None:
        return "-"
    if kind == "tokens":
        return f"{x:,.0f}"
    if kind == "usd":
        return f"{x:.5f}"
    return f"{x:.3f}"


MAIN_COLUMNS = (("system", "system", "text"), ("n", "questions", "text"),
                ("accuracy (judge)", "judge_accuracy", "rate"),
                ("accuracy, all (judge)", "judge_accuracy_all", "rate"), ("F1", "f1", "rate"),
                ("BLEU-1", "bleu1", "rate"),
                ("LLM tokens/q", "llm_tokens_per_question", "tokens"),
                ("read tokens/q", "read_tokens_per_question", "tokens"),
                ("build tokens/q", "construction_tokens_per_question", "tokens"),
                ("USD/q", "usd_per_question", "usd"),
                ("retrieval / generation errors", "", "split"), ("judged", "judged", "text"),
                ("LLM fallbacks", "fallbacks", "text"), ("failed", "errors", "text"))


def tables(doc: dict[str, Any]) -> tuple[list[str], list[list[str]], list[str], list[list[str]]]:
    """(columns, rows) of the main table and of accuracy per question type."""
    rows = []
    for r in doc["comparison"]:
        row = []
        for _, key, kind in MAIN_COLUMNS:
            if kind == "split":
                row.append(f"{r['retrieval_errors'] or 0} / {r['generation_errors'] or 0}")
            elif kind == "text":
                row.append(str(r[key]))
            else:
                row.append(_cell(r[key], kind))
        rows.append(row)
    names = list(doc["accuracy_by_type"])
    types = sorted({t for acc in doc["accuracy_by_type"].values() for t in acc})
    by_type = [[t, *(_cell(doc["accuracy_by_type"][n].get(t)) for n in names)] for t in types]
    return [c for c, _, _ in MAIN_COLUMNS], rows, ["question type", *names], by_type


def markdown(doc: dict[str, Any]) -> str:
    cols, rows, tcols, trows = tables(doc)
    c = doc["config"]

    def md(columns: list[str], body: list[list[str]]) -> list[str]:
        return ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns),
                *("| " + " | ".join(r) + " |" for r in body)]

    return "\n".join([
        f"# QA protocol: {Path(c['dataset']).name}, {c['questions']} questions, "
        f"model {c['model']} (judge {c['judge_model']})",
        "",
        *md(cols, rows),
        "",
        "Accuracy is the judge's over answerable questions (\"all\": abstention questions "
        "too, as LongMemEval counts it); tokens are means per question "
        "(LLM: answering, no judge; read: memory or context text, estimated; build: layer "
        "construction); USD/q includes construction. Judged: answers the judge graded; "
        "LLM fallbacks: answers given offline because the LLM failed or ran out of time.",
        "",
        *md(tcols, trows),
        "",
    ])


def main(argv: Sequence[str] | None = None) -> int:
    from rich.table import Table

    args = parse_args(argv)
    doc = run(args)
    out: Path = args.output
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    table_path = out.with_suffix(".md")
    table_path.write_text(markdown(doc))
    cols, rows, tcols, trows = tables(doc)
    for title, columns, body in (("system vs baselines (answerable questions)", cols, rows),
                                 ("judge accuracy by question type", tcols, trows)):
        t = Table(title=title, title_justify="left")
        for i, col in enumerate(columns):
            t.add_column(col, justify="left" if i == 0 else "right")
        for r in body:
            t.add_row(*r)
        console.print(t)
    console.print(f"wrote {out} and {table_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
