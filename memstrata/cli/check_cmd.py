"""``memstrata check``: verify a data dir, say what is wrong per session and how to fix it.

The checks themselves are :mod:`memstrata.check` (``memstrata serve`` runs
their cheap part on start); this module prints them and sets the exit code:
0 sound, 1 problems found, 2 the check could not run, 3 ``--repair`` while
another process holds the data dir. Without ``--repair`` beside such a process
it runs what needs no lock (SQLite, the BM25 files) and lists what it skipped.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.markup import escape

from memstrata.cli import DataDir, _settings, app, console, err


def _print(report: Any) -> None:
    for name in report.checked:
        console.print(f"checked: {name}")
    for why in report.skipped:
        console.print(f"[yellow]not checked: {escape(why)}[/yellow]", soft_wrap=True)
    by_place: dict[str, list[Any]] = {}
    for f in report.findings:
        by_place.setdefault(f.where, []).append(f)
    for place, found in by_place.items():
        console.print(f"[bold]{escape(place)}[/bold]", soft_wrap=True)
        for f in found:
            colour = "red" if f.severity == "error" else "yellow"
            console.print(f"  [{colour}]{f.severity}[/{colour}] {f.kind}: {escape(f.detail)}",
                          soft_wrap=True)
            console.print(f"    fix: {escape(f.fix)}", soft_wrap=True)
    if report.totals:
        t = report.totals
        console.print(f"totals: {t.get('units', 0)} L0 units, {t.get('vectors', 0)} vectors, "
                      f"{t.get('lexical', 0)} BM25 documents; {report.sessions} sessions "
                      "checked")
    errors, warnings = len(report.errors), len(report.findings) - len(report.errors)
    verdict = "[green]ok[/green]" if report.ok else f"[red]{errors} problem(s)[/red]"
    console.print(f"{escape(str(report.data_dir))}: {verdict}"
                  + (f", {warnings} warning(s)" if warnings else "")
                  + (f" ({len(report.skipped)} part(s) not checked: see above)"
                     if report.skipped else ""), soft_wrap=True)


def _as_json(report: Any) -> str:
    return json.dumps({
        "data_dir": str(report.data_dir), "ok": report.ok, "checked": report.checked,
        "skipped": report.skipped, "sessions": report.sessions, "totals": report.totals,
        "findings": [{"severity": f.severity, "kind": f.kind, "where": f.where,
                      "tenant_id": f.scope.tenant_id if f.scope else None,
                      "user_id": f.scope.user_id if f.scope else None,
                      "session_id": f.session_id, "store": f.store, "detail": f.detail,
                      "fix": f.fix}
                     for f in report.findings]}, indent=1)


@app.command()
def check(
    quick: Annotated[bool, typer.Option(
        "--quick", help="Only SQLite's quick_check, the stores' own files and the whole-store "
                        "totals (what `memstrata serve` runs on start).")] = False,
    repair: Annotated[bool, typer.Option(
        "--repair", help="Rebuild a damaged vector store or BM25 index from the doc store and "
                         "every session found broken from its raw turns, then check again.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    data_dir: DataDir = None,
) -> None:
    """Verify a data dir: SQLite integrity, the stores' files, counts and digests per session.

    SQLite's integrity_check and the BM25 index files' checksums (both without the
    data dir's lock, so they run beside a `memstrata serve`); then every stored vector
    readable and a sample decoded, and per session that the L0 units, vectors and BM25
    documents agree and that the stored digest matches the raw turns. Exit code 0:
    sound; 1: problems found (each with what to do); 2: cannot check; 3: --repair while
    another process holds the data dir.
    """
    from memstrata.check import CheckReport, check_index_files, check_sqlite_file

    settings = _settings(data_dir)
    report = CheckReport(data_dir=settings.data_dir)
    if settings.doc_backend == "sqlite" and not settings.docs_path.is_file():
        err.print(f"[red]nothing to check: no {escape(str(settings.docs_path))} (nothing "
                  f"ingested into {escape(str(settings.data_dir))} yet?)[/red]", soft_wrap=True)
        raise typer.Exit(2)
    if repair:
        _refuse_repair_if_held(settings)
    if settings.doc_backend == "sqlite":
        # First, and without the data dir's lock: works while another process holds it,
        # and the other checks would only read the damage again.
        report = check_sqlite_file(settings.docs_path, deep=not quick)
        report.data_dir = settings.data_dir
        if not report.ok:
            _finish(report, as_json)
    check_index_files(settings, report)  # files only: no lock either
    memory = _open_to_check(settings, report, repair)
    try:
        report, memory = _check_and_repair(settings, memory, report, quick=quick,
                                           repair=repair)
    finally:
        if memory is not None:
            memory.close()
    _finish(report, as_json)


def _check_and_repair(settings: Any, memory: Any, report: Any, *, quick: bool,
                      repair: bool) -> tuple[Any, Any]:
    """Check the open memory; with ``repair``, rebuild damaged stores, then broken sessions.

    ``memory`` is None when it could not be opened (held by another process, or a
    store that will not open: ``report`` says which). Returns the last report and
    the memory now open (a rebuild reopens it), for the caller to close.
    """
    from memstrata.check import STORE_LABELS, check_memory, repair_sessions

    if memory is not None:
        check_memory(memory, deep=not quick, report=report)
    if not repair:
        return report, memory
    stores = report.stores_to_rebuild()
    if stores:
        if memory is not None:
            memory.close()
            memory = None
        memory = _rebuild(settings, stores)
        err.print(f"rebuilt the {', '.join(STORE_LABELS[s] for s in stores)} from the doc "
                  "store (each damaged one is kept beside it as *.damaged-*); checking again",
                  soft_wrap=True)
        report = check_memory(memory, deep=not quick)
    broken = report.sessions_to_repair() if memory is not None else []
    if broken:
        n = repair_sessions(memory, broken, progress=lambda scope, sid: err.print(
            f"rebuilt tenant={scope.tenant_id} user={scope.user_id} session={sid}",
            soft_wrap=True))
        err.print(f"{n} session(s) rebuilt from their raw turns; checking again")
        report = check_memory(memory, deep=True)
    return report, memory


def _rebuild(settings: Any, stores: list[str]) -> Any:
    from memstrata.check import STORE_LABELS
    from memstrata.cli.locked import exit_locked
    from memstrata.rebuild import rebuild_stores
    from memstrata.roles import DataDirLocked

    last: dict[str, int] = {}

    def progress(store: str, done: int, total: int) -> None:
        step = max(1, total // 10)
        if done == total or done - last.get(store, 0) >= step:
            last[store] = done
            unit = "sessions" if store == "session-lexical" else "L0 units"
            err.print(f"rebuilding the {STORE_LABELS[store]}: {done}/{total} {unit}")

    try:
        return rebuild_stores(settings, stores, progress)
    except DataDirLocked as exc:
        exit_locked(exc)


def _holder(exc: Any) -> str:
    if not exc.pid:
        return "another process"
    text = f"process {exc.pid}" + (f" on {exc.host}" if exc.host else "")
    return text + (f" ({exc.command})" if exc.command else "")


def _refuse_repair_if_held(settings: Any) -> None:
    """``--repair`` rewrites the stores: refuse at once, naming the holder, if one runs."""
    from memstrata.roles import DataDirLocked
    from memstrata.store.factory import embedded_backends
    from memstrata.store.lock import DataDirLock

    if not embedded_backends(settings):
        return
    try:
        DataDirLock(settings.data_dir, purpose="repair").acquire().release()
    except DataDirLocked as exc:
        _refuse_repair(exc)


def _refuse_repair(exc: Any) -> NoReturn:
    from memstrata.cli.exits import Exit

    err.print(f"[red]refusing to repair: the data dir {escape(str(exc.data_dir))} is in use by "
              f"{escape(_holder(exc))}, and `memstrata check --repair` rewrites the stores, so "
              f"it needs the data dir to itself. Stop that process first (Ctrl-C or SIGTERM for "
              f"`memstrata serve`), then run `memstrata check --repair` again; `memstrata "
              f"check` without --repair reads what it can beside it.[/red]", soft_wrap=True)
    raise typer.Exit(Exit.LOCKED)


def _open_to_check(settings: Any, report: Any, repair: bool) -> Any:
    """Memory to check, or None with what could not be checked recorded in ``report``."""
    from memstrata.check import STORE_LABELS, Finding, rebuild_hint
    from memstrata.memory import Memory
    from memstrata.rebuild import probe_stores
    from memstrata.roles import DataDirLocked

    try:
        return Memory.open(settings, read_only=not repair)
    except DataDirLocked as exc:
        if repair:
            _refuse_repair(exc)
        report.skipped.append(
            f"the vector store, the totals and the per-session counts and digests: the data "
            f"dir is in use by {_holder(exc)}, and the embedded vector store (Qdrant Edge) "
            f"cannot be opened, even to read, while another process has it open (counts "
            f"taken beside a writer would also disagree while it writes). Checked without "
            f"the lock: SQLite's integrity and the BM25 index files. For the rest, run "
            f"`memstrata check` again once that process has stopped")
        return None
    except Exception as exc:  # noqa: BLE001 - which store failed decides what to say
        original = exc
    try:
        failed = probe_stores(settings)
    except DataDirLocked as exc:  # taken between the two opens
        if repair:
            _refuse_repair(exc)
        failed = {}
    if not failed:
        err.print(f"[red]cannot open memory: {escape(str(original))}[/red]", soft_wrap=True)
        raise typer.Exit(2)
    damaged = set(report.stores_to_rebuild())
    for store, why in failed.items():
        if store not in damaged:
            report.findings.append(Finding(
                "error", "store", str(_store_path(settings, store)),
                f"the {STORE_LABELS[store]} cannot be opened: {why}", rebuild_hint(store),
                store=store))
    if not repair:
        report.skipped.append(
            "the totals and the per-session counts and digests: the "
            f"{', '.join(STORE_LABELS[s] for s in failed)} cannot be opened, and they read "
            "every store")
    return None


def _store_path(settings: Any, store: str) -> Path:
    from memstrata.rebuild import store_paths

    return store_paths(settings)[store]


def _finish(report: Any, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(_as_json(report) + "\n")
    else:
        _print(report)
    raise typer.Exit(0 if report.ok else 1)


def refuse_if_damaged(target: Any) -> None:
    """``memstrata serve`` on start: refuse damaged files, each with its fix.

    ``target``: the settings (SQLite's quick_check, then the BM25 index files'
    checksums: a damaged segment would otherwise stop the start with the
    engine's error alone), or only the SQLite file's path.
    """
    from memstrata.check import CheckReport, check_index_files, check_sqlite_file

    settings = None if isinstance(target, Path) else target
    docs_path = target if settings is None else settings.docs_path
    is_sqlite = settings is None or settings.doc_backend == "sqlite"
    report = (check_sqlite_file(docs_path, deep=False) if is_sqlite and docs_path.is_file()
              else CheckReport())
    if settings is not None and report.ok:
        check_index_files(settings, report)
    for f in report.errors:
        err.print(f"[red]refusing to serve: {escape(f.line())}[/red]", soft_wrap=True)
    if not report.ok:
        fix = ("run `memstrata check --repair` to rebuild it, then start `memstrata serve` "
               "again" if report.stores_to_rebuild()
               else "run `memstrata check` for the full report")
        err.print(f"[red]{fix}[/red]")
        raise typer.Exit(2)
