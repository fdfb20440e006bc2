"""``memstrata serve``, ``memstrata keys`` and ``memstrata audit``.

``memstrata`` adds them through :func:`register` (a ``memstrata.commands`` entry
point); loading this module imports no gRPC, a command does when it runs, so
the CLI works without the grpc extra. ``serve --stream`` runs inside the stream
worker's process through the ``embedded_stream`` host (``memstrata.hosts``):
the services do not import each other.

While ``memstrata serve`` holds a data dir it records its address in
``<data dir>/serve.json`` (:class:`ServeMarker`); memory commands run against
that data dir then go through the service (see :mod:`memstrata.cli.access`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, NoReturn, Optional

import typer
from rich.markup import escape
from rich.table import Table

from memstrata.cli import DataDir, _config, _open, console, err
from memstrata.cli.access import DEFAULT_KEYS_FILE, SERVE_FILE, keys_path
from memstrata.cli.exits import Exit

if TYPE_CHECKING:
    from memstrata.cli.plugins import Hosted

keys_app = typer.Typer(help="API keys of the query service (stored hashed).",
                       no_args_is_help=True)
KeysFile = Annotated[Optional[Path], typer.Option(
    "--keys-file", help="Keys file (MEMSTRATA_SERVICE_KEYS_FILE; default: in the data dir).")]


def _bad_keys_file(exc: Exception) -> NoReturn:
    """A keys file that cannot be read or parsed: one line naming it, exit 2."""
    err.print(f"[red]{escape(str(exc))}; fix it, or move it aside and add keys again with "
              "`memstrata keys add TENANT`[/red]", soft_wrap=True)
    raise typer.Exit(Exit.USAGE)


def _audit_keys(data_dir: Path | None, action: str, key_id: str, tenant: str,
                detail: str) -> None:
    """A key change, in the audit log (``memstrata audit show``)."""
    import getpass

    from query_service.audit_cli import audit_log

    try:
        who = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        who = f"uid {os.getuid()}"
    audit_log(data_dir).append_quietly(action=action, via="cli", tenant=tenant,
                                       detail=f"key {key_id}: {detail}; by {who}")


def _scopes_arg(text: str | None, option: str) -> Any:
    """``read,write`` as a scope list (None: the default); a bad name exits 2, naming it."""
    from query_service.keys import parse_scopes

    if text is None:
        return None
    try:
        return parse_scopes(text, option)
    except ValueError as exc:
        err.print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
        raise typer.Exit(Exit.USAGE) from None


def _ids(text: str | None) -> list[str] | None:
    return [t.strip() for t in text.split(",") if t.strip()] if text else None


@keys_app.command("add")
def keys_add(
    tenant: Annotated[str, typer.Argument(help="Tenant the key gives access to.")],
    scopes: Annotated[Optional[str], typer.Option(
        "--scopes", help="What the key may do, among read,write,delete,admin (default: "
                         "read,write,delete).")] = None,
    user: Annotated[Optional[str], typer.Option(
        "--user", help="Bind the key to this user: calls naming another user are "
                       "refused.")] = None,
    tenants: Annotated[Optional[str], typer.Option(
        "--tenants", help="Other tenants the key may act for, comma-separated (a platform "
                          "key, e.g. an ingest pipeline); calls pick one with the "
                          "x-memstrata-tenant header.")] = None,
    keys_file: KeysFile = None, data_dir: DataDir = None,
) -> None:
    """Create an API key for TENANT: printed once, only its hash is stored."""
    from pydantic import ValidationError

    from query_service.keys import KeysFileError, add_key

    chosen = _scopes_arg(scopes, "--scopes")
    path = keys_path(keys_file, data_dir)
    try:
        key_id, key = add_key(path, tenant, scopes=chosen, user=user, tenants=_ids(tenants))
    except KeysFileError as exc:
        _bad_keys_file(exc)
    except ValidationError as exc:
        where = {"tenant": "TENANT", "user": "--user"}.get(
            str(exc.errors()[0]["loc"][0]), "--tenants")
        err.print(f"[red]{where}: letters, digits and . _ : @ / + - only, at most 128[/red]")
        raise typer.Exit(2) from None
    from query_service.keys import read_keys_file

    entry = read_keys_file(path).keys[key_id]
    what = (f"scopes {','.join(entry.shown_scopes())}"
            + (f", user {user}" if user else "")
            + (f", also tenants {','.join(entry.tenants)}" if entry.tenants else ""))
    _audit_keys(data_dir, "keys.add", key_id, tenant, what)
    err.print(f"key {key_id} for tenant {tenant} ({what}) stored (hashed) in {path}; "
              "it is shown only now:", soft_wrap=True)
    sys.stdout.write(key + "\n")


@keys_app.command("list")
def keys_list(keys_file: KeysFile = None, data_dir: DataDir = None) -> None:
    """Key ids, tenants, scopes, bound users and whether they are revoked (never the keys)."""
    from query_service.keys import KeysFileError, dump_for_display

    cols = ("id", "tenant", "scopes", "user", "tenants", "created", "revoked")
    table = Table()
    for col in cols:  # ids whole: `keys scopes` and `keys revoke` take them
        table.add_column("other tenants" if col == "tenants" else col,
                         no_wrap=col in ("id", "scopes"), min_width=12 if col == "id" else None)
    try:
        rows = dump_for_display(keys_path(keys_file, data_dir))
    except KeysFileError as exc:
        _bad_keys_file(exc)
    for row in rows:
        table.add_row(*(str(row[c]) for c in cols))
    console.print(table)


@keys_app.command("scopes")
def keys_scopes(
    key_id: Annotated[str, typer.Argument(help="Key id (see `keys list`).")],
    scopes: Annotated[str, typer.Argument(help="The key's new scopes, e.g. read,write "
                                               "(among read,write,delete,admin).")],
    keys_file: KeysFile = None, data_dir: DataDir = None,
) -> None:
    """Replace a key's scopes; a running service applies them from its next call."""
    from query_service.keys import KeysFileError, set_scopes

    chosen = _scopes_arg(scopes, "SCOPES")
    try:
        entry = set_scopes(keys_path(keys_file, data_dir), key_id, chosen)
    except KeysFileError as exc:
        _bad_keys_file(exc)
    except KeyError:
        err.print(f"[red]no key {escape(key_id)!r}[/red]")
        raise typer.Exit(1) from None
    shown = ",".join(entry.shown_scopes())
    _audit_keys(data_dir, "keys.scopes", key_id, entry.tenant, f"scopes {shown}")
    console.print(f"key {key_id} of tenant {entry.tenant}: scopes {shown}")


