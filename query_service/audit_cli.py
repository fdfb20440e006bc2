"""``memstrata audit show|verify|export``: the audit log of deletes, exports, key changes
and admin calls (:mod:`query_service.audit`); registered with ``serve`` by
:func:`query_service.cli.register`.

``show`` and ``export`` read the data dir's log (``MEMSTRATA_SERVICE_AUDIT_FILE``,
default ``<data dir>/audit.jsonl``); ``show --remote`` asks a running service
with an admin key (``ReadAudit``) instead. ``verify`` checks the hash chain.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, Optional

import typer
from rich.markup import escape
from rich.table import Table

from memstrata.cli import DataDir, _config, _settings, console, err
from memstrata.cli.access import Remote
from memstrata.cli.exits import Exit

if TYPE_CHECKING:
    from query_service.settings import ServiceSettings

audit_app = typer.Typer(help="The audit log: deletes, exports, key changes, admin calls.",
                        no_args_is_help=True)

AuditFile = Annotated[Optional[Path], typer.Option(
    "--file", help="Audit log (MEMSTRATA_SERVICE_AUDIT_FILE; default: audit.jsonl in the "
                   "data dir).")]
Tenant = Annotated[Optional[str], typer.Option(
    "--tenant", "-t", help="Only this tenant's entries.")]
COLUMNS = ("seq", "ts", "via", "key_id", "action", "tenant", "user", "session", "records",
           "outcome", "detail")


def service_settings(data_dir: Path | None = None, **overrides: Any) -> ServiceSettings:
    """``MEMSTRATA_SERVICE_*`` from the command's configuration, options applied."""
    from query_service.settings import ServiceSettings

    given = {k: v for k, v in overrides.items() if v is not None}
    return _config(data_dir, **({"service": given} if given else {})).get(ServiceSettings)


def audit_path(data_dir: Path | None, given: Path | None = None) -> Path:
    """The log a command reads or appends to: ``--file``, the setting, else the data dir's."""
    from query_service.audit import AUDIT_FILE

    if given is not None:
        return given
    return service_settings(data_dir).audit_file or _settings(data_dir).data_dir / AUDIT_FILE


def audit_log(data_dir: Path | None) -> Any:
    """The data dir's :class:`~query_service.audit.AuditLog` (for the keys commands)."""
    from query_service.audit import AuditLog

    return AuditLog(audit_path(data_dir))


def _bad_log(exc: Exception) -> NoReturn:
    err.print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
    raise typer.Exit(Exit.FAILED)


def _remote_entries(address: str, tenant: str | None, limit: int) -> list[dict[str, Any]]:
    """Every entry ``ReadAudit`` gives the key (admin scope) for ``tenant``, up to ``limit``."""
    from memstrata.cli.access import client_settings
    from memstrata.client import MemoryClient, RemoteError

    out: list[dict[str, Any]] = []
    after = 0
    try:
        with MemoryClient(address, settings=client_settings()) as client:
            while len(out) < limit:
                page = client.read_audit(tenant, after_seq=after)
                out.extend({"tenant": e["tenant_id"], "user": e["user_id"],
                            "session": e["session_id"], **e} for e in page.items)
                if page.next is None:
                    break
                after = page.next
    except RemoteError as exc:
        err.print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
        raise typer.Exit(Exit.FAILED) from None
    return out[:limit]


@audit_app.command("show")
def audit_show(
    tenant: Tenant = None,
    limit: Annotated[int, typer.Option(min=1, help="At most this many entries (the last "
                                                   "ones).")] = 100,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON entry per line.")] = False,
    remote: Remote = None,
    audit_file: AuditFile = None,
    data_dir: DataDir = None,
) -> None:
    """The last entries of the audit log (with --remote: through the service, admin key)."""
    from query_service.audit import AuditError, read_entries

    if remote is not None:
        entries = _remote_entries(remote, tenant, 1_000_000)[-limit:]
    else:
        try:
            entries = [e for e in read_entries(audit_path(data_dir, audit_file))
                       if tenant is None or e.get("tenant") == tenant][-limit:]
        except AuditError as exc:
            _bad_log(exc)
    if as_json:
        for e in entries:
            sys.stdout.write(json.dumps({c: e.get(c) for c in COLUMNS}) + "\n")
        return
    table = Table()
    for col in COLUMNS:
        table.add_column(col, no_wrap=col in ("seq", "key_id", "outcome"))
    for e in entries:
        table.add_row(*(escape("" if e.get(c) is None else str(e.get(c))) for c in COLUMNS))
    console.print(table)


@audit_app.command("verify")
def audit_verify(audit_file: AuditFile = None, data_dir: DataDir = None) -> None:
    """Check the hash chain: exit 0 when every line is intact and in order, 1 otherwise."""
    from query_service.audit import verify

    path = audit_path(data_dir, audit_file)
    verdict = verify(path)
    if verdict.ok:
        console.print(f"{path}: {verdict.entries} entries, chain intact; head {verdict.head}",
                      soft_wrap=True)
        return
    err.print(f"[red]{path}: the chain is broken ({verdict.entries} entries read):[/red]",
              soft_wrap=True)
    for line in verdict.problems:
        err.print(f"  {escape(line)}", soft_wrap=True)
    raise typer.Exit(Exit.FAILED)


@audit_app.command("export")
def audit_export(
    output: Annotated[Path, typer.Option("--output", "-o", help="File to write (JSONL).")],
    tenant: Tenant = None,
    audit_file: AuditFile = None,
    data_dir: DataDir = None,
) -> None:
    """Copy the audit log to FILE (verifiable with `audit verify --file FILE`); with
    --tenant, only that tenant's lines (each keeps its hash, the chain is not whole)."""
    from query_service.audit import AuditError, read_entries, verify

    path = audit_path(data_dir, audit_file)
    verdict = verify(path)
    if not verdict.ok:
        err.print(f"[yellow]{path}: the chain is broken ({verdict.problems[0]}); exporting "
                  f"it as it is[/yellow]", soft_wrap=True)
    fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # as private as the log
    with os.fdopen(fd, "wb") as fh:
        if tenant is None:
            if path.exists():
                fh.write(path.read_bytes())
            console.print(f"{verdict.entries} entries written to {output}", soft_wrap=True)
            return
        try:
            kept = [e for e in read_entries(path) if e.get("tenant") == tenant]
        except AuditError as exc:
            _bad_log(exc)
        for e in kept:  # the writer's own form: each line keeps its hash
            fh.write((json.dumps(e, ensure_ascii=True, separators=(",", ":")) + "\n").encode())
    console.print(f"{len(kept)} entries of tenant {tenant} written to {output}",
                  soft_wrap=True)
