"""How a command reaches memory: the local data dir, or a running service.

Every command that reads or writes memory takes ``--remote`` and opens memory
with :func:`open_reader` or :func:`open_writer`. Both yield an :class:`Opened`
whose ``reader`` is a :class:`~memstrata.roles.MemoryReader` and whose
``writer`` a :class:`~memstrata.roles.MemoryWriter`, so a command has one body
for both places and prints through the same code.

Memory is remote when ``--remote HOST:PORT`` is given, else when
``MEMSTRATA_API_ADDRESS`` is set, else when a live ``memstrata serve`` holds
the data dir (its address is in ``<data dir>/serve.json``: the embedded
stores admit one writer, so commands go through it). The key comes from
``MEMSTRATA_API_KEY``; with no ``--tenant`` the tenant is the key's.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, Optional

import typer
from rich.markup import escape

from memstrata.cli.exits import Exit

if TYPE_CHECKING:
    from memstrata.client.sync import MemoryClient
    from memstrata.contract import Answer
    from memstrata.model import Scope
    from memstrata.roles import HostedMemory, MemoryReader, MemoryWriter

__all__ = ["DEFAULT_KEYS_FILE", "DEFAULT_TENANT", "Opened", "Remote", "SERVE_FILE", "TenantOrKey",
           "Where", "keys_path", "open_reader", "open_writer", "serving_address"]

#: The tenant of local commands when ``--tenant`` is not given.
DEFAULT_TENANT = "default"
#: Where ``memstrata serve`` records the address it listens on, in the data dir it holds.
SERVE_FILE = "serve.json"
#: The service's keys (and tenants' policies) file, in the data dir unless set.
DEFAULT_KEYS_FILE = "service-keys.json"

Remote = Annotated[Optional[str], typer.Option(
    "--remote", help="HOST:PORT of a memstrata service (MEMSTRATA_API_ADDRESS; key: "
                     "MEMSTRATA_API_KEY); default: the service holding the data dir, if one "
                     "runs.")]
TenantOrKey = Annotated[Optional[str], typer.Option(
    "--tenant", "-t", show_default=False,
    help="Tenant id (default: 'default'; through a service: the API key's tenant).")]


def keys_path(keys_file: Path | None, data_dir: Path | None) -> Path:
    """The keys file a command reads: ``--keys-file``, else MEMSTRATA_SERVICE_KEYS_FILE,
    else ``service-keys.json`` in the data dir.

    The setting is read from the ``service`` namespace by name: the core imports
    no service (the query service registers that namespace).
    """
    from memstrata.cli import _config

    if keys_file is not None:
        return keys_file
    config = _config(data_dir)
    configured = getattr(config.namespaces.get("service"), "keys_file", None)
    return Path(configured) if configured else config.settings.data_dir / DEFAULT_KEYS_FILE


def serving_address(data_dir: Path | None) -> str | None:
    """The address of a live ``memstrata serve`` holding this data dir, if any."""
    from memstrata.cli import _settings
    from memstrata.kafka import pid_alive

    path = _settings(data_dir).data_dir
    try:
        info = json.loads((path / SERVE_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not pid_alive(int(info.get("pid", 0))):
        return None
    return str(info.get("address")) or None


def client_settings() -> Any:
    """``MEMSTRATA_API_*`` from the command's one configuration load (a bad value exits 2,
    naming the variable)."""
    from memstrata.cli import _config
    from memstrata.client.settings import ClientSettings

    return _config().get(ClientSettings)


@dataclass(frozen=True)
class Where:
    """A command's ``--data-dir`` and ``--remote``: where its memory is."""

    data_dir: Path | None = None
    remote: str | None = None

    @functools.cached_property
    def address(self) -> str | None:
        """The service to go through, or None for the local data dir."""
        return self.remote or client_settings().address or serving_address(self.data_dir)


