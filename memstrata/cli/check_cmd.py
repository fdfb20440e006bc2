"""``memstrata check``: verify a data dir, say what is wrong per session and how to fix it.

The checks themselves are :mod:`memstrata.check` (``memstrata serve`` runs
their cheap part on start); this module prints them and sets the exit code:
0 sound, 1 problems found, 2 the check could not run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from memstrata.cli import DataDir, _open, _settings, app, console, err


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
                  + (f", {warnings} warning(s)" if warnings else ""), soft_wrap=True)


def _as_json(report: Any) -> str:
    return json.dumps({
        "data_dir": str(report.data_dir), "ok": report.ok, "checked": report.checked,
        "skipped": report.skipped, "sessions": report.sessions, "totals": report.totals,
        "findings": [{"severity": f.severity, "kind": f.kind, "where": f.where,
                      "tenant_id": f.scope.tenant_id if f.scope else None,
                      "user_id": f.scope.user_id if f.scope else None,
                      "session_id": f.session_id, "detail": f.detail, "fix": f.fix}
                     for f in report.findings]}, indent=1)


@app.command()
def check(
    quick: Annotated[bool, typer.Option(
        "--quick", help="Only SQLite's quick_check and the whole-store totals (what "
                        "`memstrata serve` runs on start).")] = False,
    repair: Annotated[bool, typer.Option(
        "--repair", help="Rebuild every session found broken from its raw turns, then "
                         "check again.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    data_dir: DataDir = None,
) -> None:
    """Verify a data dir: SQLite integrity, store counts and digests per session.

    SQLite's integrity_check; then, per session, that the L0 units, vectors and BM25
    documents agree and that the stored digest matches the raw turns. Exit code 0:
    sound; 1: problems found (each with what to do); 2: cannot check.
    """
    from memstrata.check import check_sqlite_file, check_stores, repair_sessions

    settings = _settings(data_dir)
    if settings.doc_backend == "sqlite":
        if not settings.docs_path.is_file():
            err.print(f"[red]nothing to check: no {escape(str(settings.docs_path))} (nothing "
                      f"ingested into {escape(str(settings.data_dir))} yet?)[/red]",
                      soft_wrap=True)
            raise typer.Exit(2)
        # First, and without the data dir's lock: works while another process holds it,
        # and the other checks would only read the damage again.
        report = check_sqlite_file(settings.docs_path, deep=not quick)
        report.data_dir = settings.data_dir
        if not report.ok:
            _finish(report, as_json)
    else:
        from memstrata.check import CheckReport

        report = CheckReport(data_dir=settings.data_dir)
    memory = _open(data_dir, read_only=not repair)
    try:
        from memstrata.check import check_totals

        check_totals(memory.docs, memory.vectors, memory.lexical, report)
        if not quick:
            check_stores(memory.docs, memory.vectors, memory.lexical, memory.session_lexical,
                         report=report)
        broken = report.sessions_to_repair()
        if repair and broken:
            n = repair_sessions(memory, broken, progress=lambda scope, sid: err.print(
                f"rebuilt tenant={scope.tenant_id} user={scope.user_id} session={sid}",
                soft_wrap=True))
            err.print(f"{n} session(s) rebuilt from their raw turns; checking again")
            report = check_sqlite_file(settings.docs_path, deep=not quick) \
                if settings.doc_backend == "sqlite" else type(report)()
            report.data_dir = settings.data_dir
            check_totals(memory.docs, memory.vectors, memory.lexical, report)
            check_stores(memory.docs, memory.vectors, memory.lexical, memory.session_lexical,
                         report=report)
    finally:
        memory.close()
    _finish(report, as_json)


def _finish(report: Any, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(_as_json(report) + "\n")
    else:
        _print(report)
    raise typer.Exit(0 if report.ok else 1)


def refuse_if_damaged(docs_path: Path) -> None:
    """``memstrata serve`` on start: refuse a damaged SQLite file (quick_check), with the fix."""
    from memstrata.check import check_sqlite_file

    if not docs_path.is_file():
        return
    report = check_sqlite_file(docs_path, deep=False)
    for f in report.errors:
        err.print(f"[red]refusing to serve: {escape(f.line())}[/red]", soft_wrap=True)
    if not report.ok:
        err.print("[red]run `memstrata check` for the full report[/red]")
        raise typer.Exit(2)
