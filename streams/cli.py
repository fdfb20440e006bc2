"""``memstrata produce``, ``worker``, ``up`` and ``topics``: the streaming commands.

``memstrata`` finds :func:`register` and :func:`register_topics` through the
``memstrata.commands`` entry points, and :func:`serve_embedded` (``serve``'s
embedded broker and worker) through ``memstrata.hosts``: the core imports no
service. Loading this module imports nothing of the ``kafka`` extra; a command
does when it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from memstrata.cli import DataDir, _config, _settings, console, err
from memstrata.cli.exits import Exit

if TYPE_CHECKING:
    from memstrata.cli.plugins import HostedService
    from memstrata.config import Config


def _stream_settings(data_dir: Path | None = None) -> tuple[Any, Any]:
    """The stream worker's and Kafka's settings, from this command's loaded configuration."""
    try:
        from memstrata.kafka import KafkaSettings
        from streams.settings import StreamSettings
    except ImportError:
        err.print("[red]the streaming commands need the kafka extra: "
                  "pip install 'memstrata[kafka]'[/red]")
        raise typer.Exit(2) from None
    config = _config(data_dir)
    return config.get(StreamSettings), config.get(KafkaSettings)


def _turn_limits(config: Any, stream: Any = None) -> Any:
    """The ``MEMSTRATA_TURN_*`` limits, for the worker and the service alike.

    With the worker's ``stream`` settings, its byte limit must hold every event
    the limits accept (else the service could acknowledge what the worker drops).
    """
    from memstrata.limits import TurnLimits

    turns = config.get(TurnLimits)
    if stream is not None:
        from streams.settings import check_turns_fit

        try:
            check_turns_fit(stream, turns)
        except ValueError as exc:
            err.print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
            raise typer.Exit(2) from None
    return turns


def _resolved(kafka: Any, data_dir: Path, given: str | None) -> Any:
    """``kafka`` with its brokers: ``given``, the setting, or the recorded embedded broker
    (with that broker's per-start login)."""
    if given:
        return kafka.model_copy(update={"brokers": given})
    try:
        return kafka.resolve(data_dir)
    except LookupError as exc:
        err.print(f"[red]{escape(str(exc))}[/red]")
        raise typer.Exit(2) from None
    except (OSError, ValueError) as exc:
        err.print(f"[red]cannot read the embedded broker's login: {escape(str(exc))}[/red]",
                  soft_wrap=True)
        raise typer.Exit(2) from None


