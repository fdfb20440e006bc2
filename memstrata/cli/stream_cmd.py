"""``memstrata produce``, ``memstrata worker`` and ``memstrata up``: the streaming path.

The commands live in the ``streams`` service package (the ``kafka`` extra);
this module only parses options and imports it when a command runs, so the
core CLI works without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

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

from memstrata.cli import DataDir, _settings, app, console, err


def _stream_settings() -> tuple[Any, Any]:
    try:
        from pydantic import ValidationError

        from memstrata.config import register_namespace
        from streams.settings import KafkaSettings, StreamSettings
    except ImportError:
        err.print("[red]the streaming commands need the kafka extra: "
                  "pip install 'memstrata[kafka]'[/red]")
        raise typer.Exit(2) from None
    # Also declared as entry points; registering here covers a source checkout too.
    register_namespace(StreamSettings)
    register_namespace(KafkaSettings)
    try:
        return StreamSettings(), KafkaSettings()
    except ValidationError as exc:
        for e in exc.errors():
            loc = [str(p) for p in e.get("loc", ())]
            err.print(f"[red]{escape(', '.join(loc) or 'settings')}: {escape(e['msg'])}[/red]")
        raise typer.Exit(2) from None


def _brokers(kafka: Any, data_dir: Path, given: str | None) -> str:
    if given:
        return given
    try:
        return str(kafka.resolve_brokers(data_dir))
    except LookupError as exc:
        err.print(f"[red]{escape(str(exc))}[/red]")
        raise typer.Exit(2) from None


@app.command()
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
    """Publish a file of conversations as turn events (one event per message)."""
    import asyncio

    from memstrata.ingest.formats import FormatError

    _, kafka = _stream_settings()
    from streams.produce import produce_file

    if rate is not None and rate <= 0:
        err.print("[red]--rate must be positive[/red]")
        raise typer.Exit(2)
    address = _brokers(kafka, _settings(data_dir).data_dir, brokers)
    with Progress(TextColumn("[bold]produce[/bold]"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("messages"), TimeElapsedColumn(), TimeRemainingColumn(),
                  console=err) as bar:
        task = bar.add_task("produce", total=None)
        try:
            report = asyncio.run(produce_file(
                file, address, fmt=fmt, tenant_id=tenant, rate=rate, close=not no_close,
                progress=lambda n: bar.advance(task, n),
                on_total=lambda total: bar.update(task, total=total)))
        except FormatError as exc:
            err.print(f"[red]{escape(str(exc))}[/red]")
            raise typer.Exit(2) from None
        except Exception as exc:  # the broker is down or refuses: a usage problem here
            err.print(f"[red]cannot publish to {escape(address)}: {escape(str(exc))}[/red]")
            raise typer.Exit(1) from None
    for issue in report.issues[:max_issues]:
        err.print(f"[yellow]skipped[/yellow] {escape(str(issue))}", soft_wrap=True)
    console.print(
        f"{report.format}: {report.messages} messages in {report.sessions} sessions sent to "
        f"{address} ({report.rate:.0f} msg/s), {report.controls} close_session events, "
        f"{len(report.issues)} skipped records", soft_wrap=True)


def _run(data_dir: Path | None, embedded_broker: bool) -> None:
    import logging

    stream, kafka = _stream_settings()
    from streams.runtime import StreamRuntime

    settings = _settings(data_dir)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s")

    def ready(address: str) -> None:
        where = "embedded broker" if embedded_broker else "broker"
        console.print(f"memstrata stream worker: {where} at [bold]{address}[/bold], "
                      f"data in {settings.data_dir}", soft_wrap=True)
        if embedded_broker:
            console.print("  in another shell: memstrata produce FILE   (Ctrl-C here drains "
                          "the topics and stops)", soft_wrap=True)

    if not embedded_broker:
        kafka_brokers = _brokers(kafka, settings.data_dir, None)
        kafka = kafka.model_copy(update={"brokers": kafka_brokers})
    runtime = StreamRuntime(settings, stream=stream, kafka=kafka, on_ready=ready)
    try:
        runtime.run(embedded_broker=embedded_broker)
    except Exception as exc:  # stores locked, broker unreachable...
        err.print(f"[red]{escape(str(exc))}[/red]")
        raise typer.Exit(1) from None


@app.command()
def worker(data_dir: DataDir = None) -> None:
    """Run the stream worker against MEMSTRATA_KAFKA_BROKERS (stops on Ctrl-C or SIGTERM)."""
    _run(data_dir, embedded_broker=False)


@app.command()
def up(data_dir: DataDir = None) -> None:
    """Start an embedded broker and the stream worker over the embedded stores, in one process."""
    _run(data_dir, embedded_broker=True)
