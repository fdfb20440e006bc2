"""``memstrata export``: a user's (or a whole tenant's) memory as the JSONL ``ingest`` reads.

Locally the data dir's doc store is opened alone and read-only (no encoder, no
index, no lock), so an export needs nothing but the file; when a ``memstrata
serve`` holds the data dir (or ``--remote`` names a service) it streams the
``ExportUser`` RPC instead, scoped by the API key's tenant. The format is
described in :mod:`memstrata.lifecycle.records` and docs/lifecycle.md.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Annotated, Any, Optional

import typer
from rich.markup import escape

from memstrata.cli import DataDir, _scope, _settings, app, err
from memstrata.cli.access import DEFAULT_TENANT, Remote, TenantOrKey, Where
from memstrata.cli.exits import Exit


def layers_path(output: Path) -> Path:
    """Where ``--layers`` writes beside ``-o FILE``: ``x.jsonl`` -> ``x.layers.jsonl``."""
    stem = output.name[: -len(output.suffix)] if output.suffix else output.name
    return output.with_name(f"{stem}.layers{output.suffix or '.jsonl'}")


@app.command("export")
def export(
    tenant: TenantOrKey = None,
    user: Annotated[Optional[str], typer.Option(
        "--user", "-u", show_default=False,
        help="The user to export; without it, every user of --tenant.")] = None,
    output: Annotated[Optional[Path], typer.Option(
        "--output", "-o", show_default=False,
        help="File to write (default: standard output).")] = None,
    layers: Annotated[bool, typer.Option(
        "--layers", help="Also write the derived layers (L0 units, cached L1/L2) to "
                         "FILE's sibling NAME.layers.jsonl (needs -o).")] = False,
    data_dir: DataDir = None,
    remote: Remote = None,
) -> None:
    """Write a user's memory (or a tenant's) as JSONL turn events that `memstrata ingest` reads.

    Lossless for what memory keeps of a conversation: ids, roles, speakers, message
    ids, session dates and labels, message order (hence the turns). The first line
    is a header saying what was exported, from where and when (ingest skips it).
    Export then ingest into an empty data dir rebuilds the same L0-L3; it is also
    how memory moves from the embedded shape to the distributed one.
    """
    if user is None and tenant is None:
        err.print("[red]--user or --tenant: give --user U to export one user, or --tenant T "
                  "(without --user) to export every user of a tenant[/red]", soft_wrap=True)
        raise typer.Exit(Exit.USAGE)
    if layers and output is None:
        err.print("[red]--layers: the layers go to a second file beside the export; give "
                  "-o FILE as well[/red]", soft_wrap=True)
        raise typer.Exit(Exit.USAGE)
    _scope(tenant or DEFAULT_TENANT, user or "_")  # a bad id is told before anything opens
    where = Where(data_dir, remote)
    with ExitStack() as stack:
        if where.address:
            sessions, tenant_id, source = _remote(stack, where, tenant, user, layers)
        else:
            sessions, tenant_id, source = _local(stack, data_dir, tenant, user, layers)
        written = _write(sessions, tenant_id, user, source, output, layers)
    _summary(written, tenant_id, user, output, layers)


def _local(stack: ExitStack, data_dir: Path | None, tenant: str | None, user: str | None,
           layers: bool) -> tuple[Iterator[Any], str, str]:
    from memstrata.lifecycle.export import user_sessions
    from memstrata.model import Scope
    from memstrata.store.factory import open_doc_store

    settings = _settings(data_dir)
    if settings.doc_backend == "sqlite" and not settings.docs_path.is_file():
        err.print(f"[red]nothing to export: nothing ingested into "
                  f"{escape(str(settings.data_dir))} yet (point --data-dir or "
                  f"MEMSTRATA_DATA_DIR at the data dir you ingested into)[/red]", soft_wrap=True)
        raise typer.Exit(Exit.USAGE)
    try:
        docs = open_doc_store(settings, read_only=True)
        stack.callback(docs.close)
    except Exception as exc:  # noqa: BLE001 - a store that will not open: one line
        err.print(f"[red]cannot open the doc store: {escape(str(exc))}[/red]", soft_wrap=True)
        raise typer.Exit(Exit.FAILED) from None
    tenant_id = tenant or DEFAULT_TENANT

    def sessions() -> Iterator[Any]:
        users = [user] if user is not None else docs.iter_users(tenant_id)
        for u in users:
            yield from user_sessions(docs, Scope(tenant_id=tenant_id, user_id=u), layers=layers)

    return sessions(), tenant_id, f"data dir {settings.data_dir}"


def _remote(stack: ExitStack, where: Where, tenant: str | None, user: str | None,
            layers: bool) -> tuple[Iterator[Any], str, str]:
    from memstrata.cli.access import open_reader, remote_failure
    from memstrata.client import RemoteError, RemoteSessionNotFound

    opened = stack.enter_context(open_reader(where))
    assert opened.client is not None
    tenant_id = opened.tenant(tenant)
    client = opened.client

    def sessions() -> Iterator[Any]:
        try:
            yield from client.export_user(tenant_id, user, layers=layers)
        except RemoteSessionNotFound:  # an unknown user: nothing to export, said below
            return
        except RemoteError as exc:
            remote_failure(exc)

    return sessions(), tenant_id, f"service {opened.via}"


class _Out:
    """The export's files, written under a temporary name and renamed once complete."""

    def __init__(self, stack: ExitStack, output: Path | None, layers: bool) -> None:
        self.final: list[tuple[Path, Path]] = []
        self.turns: IO[str] = (self._open(stack, output) if output is not None else
                               io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8",
                                                newline="\n", write_through=True))
        if output is None:
            stack.callback(self.turns.detach)  # type: ignore[attr-defined]
        self.layers = self._open(stack, layers_path(output)) if layers and output else None

    def _open(self, stack: ExitStack, path: Path) -> IO[str]:
        part = path.with_name(f".{path.name}.partial")
        self.final.append((part, path))
        stack.callback(lambda: part.unlink(missing_ok=True))  # left only by a failure
        return stack.enter_context(part.open("w", encoding="utf-8", newline="\n"))

    def commit(self) -> None:
        for stream in (self.turns, self.layers):
            if stream is not None:
                stream.flush()
                if stream.fileno() != sys.stdout.fileno():
                    os.fsync(stream.fileno())
        for part, path in self.final:
            part.replace(path)