@keys_app.command("revoke")
def keys_revoke(key_id: Annotated[str, typer.Argument(help="Key id (see `keys list`).")],
                keys_file: KeysFile = None, data_dir: DataDir = None) -> None:
    """Revoke a key; a running service refuses it from its next call."""
    from query_service.keys import KeysFileError, revoke_key

    try:
        tenant = revoke_key(keys_path(keys_file, data_dir), key_id)
    except KeysFileError as exc:
        _bad_keys_file(exc)
    except KeyError:
        err.print(f"[red]no key {escape(key_id)!r}[/red]")
        raise typer.Exit(1) from None
    _audit_keys(data_dir, "keys.revoke", key_id, tenant, "revoked")
    console.print(f"revoked key {key_id} of tenant {tenant}")


def serve(
    port: Annotated[Optional[int], typer.Option(
        help="gRPC port (MEMSTRATA_SERVICE_PORT, default 50051).")] = None,
    host: Annotated[Optional[str], typer.Option(
        help="Address to listen on (MEMSTRATA_SERVICE_HOST, default 127.0.0.1).")] = None,
    metrics_port: Annotated[Optional[int], typer.Option(
        help="Prometheus /metrics port (off when not given).")] = None,
    keys_file: KeysFile = None,
    stream: Annotated[Optional[bool], typer.Option(
        "--stream/--no-stream",
        help="Also run the embedded broker and stream worker in this process (default: yes "
             "on the embedded stores without MEMSTRATA_KAFKA_BROKERS; no otherwise).")] = None,
    data_dir: DataDir = None,
) -> None:
    """Run the gRPC query service (Ctrl-C or SIGTERM stops it gracefully).

    On the embedded default it also runs what `memstrata up` runs (a tansu broker, the
    stream worker, the embedded stores) in this one process, since the embedded stores
    admit one writer: Ingest publishes to the broker and the worker indexes. With
    MEMSTRATA_KAFKA_BROKERS set, or --no-stream, it runs the query service alone.
    It says "serving ..." only once it listens; a second Ctrl-C stops it without draining.
    """
    from query_service.keys import KeysFileError, read_keys_file
    from memstrata.cli.check_cmd import refuse_if_damaged
    from memstrata import process_memory
    from query_service.server import bind_problem

    from memstrata.kafka import KafkaSettings

    _serve_logging()
    given = {k: v for k, v in {"port": port, "host": host, "metrics_port": metrics_port}.items()
             if v is not None}
    config = _config(data_dir, **({"service": given} if given else {}))
    settings = config.settings
    process_memory.apply(settings)
    refuse_if_damaged(settings)
    from query_service.audit_cli import service_settings

    svc = service_settings(data_dir, **given)
    keys_at = keys_file or svc.keys_file or settings.data_dir / DEFAULT_KEYS_FILE
    svc = svc.model_copy(update={"keys_file": keys_at})
    if stream is None:
        stream = (not config.get(KafkaSettings).brokers
                  and settings.vector_backend == "qdrant-edge")
    if why := bind_problem(svc.host, svc.port):  # before the broker and stores start
        _cannot_listen(svc.host, svc.port, why)
    if svc.metrics_port and (why := bind_problem(svc.host, svc.metrics_port)):
        _cannot_listen(svc.host, svc.metrics_port, why, "--metrics-port",
                       "MEMSTRATA_SERVICE_METRICS_PORT")
    try:
        n_keys = len(read_keys_file(keys_at).keys)
    except KeysFileError as exc:
        _bad_keys_file(exc)
    marker = ServeMarker(settings.data_dir / SERVE_FILE)

    def banner(bound: int) -> str:
        return (f"serving memstrata.v1.MemoryService on {svc.host}:{bound} over "
                f"{settings.data_dir}; keys: {svc.keys_file} ({n_keys} keys"
                f"{'' if n_keys else ': add one with `memstrata keys add TENANT`'})"
                + (f"; metrics on :{svc.metrics_port}/metrics" if svc.metrics_port else ""))

    def listening(handle: Any) -> None:
        marker.write(f"{svc.host}:{handle.port}")
        err.print(banner(handle.port), soft_wrap=True)

    from query_service.server import BindError

    try:
        if stream:
            _serve_with_stream(config, svc, listening)
        else:
            _serve_alone(data_dir, config, svc, listening)
    except BindError as exc:
        _cannot_listen(exc.host, exc.port, bind_problem(exc.host, exc.port) or str(exc))
    except OSError as exc:  # the metrics port taken, a keys or TLS file unreadable...
        import errno

        err.print(f"[red]cannot serve: {escape(str(exc))}[/red]", soft_wrap=True)
        raise typer.Exit(Exit.UNREACHABLE if exc.errno == errno.EADDRINUSE
                         else Exit.FAILED) from None
    finally:
        marker.remove()


