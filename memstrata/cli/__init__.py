"""The ``memstrata`` command line: ingest files, search and read memory."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.markdown import Markdown
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

from memstrata.cli.access import Remote, TenantOrKey
from memstrata.cli.exits import EXIT_CODES_HELP, Exit
from memstrata.config import Config, ConfigError, Settings, load_config

app = typer.Typer(
    name="memstrata",
    help="Long-term memory for LLM assistants: ingest conversations, search and read them.",
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err = Console(stderr=True)

DataDir = Annotated[
    Optional[Path],
    typer.Option("--data-dir", help="Where the embedded stores live (MEMSTRATA_DATA_DIR)."),
]
Tenant = Annotated[str, typer.Option("--tenant", "-t", help="Tenant id.")]
User = Annotated[str, typer.Option("--user", "-u", help="User id.")]
_TOP_K_DEFAULT = Settings.model_fields["top_k_sessions"].default


#: The configuration this command loaded, by its arguments (emptied as each command starts).
_loaded: dict[str, Config] = {}


def _config(data_dir: Path | None = None, **namespaces: dict[str, Any]) -> Config:
    """Every namespace's settings, loaded once per command (``--data-dir`` and the
    command's own options, such as ``serve --port``, given as arguments)."""
    key = repr((data_dir, sorted(namespaces.items())))
    if key not in _loaded:
        try:
            _loaded[key] = load_config(data_dir=data_dir, namespaces=namespaces)
        except ConfigError as exc:
            err.print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
            raise typer.Exit(2) from None
    return _loaded[key]


def _settings(data_dir: Path | None) -> Settings:
    return _config(data_dir).settings


def _open(data_dir: Path | None, *, read_only: bool = False):  # -> Memory (lazy: fast --help)
    """Open memory for one command; read-only commands pass ``read_only=True``."""
    from memstrata.cli.locked import exit_locked
    from memstrata.memory import Memory
    from memstrata.roles import DataDirLocked

    settings = _settings(data_dir)
    if read_only and settings.doc_backend == "sqlite" and not settings.docs_path.is_file():
        err.print(f"[red]nothing ingested into {escape(str(settings.data_dir))} yet: run "
                  f"`memstrata ingest FILE` first, or point --data-dir (MEMSTRATA_DATA_DIR) at "
                  f"the data dir you ingested into[/red]", soft_wrap=True)
        raise typer.Exit(2)
    try:
        return Memory.open(settings, read_only=read_only)
    except DataDirLocked as exc:
        exit_locked(exc, read_only=read_only)
    except Exception as exc:  # noqa: BLE001 - a backend that cannot start is a usage problem here
        err.print(f"[red]cannot open memory: {escape(str(exc))}[/red]")
        raise typer.Exit(2) from None