def _write(sessions: Iterator[Any], tenant_id: str, user: str | None, source: str,
           output: Path | None, layers: bool) -> Any:
    from memstrata import __version__
    from memstrata.lifecycle.export import ExportScopeError, ExportWriter
    from memstrata.lifecycle.records import export_header

    try:
        with ExitStack() as files:
            out = _Out(files, output, layers)
            writer = ExportWriter(out.turns, tenant_id, user, layers_out=out.layers)
            for session in sessions:
                if not writer.counts.sessions:  # the header once there is something to export
                    writer.header(export_header(
                        tenant_id=tenant_id, user_id=user, source=source,
                        layers_file=layers_path(output).name if layers and output else None,
                        exported_at=datetime.now(UTC), version=__version__))
                writer.write(session)
            if not writer.counts.sessions:
                who = f"user {user!r} of tenant {tenant_id!r}" if user else f"tenant {tenant_id!r}"
                err.print(f"[red]no memory for {escape(who)}: nothing exported[/red] (check "
                          f"--tenant, default 'default', and --user)", soft_wrap=True)
                raise typer.Exit(Exit.FAILED)
            out.commit()
    except ExportScopeError as exc:  # never expected: the export stops rather than leak
        err.print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
        raise typer.Exit(Exit.FAILED) from None
    except BrokenPipeError:  # `memstrata export ... | head`: the reader has had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(Exit.OK) from None
    except OSError as exc:
        err.print(f"[red]cannot write the export: {escape(str(exc))}[/red]", soft_wrap=True)
        raise typer.Exit(Exit.FAILED) from None
    return writer


def _summary(writer: Any, tenant_id: str, user: str | None, output: Path | None,
             layers: bool) -> None:
    c = writer.counts
    who = f"tenant={tenant_id}" + (f" user={user}" if user else f" ({len(c.users)} users)")
    where = f" to {output}" if output is not None else ""
    line = (f"exported {who}: {c.sessions} sessions, {c.turns} turns, {c.messages} messages"
            f"{where}")
    if layers and output is not None:
        line += f"; {c.layer_records} layer records to {layers_path(output)}"
    err.print(escape(line), soft_wrap=True, highlight=False)
    if c.refused_count:
        err.print(f"[yellow]{c.refused_count} line(s) hold what `memstrata ingest` refuses as "
                  f"it is (kept as stored):[/yellow]", soft_wrap=True)
        for why in c.refused:
            err.print(f"  {escape(why)}", soft_wrap=True)
