"""``memstrata topics create|check``: every Kafka topic the service uses, as configured.

The names come from the stream worker (turns, control, l0, DLQ) and from Faust,
which derives its table changelog and leader topics from the consumer group
(``MEMSTRATA_KAFKA_GROUP``); partitions, replication and retention come from
``MEMSTRATA_KAFKA_*``. The broker work is :mod:`memstrata.kafka.topics_admin`.

Exit status: 0 every topic as configured; 1 drift (a topic missing, or with
another partition count, replication or retention); 2 bad settings; 4 the
brokers cannot be reached or refused our TLS/SASL settings. ``memstrata`` adds
the group through :func:`streams.cli.register_topics` (a ``memstrata.commands``
entry point).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.markup import escape

from memstrata.cli import DataDir, _config, console, err
from memstrata.cli.exits import Exit

#: The stream worker's one Faust table (``streams.app``: ``SessionTable(name="sessions")``);
#: tests/integration/streams/test_topics_admin.py keeps the two equal.
SESSIONS_TABLE = "sessions"

topics_app = typer.Typer(no_args_is_help=True, help=(
    "Create or check the Kafka topics (turns, control, l0, DLQ, Faust's changelog and "
    "leader topics) with MEMSTRATA_KAFKA_PARTITIONS, _REPLICATION and _RETENTION_HOURS. "
    "Exit 0: as configured; 1: drift; 2: bad settings; 4: brokers unreachable."))

Brokers = Annotated[Optional[str], typer.Option(
    "--brokers", help="host:port[,host:port] (default: MEMSTRATA_KAFKA_BROKERS, else the "
                      "broker `memstrata up` recorded in the data dir).")]


def faust_topics(group: str) -> tuple[list[str], str]:
    """Faust's table changelogs and its leader topic for the app id ``group``."""
    return [f"{group}-{SESSIONS_TABLE}-changelog"], f"{group}-__assignor-__leader"


def plans_for(kafka: Any) -> list[Any]:
    """Every topic the service uses, planned from ``kafka`` (the worker's names)."""
    from memstrata.kafka.topics_admin import plan_topics
    from streams import topics

    changelogs, leader = faust_topics(kafka.group)
    others = [n for n in topics.ALL if n != topics.TURNS]  # any topic the worker adds
    return plan_topics(kafka, control=topics.CONTROL, l0=topics.L0, dlq=topics.DLQ,
                       changelogs=changelogs, leader=leader, others=others)


def _kafka(data_dir: Path | None, brokers: str | None) -> Any:
    try:
        from memstrata.kafka import KafkaSettings
    except ImportError:  # pragma: no cover - the kafka extra is missing
        err.print("[red]the topics commands need the kafka extra: "
                  "pip install 'memstrata[kafka]'[/red]")
        raise typer.Exit(Exit.USAGE) from None
    config = _config(data_dir)
    kafka = config.get(KafkaSettings)
    if brokers:
        return kafka.model_copy(update={"brokers": brokers})
    try:
        return kafka.resolve(config.settings.data_dir)
    except LookupError as exc:
        err.print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
        raise typer.Exit(Exit.USAGE) from None


def _run(data_dir: Path | None, brokers: str | None, create: bool) -> None:
    from memstrata.kafka.security import KafkaSecurityError
    from memstrata.kafka.topics_admin import apply_topics, check_topics

    kafka = _kafka(data_dir, brokers)
    plans = plans_for(kafka)
    try:
        report = asyncio.run((apply_topics if create else check_topics)(kafka, plans))
    except KafkaSecurityError as exc:
        err.print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
        raise typer.Exit(Exit.UNREACHABLE) from None
    except Exception as exc:  # noqa: BLE001 - aiokafka's connection errors vary by version
        name = type(exc).__name__
        unreachable = "Connection" in name or "Timeout" in name or isinstance(exc, OSError)
        what = (f"cannot reach the brokers at {kafka.brokers}" if unreachable
                else f"topics {'create' if create else 'check'} failed")
        err.print(f"[red]{escape(what)}: {escape(name)}: {escape(str(exc))}[/red]",
                  soft_wrap=True)
        raise typer.Exit(Exit.UNREACHABLE if unreachable else Exit.FAILED) from None
    bad = {d.topic for d in report.drift}
    for t in plans:
        state = "created" if t.name in report.created else ("drift" if t.name in bad else "ok")
        retention = t.configs.get("retention.ms")
        extra = f" retention={int(retention) // 3_600_000}h" if retention else ""
        if t.configs.get("cleanup.policy") == "compact":
            extra = " compacted"
        console.print(f"{state:8} {t.role:9} {escape(t.name)}  partitions={t.partitions} "
                      f"replication={t.replication}{extra}", soft_wrap=True, highlight=False)
    for d in report.drift:
        err.print(f"drift: {escape(d.line())}", soft_wrap=True, highlight=False)
    if not report.ok:
        raise typer.Exit(Exit.FAILED)


@topics_app.command()
def create(brokers: Brokers = None, data_dir: DataDir = None) -> None:
    """Create the missing topics; existing ones are checked, never altered."""
    _run(data_dir, brokers, create=True)


@topics_app.command()
def check(brokers: Brokers = None, data_dir: DataDir = None) -> None:
    """Report topics that are missing or differ from the settings (changes nothing)."""
    _run(data_dir, brokers, create=False)