def setup_logging(level: int | str = logging.WARNING, *,
                  ours: int | str | None = None) -> None:
    """Log lines on stderr: rich on a terminal, plain text otherwise.

    Redirected to a file (``2> serve.log``, journald, a container's log) a line
    carries no terminal escape codes. ``ours`` sets the ``memstrata`` loggers'
    level apart from the root's (a service's start/stop lines at INFO while its
    libraries stay at WARNING).
    """
    from memstrata.telemetry.logs import TRACE_FIELD, TraceContextFilter

    handler: logging.Handler
    if err.is_terminal:
        from rich.logging import RichHandler

        handler = RichHandler(console=err, show_path=False, markup=False,
                              rich_tracebacks=False, log_time_format="%H:%M:%S")
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s" + TRACE_FIELD))
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(
            "%(asctime)s %(levelname)s %(name)s: %(message)s" + TRACE_FIELD))
    # " trace_id=... span_id=..." at the end of a line logged inside a span (tracing on).
    handler.addFilter(TraceContextFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    logging.getLogger("memstrata").setLevel(level if ours is None else ours)


def show_scope(scope) -> str:
    """A scope as the CLI prints it: ids may hold '/', so tenant and user are named."""
    return f"tenant={scope.tenant_id} user={scope.user_id}"


def show_users(scopes, limit: int = 10) -> str:
    """Users grouped by tenant ("tenant=acme users=leo,maya; ..."), the first ``limit`` users."""
    by_tenant: dict[str, list[str]] = {}
    for s in sorted(scopes, key=lambda s: (s.tenant_id, s.user_id))[:limit]:
        by_tenant.setdefault(s.tenant_id, []).append(s.user_id)
    text = "; ".join(f"tenant={t} users={','.join(us)}" for t, us in by_tenant.items())
    return text + (f" ... ({len(scopes)} users in all)" if len(scopes) > limit else "")


def _require_text(name: str, texts: list[str]) -> None:
    """Blank questions and queries are usage errors for every command alike."""
    if not any(t.strip() for t in texts):
        err.print(f"[red]{name}: empty; give the words to look for[/red]")
        raise typer.Exit(2)


def _scope(tenant: str, user: str):
    from pydantic import ValidationError

    from memstrata.model import Scope

    try:
        return Scope(tenant_id=tenant, user_id=user)
    except ValidationError as exc:
        e = exc.errors()[0]
        name = {"tenant_id": "--tenant", "user_id": "--user"}.get(str(e["loc"][0]), "scope")
        err.print(f"[red]{name}: {escape(e['msg'])}[/red]")
        raise typer.Exit(2) from None


def _print_version(value: bool) -> None:
    if value:
        from memstrata import __version__

        console.print(f"memstrata {__version__}")
        raise typer.Exit()


@app.callback()
def _main_options(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="Print the version and exit.")] = False,
) -> None:
    """Long-term memory for LLM assistants: ingest conversations, search and read them."""
    _loaded.clear()  # settings are loaded once per command, even when a process runs several
    _start_tracing(ctx.invoked_subcommand)


def _start_tracing(command: str | None) -> None:
    """Traces when the standard OTEL_* variables ask for them (docs/tracing.md); else nothing."""
    from memstrata.telemetry.setup import TelemetryConfigError, setup_from_env

    try:
        setup_from_env(f"memstrata-{command}" if command else "memstrata")
    except TelemetryConfigError as exc:
        err.print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
        raise typer.Exit(2) from None


