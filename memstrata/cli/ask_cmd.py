"""``memstrata ask``: answer a question about a user's history, with sources and trace."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from collections.abc import Sequence
from typing import Annotated, Any, Optional

import typer
from rich.markup import escape

from memstrata.cli import DataDir, User, _require_text, _scope, app, console, err
from memstrata.cli.access import Remote, TenantOrKey
from memstrata.cli.eval_qa import PolicyOpt, Without, controller_settings
from memstrata.model import TraceStep


def _parse_date(text: str | None) -> datetime | None:
    if text is None:
        return None
    from memstrata.text.dates import parse_datetime

    value = parse_datetime(text)
    if value is None:
        err.print(f"[red]--date: cannot read {text!r} as a date (try 2023-05-08)[/red]")
        raise typer.Exit(2)
    return value


def step_labels(steps: Sequence[TraceStep], counted: int) -> list[str]:
    """The number each trace line shows: one number per step, so the numbers the reader
    sees are exactly the ``counted`` steps of the summary.

    A step's further lines (the auto-drill reads a search triggers, the tool calls of one
    LLM turn) show "↳"; reading the question (step 0), the notes and the answer come
    before or after the controller's steps and show "·".
    """
    labels: list[str] = []
    shown: set[int] = set()
    for s in steps:
        if s.step <= 0 or s.step > counted:
            labels.append("·")
        elif s.step in shown:
            labels.append("↳")
        else:
            shown.add(s.step)
            labels.append(str(s.step))
    return labels


def _print_trace(answer: Any) -> None:
    console.print("[bold]trace[/bold] (step tool layer sessions tokens-in/out ms: arguments; note)"
                  "; ↳ same step, · before or after the steps")
    for s, label in zip(answer.steps, step_labels(answer.steps, answer.summary.steps)):
        args = json.dumps(s.arguments, ensure_ascii=False)
        args = args[:160] + ("…" if len(args) > 160 else "")
        sessions = ",".join(s.sessions[:5]) + ("…" if len(s.sessions) > 5 else "")
        layer = s.layer.label if s.layer is not None else "-"
        note = f"; {s.note}" if s.note else ""
        if s.cached is not None:  # an L1/L2 read: from the cache, or built by this answer
            note += "; cached" if s.cached else "; built"
        console.print(escape(f"  {label:>2} {s.tool:<16} {layer:<2} [{sessions}] "
                             f"{s.tokens_in}/{s.tokens_out} {s.ms:.1f}ms: {args}{note}"),
                      soft_wrap=True)
    m = answer.summary
    depth = ", ".join(f"{sid}:{layer.label}" for sid, layer in m.drill_depths.items())
    tokens = ", ".join(f"{role} {t.tokens_in}/{t.tokens_out}" + (" est." if t.estimated else "")
                       for role, t in m.tokens.items())
    console.print(
        f"deepest layer {m.deepest_layer.label if m.deepest_layer is not None else '-'}; "
        f"{m.sessions_drilled} of {m.haystack_sessions} sessions drilled "
        f"({m.drilled_share * 100:.1f}%): {depth or 'none'}", soft_wrap=True)
    console.print(f"{m.steps} steps, {m.llm_calls} LLM calls, {m.tool_errors} tool errors, "
                  f"stop: {m.stop_reason}; tokens in/out: {tokens or 'none'}; "
                  f"cost ${m.cost_usd:.6f}; {m.ms_total:.0f} ms "
                  f"(LLM {m.ms_llm:.0f}, memory {m.ms_memory:.0f})", soft_wrap=True)


def no_memory(memory: Any, scope: Any, via: str | None = None) -> None:
    """Exit 1 saying the scope holds nothing, and what the data dir does hold.

    An empty answer to a user with no data looks like a memory that forgot;
    most often the tenant was left out (it defaults to "default").
    """
    from memstrata.cli import show_scope

    stats = memory.stats(scope.tenant_id)
    where = (f"tenant {scope.tenant_id!r} has {stats.users} other user(s)" if stats.users
             else f"tenant {scope.tenant_id!r} holds no users at all")
    tenant = ("--tenant (default 'default')" if via is None else
              f"--tenant (through {via}: the API key's tenant)")
    err.print(f"[red]no memory for {escape(show_scope(scope))}[/red]: {escape(where)}. Check "
              f"{escape(tenant)} and --user; `memstrata ingest` prints the users "
              f"it wrote.", soft_wrap=True)
    raise typer.Exit(1)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question about the user's history.")],
    user: User = ...,  # type: ignore[assignment]
    tenant: TenantOrKey = None,
    date: Annotated[Optional[str], typer.Option(
        "--date", help="When the question is asked (resolves \"last year\"); default: "
                       "the user's latest session.")] = None,
    trace: Annotated[bool, typer.Option("--trace", help="Print every step.")] = False,
    notes: Annotated[bool, typer.Option("--notes", help="Print the organized notes.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole answer as JSON.")
                       ] = False,
    without: Without = None,
    policy: PolicyOpt = None,
    data_dir: DataDir = None,
    remote: Remote = None,
) -> None:
    """Answer a question from a user's memory: coarse layers first, finer only when needed.

    Through a service (--remote) the service's controller answers, with its own LLM
    and policy; --without still applies.
    """
    from memstrata.cli.access import Where, open_reader
    from memstrata.llm.types import LLMError

    _scope(tenant or "default", user)
    _require_text("question", [question])
    asked_on = _parse_date(date)
    csettings = controller_settings(without, policy)
    with open_reader(Where(data_dir, remote)) as memory:
        scope = memory.scope(tenant, user)
        if not memory.reader.sessions(scope):
            no_memory(memory.reader, scope, memory.via)
        if policy is not None and memory.via is not None:
            err.print(f"[yellow]--policy: not applied, the service at {escape(memory.via)} "
                      f"answers with its own policy[/yellow]", soft_wrap=True)
        try:
            answer = memory.answer(scope, question, asked_on, csettings, without)
        except LLMError as exc:
            err.print(f"[red]{escape(str(exc))}[/red]")
            raise typer.Exit(1) from None
    if answer.fallback and answer.fallback.endswith(": budget"):
        err.print(f"[yellow]answered offline: the LLM could not answer within the answer's "
                  f"time budget (MEMSTRATA_CONTROLLER_ANSWER_BUDGET_S="
                  f"{csettings.answer_budget_s:g} s); see --trace[/yellow]", soft_wrap=True)
    elif answer.fallback:
        err.print(f"[yellow]answered offline: the LLM failed ({escape(answer.fallback)}); "
                  f"see --trace[/yellow]", soft_wrap=True)
    if as_json:
        sys.stdout.write(answer.model_dump_json(indent=1) + "\n")
        return
    console.print(f"[bold]{escape(answer.answer)}[/bold]", soft_wrap=True)
    if not answer.sources:
        console.print(f"(no sources; mode {answer.mode})")
    for s in answer.sources:
        date_text = s.session_date.strftime("%Y-%m-%d") if s.session_date else "unknown date"
        turn = f" turn {s.turn_index}" if s.turn_index is not None else ""
        ids = f" [{', '.join(s.source_ids)}]" if s.source_ids else ""
        console.print(f"  source: {s.session_id} ({date_text}){turn} {s.layer.label}{ids}: "
                      f"{escape(s.text)}", soft_wrap=True)
    if notes and answer.notes:
        console.print(escape(answer.notes), soft_wrap=True)
    if trace:
        _print_trace(answer)

