"""Commands and hosts the services add to the CLI, found by name, never imported here.

The core imports no service (``[tool.importlinter]``). A service package adds
its commands by naming a ``register(app)`` function in its ``pyproject.toml``::

    [project.entry-points."memstrata.commands"]
    stream = "streams.cli:register"

``memstrata`` calls each one as it starts, in the order :data:`COMMAND_ORDER`
gives (that order is the one ``memstrata --help`` lists); any other name comes
last. A host one service offers another (``serve --stream`` runs the service
inside the stream worker's process) is found the same way in :data:`HOST_GROUP`.
Entry points are package metadata: a checkout sees a new one once reinstalled
(``pip install -e .``).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Protocol, cast

import typer

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from memstrata.config import Config
    from memstrata.kafka import KafkaSettings
    from memstrata.limits import TurnLimits
    from memstrata.roles import HostedMemory

#: Entry-point group of command registrations (``register(app)``).
COMMAND_GROUP = "memstrata.commands"
#: Entry-point group of hosts one service offers another.
HOST_GROUP = "memstrata.hosts"
#: Where each service's commands go among the core's (see ``_register_subcommands``).
COMMAND_ORDER = ("stream", "serve", "workers", "topics")


class RegisterCommands(Protocol):
    """``register(app)``: adds a service's commands and groups to the ``memstrata`` app."""

    def __call__(self, app: typer.Typer) -> None:
        ...


@functools.lru_cache(maxsize=1)
def _commands() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=COMMAND_GROUP)}


def register_commands(app: typer.Typer, name: str, done: set[str]) -> None:
    """Call the ``register`` a service installed as ``name`` (nothing if none is)."""
    ep = _commands().get(name)
    if ep is None or name in done:
        return
    done.add(name)
    register = cast(RegisterCommands, ep.load())
    register(app)


def register_the_rest(app: typer.Typer, done: set[str]) -> None:
    """Every installed registration not yet called, by name."""
    for name in sorted(_commands()):
        register_commands(app, name, done)


@dataclass(frozen=True)
class Hosted:
    """What the stream worker's process gives a service it hosts (``serve --stream``)."""

    memory: HostedMemory
    #: The embedded broker's settings (its address and per-start login).
    kafka: KafkaSettings
    #: What the worker has stored (``streams.runtime.StoredTurns``; the query service
    #: reads it as its ``StoredOffsets``): Ingest answers once its turns are stored.
    stored: object
    #: The turn limits the worker applies (one instance: the service accepts the same).
    turns: TurnLimits
    #: The worker's metrics, to be served on the service's metrics port.
    registry: CollectorRegistry
    #: The embedded broker's address, for the service's start line.
    broker: str


class HostedService(Protocol):
    """The service a host runs beside the stream worker, over the worker's memory."""

    def __call__(self, hosted: Hosted) -> Awaitable[None]:
        ...


class EmbeddedStreamHost(Protocol):
    """``embedded_stream``: broker, stream worker and ``service`` in one process.

    Exits through ``typer.Exit`` on a failure it words; an ``OSError`` of the
    service (a port taken) is raised again for the command to word.
    """

    def __call__(self, config: Config, service: HostedService) -> None:
        ...


def find_host(name: str) -> EmbeddedStreamHost:
    """The host a service installed as ``name`` in :data:`HOST_GROUP`.

    Raises :class:`LookupError` saying what to install when none is.
    """
    for ep in entry_points(group=HOST_GROUP):
        if ep.name == name:
            return cast(EmbeddedStreamHost, ep.load())
    raise LookupError(f"no host {name!r} is installed: the streaming commands need the kafka "
                      f"extra: pip install 'memstrata[kafka]'")