@app.command()
def ingest(
    file: Annotated[Path, typer.Argument(help="LoCoMo JSON, LongMemEval JSON or JSONL turns.")],
    fmt: Annotated[str, typer.Option("--format", "-f",
                                     help="auto, locomo, longmemeval or jsonl.")] = "auto",
    tenant: Annotated[Optional[str], typer.Option(
        "--tenant", "-t", show_default=False,
        help="Tenant for LoCoMo/LongMemEval files (default: 'default'; through a service: "
             "the API key's tenant).")] = None,
    data_dir: DataDir = None,
    max_issues: Annotated[int, typer.Option(help="How many skipped records to list.")] = 20,
    remote: Remote = None,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="Also print each session's construction cost (builder "
                                "tokens).")] = False,
) -> None:
    """Read a file of conversations into memory (re-ingesting the same file adds nothing)."""
    from memstrata.cli.access import DEFAULT_TENANT, Where, open_writer
    from memstrata.llm.construction import ConstructionMeter
    from memstrata.cli.ingest_input import undecodable, unusable_path
    from memstrata.roles import IngestReport

    if (why := unusable_path(file)) is not None:
        err.print(f"[red]{escape(why)}[/red]", soft_wrap=True)
        raise typer.Exit(Exit.USAGE)
    where = Where(data_dir, remote)
    if where.address is None:  # a bad file is reported before memory is opened
        source = _read_source(file, fmt, tenant or DEFAULT_TENANT, max_issues)
    report = IngestReport()
    construction: ConstructionMeter | None = None
    with open_writer(where) as memory:
        meter = memory.host.meter if memory.host else None  # local: the builder's meter
        construction = ConstructionMeter(meter) if meter is not None else None
        if memory.via is not None:  # the tenant may be the key's: known once connected
            source = _read_source(file, fmt, memory.tenant(tenant), max_issues)
        try:
            # Two bars: turns built (L0) and sessions committed (searchable, kept on
            # Ctrl-C). Sessions are committed in batches, so the second trails the first;
            # it is what the interrupt message counts.
            with Progress(
                TextColumn("[bold]{task.description:<9}[/bold]"), BarColumn(),
                MofNCompleteColumn(), TextColumn("{task.fields[unit]}"), TimeElapsedColumn(),
                TimeRemainingColumn(), console=err, transient=False,
            ) as bar:
                built = bar.add_task("built" if memory.via is None else "sent",
                                     total=source.turns, unit="turns")
                saved = bar.add_task("committed", total=source.session_count, unit="sessions")

                def tick(n: int) -> None:
                    bar.advance(built, n)
                    bar.update(saved, completed=report.committed + report.unchanged)

                try:
                    sessions = source.sessions()
                    memory.writer.ingest(construction.track(sessions) if construction
                                         else sessions,
                                         progress=tick, report=report)
                finally:
                    bar.update(saved, completed=report.committed + report.unchanged)
        except UnicodeDecodeError as exc:
            err.print(f"[red]{escape(undecodable(file, exc))}[/red]", soft_wrap=True)
            raise typer.Exit(Exit.USAGE) from None
        except KeyboardInterrupt:
            done = report.committed + report.unchanged
            err.print(
                f"[yellow]interrupted:[/yellow] {done} of {source.session_count} sessions are "
                f"committed ({report.committed} written now, {report.unchanged} already there); "
                f"the sessions in progress are marked unfinished. Run the same command again "
                f"to finish the job: committed sessions are skipped.", soft_wrap=True)
            raise typer.Exit(Exit.INTERRUPTED) from None
    print_ingest(source, report, via=memory.via)
    if construction is not None:
        print_construction(construction, data_dir, verbose=verbose)


def print_construction(built: Any, data_dir: Path | None, *, verbose: bool) -> None:
    """The ingest's construction cost: builder calls, tokens and USD (per session with -v)."""
    from memstrata.llm.construction import describe
    from memstrata.controller.config import ControllerSettings

    prices = _config(data_dir).get(ControllerSettings).prices()
    usd, unpriced = built.cost(prices)
    if verbose:
        model = built.only_model
        for s in built.sessions:
            if s.usage.calls:
                one = built.session_cost(s, prices, model)
                console.print(escape(f"  construction {s.tenant_id}/{s.user_id}/"
                                     f"{s.session_id}: {describe(s.usage, one)}"),
                              soft_wrap=True)
    console.print(escape(f"construction: {describe(built.total, usd, unpriced)}"),
                  soft_wrap=True)


def _read_source(file: Path, fmt: str, tenant: str, max_issues: int) -> Any:
    """The file as a Source, its skipped records listed; exits on an unreadable file."""
    from memstrata.cli.ingest_input import nothing_read, undecodable
    from memstrata.ingest.formats import FormatError, open_source

    try:
        source = open_source(file, fmt, tenant_id=tenant)
    except FormatError as exc:
        err.print(f"[red]{escape(str(exc))}[/red]")
        raise typer.Exit(Exit.USAGE) from None
    except UnicodeDecodeError as exc:  # past the peek: a bad byte further in
        err.print(f"[red]{escape(undecodable(file, exc))}[/red]", soft_wrap=True)
        raise typer.Exit(Exit.USAGE) from None
    except OSError as exc:  # unreadable: permissions, a device, a broken link
        err.print(f"[red]{escape(f'{file}: cannot read: {exc.strerror or exc}')}[/red]",
                  soft_wrap=True)
        raise typer.Exit(Exit.USAGE) from None
    for issue in source.issues[:max_issues]:
        err.print(f"[yellow]skipped[/yellow] {escape(str(issue))}", soft_wrap=True)
    if source.issue_count > max_issues:
        err.print(f"[yellow]... and {source.issue_count - max_issues} more skipped records"
                  f"[/yellow]")
    if source.session_count == 0:
        err.print(f"[red]{escape(nothing_read(file, fmt, source.format, source.issue_count))}"
                  "[/red]", soft_wrap=True)
        raise typer.Exit(2)
    return source