def produce(
    file: Annotated[Path, typer.Argument(help="LoCoMo JSON, LongMemEval JSON or JSONL turns.")],
    fmt: Annotated[str, typer.Option("--format", "-f",
                                     help="auto, locomo, longmemeval or jsonl.")] = "auto",
    tenant: Annotated[str, typer.Option("--tenant", "-t",
                                        help="Tenant for LoCoMo/LongMemEval files.")] = "default",
    rate: Annotated[Optional[float], typer.Option(
        help="Messages per second (default: as fast as the broker takes them).")] = None,
    no_close: Annotated[bool, typer.Option(
        "--no-close", help="Do not end sessions with close_session (replay live traffic).")] = False,
    brokers: Annotated[Optional[str], typer.Option(
        help="host:port of the broker (default: MEMSTRATA_KAFKA_BROKERS, "
             "else the one `memstrata up` runs).")] = None,
    data_dir: DataDir = None,
    max_issues: Annotated[int, typer.Option(help="How many skipped records to list.")] = 20,
) -> None:
    """Publish a file of conversations as turn events (one event per message).

    Ctrl-C stops it: it says how many messages the broker took and closes the
    sessions that were sent whole (exit 130).
    """
    import asyncio
    import logging

    from memstrata.cli import setup_logging
    from memstrata.cli.ingest_input import undecodable, unusable_path
    from memstrata.ingest.formats import FormatError

    _, kafka = _stream_settings(data_dir)
    from streams.produce import ProduceReport, produce_file

    if rate is not None and rate <= 0:
        err.print("[red]--rate must be positive[/red]")
        raise typer.Exit(Exit.USAGE)
    if (why := unusable_path(file)) is not None:
        err.print(f"[red]{escape(why.replace('nothing to ingest', 'nothing to produce'))}[/red]",
                  soft_wrap=True)
        raise typer.Exit(Exit.USAGE)
    kafka = _resolved(kafka, _settings(data_dir).data_dir, brokers)
    address = str(kafka.brokers)
    report = ProduceReport()
    setup_logging(logging.WARNING)
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # a failure is reported below
    # Transient: the lines below say what was sent; a bar left behind was stale.
    with Progress(TextColumn("[bold]produce[/bold]"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("messages"), TimeElapsedColumn(), TimeRemainingColumn(),
                  console=err, transient=True) as bar:
        task = bar.add_task("produce", total=None)
        try:
            asyncio.run(produce_file(
                file, address, fmt=fmt, tenant_id=tenant, rate=rate, close=not no_close,
                progress=lambda n: bar.advance(task, n),
                on_total=lambda total: bar.update(task, total=total), report=report,
                kafka=kafka))
        except FormatError as exc:
            err.print(f"[red]{escape(str(exc))}[/red]")
            raise typer.Exit(Exit.USAGE) from None
        except UnicodeDecodeError as exc:
            err.print(f"[red]{escape(undecodable(file, exc))}[/red]", soft_wrap=True)
            raise typer.Exit(Exit.USAGE) from None
        except KeyboardInterrupt:  # a second Ctrl-C: no more waiting for acks or closes
            report.interrupted = True
        except Exception as exc:  # noqa: BLE001 - the broker is down or refuses
            code, why = _broker_failure(exc)
            err.print(f"[red]cannot publish to {escape(address)}: {escape(why)}[/red]",
                      soft_wrap=True)
            raise typer.Exit(code) from None
        finally:
            bar.update(task, completed=report.messages)
    for issue in report.issues[:max_issues]:
        err.print(f"[yellow]skipped[/yellow] {escape(str(issue))}", soft_wrap=True)
    if report.interrupted:
        closes = ("" if no_close else
                  f"; {report.controls} of them closed (close_session sent)")
        err.print(
            f"[yellow]interrupted:[/yellow] {report.messages} of {report.total} messages sent to "
            f"{escape(address)} (acknowledged by the broker); {report.finished} of "
            f"{report.sessions} sessions sent whole{closes}. Running the same command again "
            f"sends everything again: the worker skips messages it already stored (same "
            f"message ids).", soft_wrap=True)
        raise typer.Exit(Exit.INTERRUPTED)
    console.print(
        f"{report.format}: {report.messages} messages in {report.sessions} sessions sent to "
        f"{address} ({report.rate:.0f} msg/s), {report.controls} close_session events, "
        f"{len(report.issues)} skipped records", soft_wrap=True)


def _broker_failure(exc: BaseException) -> tuple[int, str]:
    """The exit status and one line for a failed publish: unreachable (4) or failed (1)."""
    from aiokafka.errors import KafkaConnectionError, KafkaTimeoutError

    text = str(exc) or type(exc).__name__
    if isinstance(exc, (KafkaConnectionError, KafkaTimeoutError, OSError)):
        return Exit.UNREACHABLE, (
            f"the broker cannot be reached ({text}); is `memstrata up` running? "
            f"(or pass --brokers / set MEMSTRATA_KAFKA_BROKERS)")
    return Exit.FAILED, f"{type(exc).__name__}: {text}"


def _run(data_dir: Path | None, embedded_broker: bool) -> None:
    import logging

    from memstrata.cli import setup_logging
    from memstrata.cli.locked import exit_locked
    from memstrata import process_memory
    from memstrata.roles import DataDirLocked

    stream, kafka = _stream_settings(data_dir)
    from streams.broker import BrokerError
    from streams.runtime import StreamRuntime

    settings = _settings(data_dir)
    process_memory.apply(settings)
    setup_logging(stream.log_level.upper())
    logging.getLogger("memstrata.stream.worker").setLevel(
        min(logging.INFO, logging.getLevelName(stream.log_level.upper())))

    def ready(address: str) -> None:
        where = "embedded broker" if embedded_broker else "broker"
        console.print(f"memstrata stream worker: {where} at [bold]{address}[/bold], "
                      f"data in {settings.data_dir}", soft_wrap=True)
        if embedded_broker:
            console.print(f"  in another shell: memstrata produce FILE   (Ctrl-C here drains "
                          f"the topics for up to {stream.drain_timeout_s:.0f}s, then stops; "
                          f"Ctrl-C twice stops now)", soft_wrap=True)

    if not embedded_broker:
        kafka = _resolved(kafka, settings.data_dir, None)
    runtime = StreamRuntime(settings, stream=stream, kafka=kafka, on_ready=ready,
                            turns=_turn_limits(_config(data_dir), stream))
    try:
        runtime.run(embedded_broker=embedded_broker)
    except DataDirLocked as exc:
        exit_locked(exc)
    except Exception as exc:  # noqa: BLE001 - broker unreachable, failed to start...
        err.print(f"[red]{escape(str(exc) or type(exc).__name__)}[/red]", soft_wrap=True)
        unreachable = not embedded_broker and (
            isinstance(exc, BrokerError) or _broker_failure(exc)[0] == Exit.UNREACHABLE)
        raise typer.Exit(Exit.UNREACHABLE if unreachable else Exit.FAILED) from None


def worker(data_dir: DataDir = None) -> None:
    """Run the stream worker against MEMSTRATA_KAFKA_BROKERS (stops on Ctrl-C or SIGTERM).

    What it has not stored stays in the broker for the group; a second Ctrl-C stops at once.
    """
    _run(data_dir, embedded_broker=False)


def up(data_dir: DataDir = None) -> None:
    """Start an embedded broker and the stream worker over the embedded stores, in one process.

    Ctrl-C or SIGTERM waits for the topics to drain (at most
    MEMSTRATA_STREAM_DRAIN_TIMEOUT_S), then stops and says what was not stored (the
    embedded broker keeps topics in memory only: that is lost). A second Ctrl-C stops now.
    """
    _run(data_dir, embedded_broker=True)


def serve_embedded(config: Config, service: HostedService) -> None:
    """Broker, stream worker and ``service`` in one process over one Memory (``serve``)."""
    import signal

    from memstrata.cli.locked import exit_locked
    from memstrata.cli.plugins import Hosted
    from memstrata.kafka import KafkaSettings
    from memstrata.roles import DataDirLocked, HostedMemory
    from streams.metrics import StreamMetrics
    from streams.runtime import StreamRuntime
    from streams.settings import StreamSettings

    settings = config.settings
    stream_settings, kafka = config.get(StreamSettings), config.get(KafkaSettings)
    turns = _turn_limits(config, stream_settings)  # one instance: Ingest and the worker agree
    brokers: list[str] = []
    failed: list[Exception] = []

    def ready(address: str) -> None:
        brokers.append(address)

    stream_metrics = StreamMetrics.create()  # served on --metrics-port with the service's

    async def hosted(memory: HostedMemory) -> None:
        try:
            await service(Hosted(memory=memory, kafka=runtime.kafka, stored=runtime.stored,
                                 turns=turns, registry=stream_metrics.registry,
                                 broker=brokers[-1]))
        except Exception as exc:  # noqa: BLE001 - e.g. the port taken after the check
            # Stop the worker too, and report it below as one line (an error in a Faust
            # task would end in "We experienced a crash!" and a traceback).
            failed.append(exc)
            signal.raise_signal(signal.SIGTERM)

    runtime = StreamRuntime(settings, stream=stream_settings, kafka=kafka,
                            services=[hosted], on_ready=ready, metrics=stream_metrics,
                            turns=turns)
    try:
        runtime.run(embedded_broker=True)
    except DataDirLocked as exc:
        exit_locked(exc)
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 - the broker failed to start...
        err.print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
        raise typer.Exit(Exit.FAILED) from None
    if failed:
        if isinstance(failed[0], OSError):  # BindError included: serve words it
            raise failed[0]
        err.print(f"[red]cannot serve: {escape(str(failed[0]) or type(failed[0]).__name__)}"
                  f"[/red]", soft_wrap=True)
        raise typer.Exit(Exit.FAILED)


def register(app: typer.Typer) -> None:
    """``memstrata produce``, ``worker`` and ``up`` (entry point ``memstrata.commands``)."""
    for command in (produce, worker, up):
        app.command()(command)


def register_topics(app: typer.Typer) -> None:
    """``memstrata topics create|check`` (entry point ``memstrata.commands``)."""
    from streams.topics_cli import topics_app

    app.add_typer(topics_app, name="topics")