@dataclass
class Opened:
    """Memory opened for one command: local (``via`` None) or through a service."""

    reader: MemoryReader
    writer: MemoryWriter
    #: The service's HOST:PORT when remote.
    via: str | None = None
    client: MemoryClient | None = None
    #: The local memory (``via`` None): its settings and usage meter.
    host: HostedMemory | None = None

    def tenant(self, given: str | None) -> str:
        """``--tenant`` as given, else the API key's tenant (remote) or 'default' (local)."""
        if given is not None:
            return given
        return self.client.key_tenant() if self.client is not None else DEFAULT_TENANT

    def scope(self, tenant: str | None, user: str) -> Scope:
        from memstrata.cli import _scope

        return _scope(self.tenant(tenant), user)  # type: ignore[no-any-return]

    def answer(self, scope: Scope, question: str, asked_on: datetime | None,
               controller_settings: Any, without: list[str] | None) -> Answer:
        """The controller's answer: run here over local memory, by the service when remote."""
        if self.client is not None:
            return self.client.answer(scope, question, asked_on, without=without or ())
        from memstrata.controller.run import Controller

        if self.host is None:
            raise RuntimeError("no memory to answer from: opened neither locally nor remotely")
        return Controller.for_memory(self.host, controller_settings).answer(
            scope, question, asked_on)


def remote_failure(exc: Exception, address: str | None = None,
                   ca_file: Path | None = None) -> NoReturn:
    """A service's error status as one line and the matching exit status.

    A connection that failed (UNAVAILABLE naming the socket or the handshake) gets a
    second line when the address's TLS disagrees with ``MEMSTRATA_API_CA_FILE``.
    """
    import grpc

    from memstrata.cli import err

    err.print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
    code = getattr(exc, "code", None)
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        from memstrata.client.tls_hint import tls_hint, transport_failure

        if (address is not None and code == grpc.StatusCode.UNAVAILABLE
                and transport_failure(getattr(exc, "details", str(exc)))):
            hint = tls_hint(address, ca_file)
            if hint is not None:
                err.print(f"[yellow]hint: {escape(hint)}[/yellow]", soft_wrap=True)
        raise typer.Exit(Exit.UNREACHABLE) from None
    if code == grpc.StatusCode.NOT_FOUND or "NOT_FOUND" in str(exc):
        raise typer.Exit(Exit.FAILED) from None
    raise typer.Exit(Exit.USAGE) from None


@contextmanager
def _through(address: str) -> Iterator[Opened]:
    from memstrata.cli import err
    from memstrata.cli.remote_writer import RemoteWriter
    from memstrata.client import MemoryClient, RemoteError

    settings = client_settings()
    if settings.key is None:
        err.print(f"[red]{escape(address)} needs an API key: set MEMSTRATA_API_KEY "
                  "(`memstrata keys add TENANT` makes one)[/red]", soft_wrap=True)
        raise typer.Exit(Exit.USAGE)
    try:
        client = MemoryClient(address, settings=settings)
    except ValueError as exc:
        err.print(f"[red]--remote: {escape(str(exc))}[/red]")
        raise typer.Exit(Exit.USAGE) from None
    with client:
        try:
            yield Opened(reader=client, writer=RemoteWriter(client), via=address, client=client)
        except RemoteError as exc:
            remote_failure(exc, address, settings.ca_file)


@contextmanager
def _local(data_dir: Path | None, *, read_only: bool) -> Iterator[Opened]:
    from memstrata.cli import _open

    with _open(data_dir, read_only=read_only) as memory:
        yield Opened(reader=memory, writer=memory, host=memory)


def open_reader(where: Where) -> AbstractContextManager[Opened]:
    """Memory to read for one command (local read-only, or the service)."""
    address = where.address
    return _through(address) if address else _local(where.data_dir, read_only=True)


def open_writer(where: Where) -> AbstractContextManager[Opened]:
    """Memory to read and write for one command (local, or the service)."""
    address = where.address
    return _through(address) if address else _local(where.data_dir, read_only=False)