def print_ingest(source: Any, report: Any, *, via: str | None = None) -> None:
    """What an ingest did (local: turns and units built; through a service: turns sent)."""
    if via is None:
        done = (f"{report.sessions} ingested ({report.turns} turns, {report.units} L0 units), "
                f"{report.unchanged} unchanged")
    else:
        done = (f"{report.sessions} sent to {via} ({report.turns} turns, closed), "
                f"{report.unchanged} unchanged")
    console.print(
        f"{source.format}: {source.session_count} sessions read, {done}, "
        f"{source.issue_count} skipped records; {report.turns_per_second:.1f} turns/s",
        soft_wrap=True,
    )
    if report.fallbacks:
        err.print(f"[yellow]{report.fallbacks} L0 units were built by the extractive fallback "
                  f"because the LLM failed (marked as such); run the same ingest again to "
                  f"build them with the LLM[/yellow]", soft_wrap=True)
    console.print(f"users: {show_users(report.users)}", soft_wrap=True)
    refused = getattr(report, "refused", [])
    if refused:
        err.print(f"[yellow]{len(refused)} sessions refused by the service and not written:"
                  f"[/yellow]", soft_wrap=True)
        for line in refused[:20]:
            err.print(f"  {escape(line)}", soft_wrap=True)
        if len(refused) > 20:
            err.print(f"  ... and {len(refused) - 20} more", soft_wrap=True)


