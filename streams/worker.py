"""Running the stream worker: a Faust worker that drains before it stops, and lag checks.

``group_lag`` reads the consumer group's committed offsets and the topics' end
offsets from the broker (:mod:`memstrata.kafka.offsets`, shared with the query
service), so anyone (``memstrata up`` on Ctrl-C, a test, an operator) can tell
whether everything produced so far is stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
import time
import warnings
from collections.abc import Sequence

import faust

from memstrata.config import defaults
from memstrata.kafka import KafkaSettings, offsets
from streams import topics
from streams.app import StreamApp
from streams.progress import abandon, within

__all__ = ["StreamWorker", "group_lag", "run_worker", "wait_drained"]

log = logging.getLogger("memstrata.stream")

def inputs(kafka: KafkaSettings) -> tuple[str, ...]:
    """The topics the worker reads: the configured turns topic and the control topic."""
    return (kafka.topic_turns, topics.CONTROL)


async def group_lag(brokers: str, group: str, topic_names: Sequence[str] | None = None, *,
                    kafka: KafkaSettings | None = None) -> dict[tuple[str, int], int]:
    """Records not yet committed by ``group``, per (topic, partition) (default: the inputs).

    ``kafka`` (TLS/SASL, the turns topic) defaults to the defaults, not the environment.
    """
    kafka = kafka or defaults(KafkaSettings)
    topic_names = inputs(kafka) if topic_names is None else topic_names
    return await offsets.group_lag(brokers, group, topic_names, kafka=kafka)


async def wait_drained(brokers: str, group: str, timeout_s: float,
                       topic_names: Sequence[str] | None = None, poll_s: float = 0.25, *,
                       kafka: KafkaSettings | None = None) -> bool:
    """Wait until ``group`` has committed every record of ``topic_names``, including
    records produced meanwhile; False on timeout."""
    kafka = kafka or defaults(KafkaSettings)
    topic_names = inputs(kafka) if topic_names is None else topic_names
    return await offsets.wait_committed(brokers, group, topic_names, timeout_s, poll_s=poll_s,
                                        follow=True, kafka=kafka)


#: After a second SIGINT/SIGTERM, the worker has this long to wind down before it exits hard.
STOP_NOW_S = 3.0
#: How long the lag check that counts what is left at stop may take.
COUNT_LEFT_S = 5.0

stop_log = logging.getLogger("memstrata.stream.worker")


class _ShortWaitEmpty(logging.Filter):
    """Faust's ``wait_empty`` warning lists every unacked message (kilobytes, every 10 s).

    Shortened to a count: the drain lines of :class:`StreamWorker` already
    say what stopping waits for; the agent tracebacks that follow are dropped.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        msg = str(record.msg)  # mode prefixes its services' lines: "[^--Consumer]: ..."
        if "wait_empty: Waiting for tasks" in msg:
            waiting = record.args[0] if isinstance(record.args, tuple) and record.args else ()
            record.msg = "stopping: waiting for %d events in progress to be stored"
            record.args = (len(waiting) if hasattr(waiting, "__len__") else 0,)
        return "Agent tracebacks:" not in msg


_SHORT_WAIT_EMPTY = _ShortWaitEmpty()
for _name in ("faust.transport.consumer", "faust.transport.drivers.aiokafka"):
    logging.getLogger(_name).addFilter(_SHORT_WAIT_EMPTY)


def _total(registry: object, name: str) -> int:
    """The sum of a counter's samples over all its labels (0 if absent)."""
    total = 0.0
    for metric in registry.collect():  # type: ignore[attr-defined]
        for sample in metric.samples:
            if sample.name == name:
                total += sample.value
    return int(total)