def _serve_logging() -> None:
    """Plain log lines (rich on a terminal); the service's own start/stop lines at INFO."""
    import logging

    from memstrata.cli import setup_logging

    setup_logging(logging.WARNING)
    for name in ("query_service", "memstrata.stream.worker"):
        logging.getLogger(name).setLevel(logging.INFO)


def _cannot_listen(host: str, port: int, why: str, option: str = "--port",
                   setting: str = "MEMSTRATA_SERVICE_PORT") -> None:
    err.print(f"[red]cannot listen on {host}:{port}: {escape(why or 'bind failed')}; choose "
              f"another port with {option} or {setting}[/red]", soft_wrap=True)
    raise typer.Exit(Exit.UNREACHABLE)


class ServeMarker:
    """``<data dir>/serve.json``: where the service holding the data dir listens.

    Written once the server listens; removed only by the process that wrote
    it, so a ``serve`` refused because the data dir is held never takes away
    the address of the one that holds it.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.written = False

    def write(self, address: str) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"address": address, "pid": os.getpid()}))
        tmp.replace(self.path)
        self.written = True

    def remove(self) -> None:
        if not self.written:
            return
        try:
            ours = json.loads(self.path.read_text()).get("pid") == os.getpid()
        except (OSError, ValueError, AttributeError):
            return
        if ours:
            self.path.unlink(missing_ok=True)


def _serve_alone(data_dir: Path | None, config: Any, svc: Any,
                 listening: Callable[[Any], None]) -> None:
    import asyncio

    from memstrata.controller.config import ControllerSettings
    from memstrata.kafka import KafkaSettings
    from memstrata.lifecycle.pause import offered
    from memstrata.limits import TurnLimits
    from query_service.server import run_server

    turns = config.get(TurnLimits)
    memory = _open(data_dir)
    try:
        # The scheduled retention sweep; in Kafka mode it publishes control events.
        from memstrata.lifecycle.retention_service import serve_retention

        retention = serve_retention(memory, config, svc.keys_file, kafka=config.get(KafkaSettings))
        with offered(memory):  # `memstrata backup` may pause the writes (lifecycle.pause)
            asyncio.run(retention.alongside(run_server(
                memory, svc, on_listening=listening, turn_limits=turns,
                controller_settings=config.get(ControllerSettings),
                kafka=config.get(KafkaSettings), config=config, extra_metrics=retention.metrics)))
    finally:
        memory.close()


def _serve_with_stream(config: Any, svc: Any, listening: Callable[[Any], None]) -> None:
    """Broker, stream worker and gRPC server in one process over one Memory."""
    from typing import cast

    from memstrata.cli.plugins import find_host
    from memstrata.controller.config import ControllerSettings
    from query_service.publish import StoredOffsets
    from query_service.server import run_server

    try:
        host = find_host("embedded_stream")
    except LookupError as exc:
        err.print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
        raise typer.Exit(Exit.USAGE) from None

    async def grpc_service(hosted: Hosted) -> None:
        # Ingest answers once this process's worker has stored the turns (the broker
        # keeps them in memory only): see query_service.publish.
        from memstrata.lifecycle.pause import offered
        from memstrata.lifecycle.retention_service import serve_retention

        def announce(handle: Any) -> None:
            listening(handle)
            err.print(f"stream worker: embedded broker at {hosted.broker} (memstrata produce "
                      "FILE in another shell publishes to it)", soft_wrap=True)

        memory = hosted.memory
        # The retention sweep deletes through this process's memory (it owns the stores).
        retention = serve_retention(memory, config, svc.keys_file)
        with offered(memory):  # `memstrata backup` may pause the writes (lifecycle.pause)
            await retention.alongside(run_server(
                memory, svc, handle_signals=False, on_listening=announce,
                kafka=hosted.kafka,  # the embedded broker's address, login
                controller_settings=config.get(ControllerSettings),
                config=config, stored=cast(StoredOffsets, hosted.stored),
                turn_limits=hosted.turns,
                extra_metrics=[hosted.registry, *retention.metrics]))

    host(config, grpc_service)


def register(app: typer.Typer) -> None:
    """``memstrata serve``, ``keys`` and ``audit`` (entry point ``memstrata.commands``)."""
    from query_service.audit_cli import audit_app

    app.command()(serve)
    app.add_typer(keys_app, name="keys")
    app.add_typer(audit_app, name="audit")