@app.command()
def search(
    query: Annotated[list[str], typer.Argument(help="One or more queries (fused by max).")],
    tenant: TenantOrKey = None,
    user: User = ...,  # type: ignore[assignment]
    top_k: Annotated[Optional[int], typer.Option(
        "--top-k", "-k", min=1, show_default=False,
        help=f"How many sessions to return (default: {_TOP_K_DEFAULT}, or "
             f"MEMSTRATA_TOP_K_SESSIONS when set; at most MEMSTRATA_MAX_TOP_K).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    data_dir: DataDir = None,
    remote: Remote = None,
    trace: Annotated[bool, typer.Option(
        "--trace", help="Also print the route plan and the relation graph's expansion "
                        "(local data dir only).")] = False,
) -> None:
    """Rank a user's sessions for a question.

    A question whose cues ask for a relation or several hops ("what does my sister's
    cat eat") expands through the relation graph first (local data dir;
    MEMSTRATA_CONTROLLER_USE_GRAPH=false turns it off).
    """
    from memstrata.cli.access import Where, open_reader
    from memstrata.memory import Memory
    from memstrata.retrieval.hybrid import QueryError

    _scope(tenant or "default", user)  # a bad --tenant or --user is told before connecting
    _require_text("query", query)
    expansion = None
    with open_reader(Where(data_dir, remote)) as memory:
        scope = memory.scope(tenant, user)
        try:
            if isinstance(memory.reader, Memory):
                hits, expansion = memory.reader.search_expanded(
                    scope, query, top_k=top_k, route=_route_plan(query[0], data_dir))
            else:
                hits = memory.reader.search(scope, query, top_k=top_k)
        except QueryError as exc:  # named as the user typed it: top_k is --top-k here
            message = re.sub(r"^(INVALID_ARGUMENT: )?top_k:", "--top-k:", str(exc))
            err.print(f"[red]{escape(message)}[/red]")
            raise typer.Exit(2) from None
    print_hits(hits, scope, query, as_json=as_json, via=memory.via)
    if trace:
        out = (expansion.as_json() if expansion is not None
               else {"plan": _route_plan(query[0], data_dir).as_json(), "expanded": False})
        (err if as_json else console).print_json(json.dumps({"graph": out}))


def _route_plan(question: str, data_dir: Path | None) -> Any:
    """The route plan of a question: its cues, and the ``graph`` and ``profile_match``
    settings (as answers use them)."""
    from memstrata.controller.config import ControllerSettings
    from memstrata.evidence.cues import detect_cues
    from memstrata.route_plan import RoutePlan

    c = _config(data_dir).get(ControllerSettings)
    return RoutePlan.for_question(question, detect_cues(question), enabled=c.use_graph,
                                  match=c.use_profile_match)


def print_hits(hits: list, scope: object, query: list[str], *, as_json: bool,
               via: str | None = None) -> None:
    """Search results as JSON or a table (local and ``--remote`` search print alike)."""
    if as_json:
        json.dump([h.model_dump(mode="json") for h in hits], sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    if not hits:
        console.print(f"no sessions found for {show_scope(scope)}")
        return
    title = f"{show_scope(scope)}: {' | '.join(query)}" + (f" (via {via})" if via else "")
    table = Table(title=title)
    for col in ("#", "session", "date", "score", "best matching turns"):
        table.add_column(col)
    for i, h in enumerate(hits, start=1):
        date = h.session_date.strftime("%Y-%m-%d") if h.session_date else "-"
        best = "\n".join(f"T{u.turn_index}: {u.summary}" for u in h.units[:2])
        table.add_row(str(i), h.session_id, date, f"{h.score:.4f}", best)
    console.print(table)


def render_layers(reader: object, scope: object, session_id: str, wanted: list[int]) -> list[str]:
    """The wanted layers of one session as Markdown, read through any MemoryReader."""
    from memstrata.layers import markdown as md

    r: Any = reader
    meta = r.session(scope, session_id)
    parts: list[str] = []
    if 0 in wanted:
        parts.append(md.render_l0(meta, r.l0(scope, session_id)))
    if 1 in wanted:
        parts.append(md.render_l1(r.facts(scope, session_id)))
    if 2 in wanted:
        parts.append(md.render_l2(r.notes(scope, session_id)))
    if 3 in wanted:
        parts.append(md.render_l3(meta, r.raw(scope, session_id)))
    return parts


@app.command()
def show(
    session_id: Annotated[str, typer.Argument(help="Session id (see `memstrata sessions`).")],
    tenant: TenantOrKey = None,
    user: User = ...,  # type: ignore[assignment]
    layers: Annotated[str, typer.Option(help="Comma-separated layers to print: 0,1,2,3.")] = "0,1,2,3",
    raw_markdown: Annotated[bool, typer.Option("--plain", help="Print Markdown source.")] = False,
    data_dir: DataDir = None,
    remote: Remote = None,
) -> None:
    """Print one session's L0-L3 as Markdown (L1/L2 are built now if never read before)."""
    from memstrata.cli.access import Where, open_reader
    from memstrata.layers.lazy import SessionNotFound

    try:
        wanted = sorted({int(x) for x in layers.split(",") if x.strip()})
    except ValueError:
        wanted = [-1]
    if not wanted or any(x not in (0, 1, 2, 3) for x in wanted):
        err.print(f"[red]--layers: expected numbers from 0 to 3, got {layers!r}[/red]")
        raise typer.Exit(2)
    _scope(tenant or "default", user)
    with open_reader(Where(data_dir, remote)) as memory:
        scope = memory.scope(tenant, user)
        try:
            parts = render_layers(memory.reader, scope, session_id, wanted)
        except SessionNotFound:
            err.print(f"[red]no session {escape(session_id)!r} for {show_scope(scope)}[/red]")
            raise typer.Exit(1) from None
    text = "\n\n".join(parts)
    if raw_markdown or not sys.stdout.isatty():
        sys.stdout.write(text + "\n")
    else:
        console.print(Markdown(text))


@app.command()
def sessions(
    tenant: TenantOrKey = None,
    user: User = ...,  # type: ignore[assignment]
    data_dir: DataDir = None,
    remote: Remote = None,
) -> None:
    """List a user's sessions, oldest first."""
    from memstrata.cli.access import Where, open_reader

    _scope(tenant or "default", user)
    with open_reader(Where(data_dir, remote)) as memory:
        scope = memory.scope(tenant, user)
        metas = memory.reader.sessions(scope)
        via = f" (via {memory.via})" if memory.via else ""
        table = Table(title=show_scope(scope) + via)
        for col in ("session", "date", "turns"):
            table.add_column(col)
        for m in metas:
            table.add_row(m.session_id, m.date_text,
                          str(len(memory.reader.raw(scope, m.session_id))))
    console.print(table if metas else f"no sessions for {show_scope(scope)}")


@app.command()
def forget(
    session_id: Annotated[Optional[str], typer.Argument(
        help="One session to forget; without it, everything of the user.")] = None,
    tenant: TenantOrKey = None,
    user: User = ...,  # type: ignore[assignment]
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
    data_dir: DataDir = None,
    remote: Remote = None,
) -> None:
    """Delete a user's memory (or one session) from every store: vectors, BM25, raw turns, layers."""
    from memstrata.cli.access import DEFAULT_TENANT, Where, open_writer
    from memstrata.layers.lazy import SessionNotFound

    def confirmed(scope: Any) -> tuple[str, str]:
        shown = show_scope(scope)
        what = f"session {session_id!r} of {shown}" if session_id else f"all memory of {shown}"
        if not yes and not typer.confirm(f"Forget {what}?"):
            err.print("nothing forgotten (not confirmed; pass --yes to skip the question)")
            raise typer.Exit(1)
        return shown, what

    where = Where(data_dir, remote)
    if where.address is None:  # asked before the stores are opened
        shown, what = confirmed(_scope(tenant or DEFAULT_TENANT, user))
    else:
        _scope(tenant or DEFAULT_TENANT, user)
    with open_writer(where) as memory:
        scope = memory.scope(tenant, user)
        if memory.via is not None:  # the tenant may be the key's: known once connected
            shown, what = confirmed(scope)
        if session_id is not None:
            try:
                memory.reader.session(scope, session_id)
            except SessionNotFound:
                err.print(f"[red]no session {escape(session_id)!r} for {shown}[/red]")
                raise typer.Exit(1) from None
        known = bool(memory.reader.sessions(scope))
        receipt = memory.writer.delete(scope, session_id)  # also clears an interrupted run's
        memory.writer.flush()
    if session_id is None and not known and receipt.complete and not any(
            receipt.removed.values()):
        err.print(f"[red]no memory for {escape(shown)}: nothing forgotten[/red] (check --tenant, "
                  f"default 'default', and --user)", soft_wrap=True)
        raise typer.Exit(1)
    if not receipt.complete:  # the receipt names the stores; a second run finishes the job
        for store, error in receipt.errors.items():
            err.print(f"[red]{store}: {escape(error)}[/red]", soft_wrap=True)
        err.print(f"[red]forgetting {escape(what)} did not finish; run the same command again "
                  f"to finish it[/red]", soft_wrap=True)
        raise typer.Exit(1)
    removed = receipt.removed
    console.print(f"forgot {what}: {removed.get('docs', 0)} raw turns removed "
                  f"({removed.get('vectors', 0)} vectors, {removed.get('lexical', 0)} BM25 "
                  f"entries)", soft_wrap=True)


@app.command("config")
def show_config(
    data_dir: DataDir = None,
    sources: Annotated[bool, typer.Option(
        "--sources", help="Say where each value comes from: default, env, file or argument.")
    ] = False,
) -> None:
    """Print every namespace's effective settings (secrets masked) as MEMSTRATA_* variables.

    A bad value stops it (exit 2) with one line per problem naming the variable
    or the key of MEMSTRATA_CONFIG_FILE that holds it.
    """
    from pydantic import SecretStr

    from memstrata.config import ENV_PREFIX, _prefix_of

    config = _config(data_dir)
    groups: list[tuple[str, str, Any]] = [("", ENV_PREFIX, config.settings)]
    groups += [(table, _prefix_of(type(ns)), ns) for table, ns in config.namespaces.items()]
    if config.file is not None:
        console.print(f"# file: {escape(str(config.file))}", soft_wrap=True)
    for table, prefix, values in groups:
        where = f"[{table}] in the file" if table else "top-level keys in the file"
        console.print(escape(f"# {table or 'core'}: {prefix}* ({where})"), soft_wrap=True,
                      highlight=False)
        origin = config.sources.get(table, {})
        for name, value in values.model_dump().items():
            shown = "***" if isinstance(value, SecretStr) else value
            line = f"{prefix}{name.upper()}={'' if shown is None else shown}"
            if sources:
                line += f"  # {origin.get(name, 'default')}"
            console.print(escape(line), soft_wrap=True, highlight=False)
    for name, why in config.failed.items():
        console.print(f"# namespace {name!r} failed to load: {escape(why)}", soft_wrap=True)


def _register_subcommands() -> None:
    """Attach command groups that live in their own modules, and the services' commands.

    The services' come through the ``memstrata.commands`` entry points
    (:mod:`memstrata.cli.plugins`), each at its place in ``memstrata --help``.
    """
    from memstrata.cli.plugins import register_commands, register_the_rest

    done: set[str] = set()
    from memstrata.cli import ask_cmd, eval_qa  # noqa: F401 - they register `ask`, `eval qa`
    register_commands(app, "stream", done)  # produce, worker, up (streams.cli)
    from memstrata.cli import check_cmd  # noqa: F401 - `check`
    from memstrata.cli import migrate_cmd  # noqa: F401 - `migrate`
    from memstrata.cli.eval_cmd import eval_app

    app.add_typer(eval_app, name="eval")
    register_commands(app, "serve", done)  # serve, keys, audit (query_service.cli)
    register_commands(app, "workers", done)  # workers head|node|check (workers.cli)
    register_commands(app, "topics", done)  # topics create|check (streams.topics_cli)
    from memstrata.cli import mcp_cmd
    mcp_cmd.register()  # mcp
    from memstrata.cli import export_cmd  # noqa: F401 - `export`
    from memstrata.cli import backup_cmd  # noqa: F401 - `backup`, `restore`
    from memstrata.cli import retention_cmd  # noqa: F401 - `retention show|dry-run|apply`
    from memstrata.cli import profile_cmd  # noqa: F401 - `profile`
    register_the_rest(app, done)


def _quiet_native_libraries() -> None:
    """Defaults for variables native libraries read when they load (set before they do).

    ``GRPC_ENABLE_FORK_SUPPORT=false``: ``serve`` starts child processes (Ray's, the
    broker) while its gRPC threads run, and gRPC's fork handlers then printed "Other
    threads are currently calling into gRPC, skipping fork() handlers" for each fork;
    every child execs at once and none uses gRPC before, so the handlers have nothing
    to do. ``RAY_DISABLE_FAILURE_SIGNAL_HANDLER=1``: Ray's native crash handler printed
    a stack dump on SIGTERM, the ordinary way to stop ``serve``. A value the user set wins.
    """
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
    os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")


def main() -> None:
    from memstrata.cli.help_text import tidy_help

    _quiet_native_libraries()
    _register_subcommands()
    command = tidy_help(typer.main.get_command(app))
    command(prog_name="memstrata")


if __name__ == "__main__":
    main()