def _duration(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s" if m else f"{s}s"


def _left_text(left: dict[tuple[str, int], int], turns_topic: str) -> str:
    turns = sum(n for (t, _), n in left.items() if t == turns_topic)
    controls = sum(n for (t, _), n in left.items() if t == topics.CONTROL)
    return f"{turns} turn events and {controls} close/delete events"


def _drained(drain: "asyncio.Task[bool]") -> bool:
    """Whether the drain finished and found the topics drained. One cut short by a second
    signal is left to wind down on its own; one that failed is logged, never taken as
    drained."""
    if not drain.done():
        abandon(drain)
        return False
    if drain.cancelled():
        return False
    if (failed := drain.exception()) is not None:
        stop_log.warning("cannot tell whether the topics drained: %s", failed)
        return False
    return bool(drain.result())


class StreamWorker(faust.Worker):
    """A Faust worker that, on SIGINT/SIGTERM, first waits (bounded) for its topics to drain.

    ``drain_timeout_s = 0`` stops at once (what a worker of a shared group
    does: the partitions move to the others, uncommitted records are re-read).
    Past the timeout it stops without waiting for the events in hand, and says
    what is left and where: with a ``memory_only`` broker (the embedded tansu)
    those events are lost when the broker stops; with a real one they stay in
    the group's topics. A second SIGINT/SIGTERM stops at once (exit 130).
    Logging is left to the caller (no colour codes in a log file).
    """

    def __init__(self, stream_app: StreamApp, *, drain_timeout_s: float = 0.0,
                 memory_only: bool | None = None, **kwargs: object) -> None:
        kwargs.setdefault("override_logging", False)
        super().__init__(stream_app.app, **kwargs)  # type: ignore[arg-type]
        self.spinner = None  # Faust's start-up spinner writes cursor codes even into a log file
        self.stream_app = stream_app
        self.drain_timeout_s = drain_timeout_s
        self.memory_only = drain_timeout_s > 0 if memory_only is None else memory_only
        self.began = time.monotonic()
        #: What was not stored when the drain gave up, per (topic, partition); None: drained.
        self.left: dict[tuple[str, int], int] | None = None
        #: The drain gave up but the broker did not say how much was left.
        self.uncounted = False
        #: The drain finished: everything published before the stop was stored.
        self.drained = False
        self._drain: asyncio.Task[bool] | None = None
        self._forced_now: asyncio.Event | None = None
        #: A second signal stopped it without draining (the process exits 130).
        self.forced = False
        self._hard_exit: threading.Timer | None = None
        #: The stop the first signal started (drain, then stop); None before a signal.
        self._stopping: asyncio.Future[None] | None = None
        self._start_task: asyncio.Task[object] | None = None

    # Signals through mode's public hooks only: ``install_signal_handlers`` (called once
    # the worker starts), ``stop`` and ``stop_and_shutdown`` (streams.faust_compat lists them).
    def install_signal_handlers(self) -> None:
        super().install_signal_handlers()
        for sig in (signal.SIGINT, signal.SIGTERM):  # replaces mode's handler for these two
            self.loop.add_signal_handler(sig, self.on_stop_signal, sig)

    def on_stop_signal(self, sig: signal.Signals) -> None:
        """The first SIGINT/SIGTERM drains, then stops; a second one stops now."""
        if self._stopping is not None:
            self._stop_now(sig)
            return
        self._stopping = asyncio.ensure_future(self._drain_then_stop(sig), loop=self.loop)

    async def start(self) -> None:
        self._start_task = asyncio.current_task()
        await super().start()

    async def _drain_then_stop(self, sig: signal.Signals) -> None:
        if self.drain_timeout_s > 0:
            stop_log.info("stopping: waiting up to %.0fs for the topics to drain "
                          "(Ctrl-C again to stop now)", self.drain_timeout_s)
            self._drain = asyncio.ensure_future(wait_drained(
                self.stream_app.brokers, self.app.conf.id, self.drain_timeout_s,
                kafka=self.stream_app.kafka))
            # Not awaited directly: a cancelled drain closes its broker clients first,
            # which can outlast STOP_NOW_S; a second signal counts what is left at once.
            self._forced_now = asyncio.Event()
            forced = asyncio.ensure_future(self._forced_now.wait())
            await asyncio.wait({self._drain, forced}, return_when=asyncio.FIRST_COMPLETED)
            forced.cancel()
            self.drained = _drained(self._drain)
            if not self.drained:
                await self._give_up_draining()
        if not self.forced:
            await self._finish_in_hand()
        stop_log.info("signal received: %s, stopping", sig.name)
        await self.stop()
        task = self._start_task  # a signal during start-up: do not wait for it to finish
        if task is not None and not task.done():
            task.cancel()

    async def _finish_in_hand(self) -> None:
        """Store the batch in hand and build the held windows before leaving the group
        (:meth:`StreamApp.quiesce`), bounded; a second signal cuts it short."""
        limit = self.stream_app.stream.stop_finish_s
        if limit <= 0:
            return
        self._drain = asyncio.ensure_future(self.stream_app.quiesce(limit))
        with contextlib.suppress(asyncio.CancelledError):
            await self._drain

    def stop_and_shutdown(self) -> None:
        """Let a signalled stop (drain included) finish before the loop is wound down."""
        if self._stopping is not None and not self._stopping.done():
            self.loop.run_until_complete(self._stopping)
        super().stop_and_shutdown()

    async def _give_up_draining(self) -> None:
        """Stop without waiting for the events in hand; note what is left."""
        self._no_wait_empty()
        why = ("stopped by a second signal" if self.forced else
               f"not drained after {self.drain_timeout_s:.0f}s (MEMSTRATA_STREAM_DRAIN_TIMEOUT_S)")
        try:
            self.left = await within(
                group_lag(self.stream_app.brokers, self.app.conf.id,
                          kafka=self.stream_app.kafka),
                1.0 if self.forced else COUNT_LEFT_S)
        except Exception as exc:  # noqa: BLE001 - the broker is busy: say so, not "0"
            stop_log.debug("cannot count what is left: %s", exc)
            self.left, self.uncounted = {}, True
            what = "the events not yet stored (not counted: the broker did not answer in time)"
        else:
            what = _left_text(self.left, self.stream_app.kafka.topic_turns)
        where = ("they are lost when the embedded broker stops (it keeps topics in memory "
                 "only)" if self.memory_only else "they stay in the broker for the next worker")
        stop_log.warning("%s: %s are not stored; %s", why, what, where)

    def _no_wait_empty(self) -> None:
        """Stop without waiting for the streams' buffers (set once).

        Faust warns (AlreadyConfiguredWarning) on any change of a setting it has read,
        as this one was when the streams started; the change is meant (the streams read
        it again as they stop), so that warning is not printed.
        """
        if self.app.conf.stream_wait_empty:
            from faust.exceptions import AlreadyConfiguredWarning

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", AlreadyConfiguredWarning)
                self.app.conf.stream_wait_empty = False

    def _stop_now(self, sig: signal.Signals) -> None:
        """A second signal: stop draining; if winding down takes longer than STOP_NOW_S, exit."""
        if self._hard_exit is not None:
            self._exit_now()
        self.forced = True
        stop_log.warning("%s again: stopping now, without waiting for the topics to drain",
                         sig.name)
        self._no_wait_empty()
        if self._drain is not None and not self._drain.done():
            self._drain.cancel()
        if self._forced_now is not None:
            self._forced_now.set()
        self._hard_exit = threading.Timer(STOP_NOW_S, self._exit_now)
        self._hard_exit.daemon = True
        self._hard_exit.start()

    def _exit_now(self) -> None:
        stop_log.warning("stopped without draining: %s", self.hard_exit_summary())
        logging.shutdown()
        for hook in self.stream_app.on_fatal:  # stops the embedded broker
            try:
                hook()
            except Exception:  # noqa: BLE001
                pass
        os._exit(130)

    def cancel_hard_exit(self) -> None:
        if self._hard_exit is not None:
            self._hard_exit.cancel()

    def hard_exit_summary(self) -> str:
        """The summary when winding down outlasted STOP_NOW_S: the count of what was left
        may not have finished, and an uncounted stop never reads "nothing left"."""
        if self.left is None and not self.drained:
            self.uncounted = True
        return self.summary()

    def summary(self) -> str:
        """One line: how long it ran, what it stored, what it did not."""
        reg = self.stream_app.metrics.registry
        line = (f"ran {_duration(time.monotonic() - self.began)}; "
                f"{_total(reg, 'memstrata_stream_turns_indexed_total')} turns stored, "
                f"{_total(reg, 'memstrata_stream_control_applied_total')} close/delete applied, "
                f"{_total(reg, 'memstrata_stream_dlq_events_total')} events to the DLQ")
        if self.left and any(self.left.values()):
            # Counted when the drain stopped: a batch in hand then may still have been stored.
            fate = "lost (memory-only broker)" if self.memory_only else "left in the broker"
            line += f"; up to {_left_text(self.left, self.stream_app.kafka.topic_turns)} {fate}"
        elif self.uncounted:
            line += "; what was left unstored is not counted"
        elif self.drain_timeout_s > 0:
            line += "; nothing left unstored"
        return line


def run_worker(stream_app: StreamApp, *, drain_timeout_s: float = 0.0,
               loglevel: str = "warning", memory_only: bool | None = None) -> None:
    """Run until SIGINT/SIGTERM (blocks; raises SystemExit when done).

    Logs a one-line summary when it stops (uptime, turns stored, what is left).
    Handlers are the caller's (``logging.basicConfig``, the CLI's plain or rich
    lines); ``loglevel`` sets the level of the worker's and Faust's loggers.
    """
    level = logging.getLevelName(loglevel.upper())
    for name in ("faust", "mode", "memstrata.stream"):
        logging.getLogger(name).setLevel(level)
    # The consumer group's joins and assignments (aiokafka says them at INFO); its
    # DEBUG is every fetch, too much even for a debug run.
    logging.getLogger("aiokafka").setLevel(max(level, logging.INFO))
    if stop_log.level == logging.NOTSET:  # the start/stop lines are worth an INFO
        stop_log.setLevel(min(logging.INFO, level))
    worker = StreamWorker(stream_app, drain_timeout_s=drain_timeout_s, loglevel=loglevel,
                          memory_only=memory_only, quiet=True, redirect_stdouts=False)
    try:
        worker.execute_from_commandline()
    except SystemExit as exc:
        if worker.forced and exc.code in (0, None):
            raise SystemExit(130) from None  # stopped by a second signal, as Ctrl-C reads
        raise
    finally:
        worker.cancel_hard_exit()
        stop_log.info("stream worker stopped: %s", worker.summary())
