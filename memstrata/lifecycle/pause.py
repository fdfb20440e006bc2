"""How a backup pauses the writes of the ``memstrata serve`` that holds a data dir.

The embedded stores admit one process, and only that process can make their
files stand still: it holds every write, flushes the stores, and keeps holding
while another process copies the files. ``serve`` offers this on a Unix socket
(:class:`PauseChannel`), named in ``<data dir>/pause.json`` beside the socket
file itself (0600 in the data dir: whoever may use it could read the files
anyway). One exchange of JSON lines per pause:

1. the client sends ``{"op": "pause", "max_s": N}``;
2. the server holds its writes (:meth:`~memstrata.memory.Memory.writes_paused`:
   the write lock, then a flush of every store) and answers ``{"paused": true}``;
3. the client copies, then sends ``{"op": "resume"}`` (or just goes away);
4. the server lets the writes go and answers ``{"resumed": true, "expired":
   false, "paused_s": ...}``.

A pause never outlasts ``max_s`` (capped by the server's own limit): the
server then lets the writes go on by itself and answers ``expired``, and the
client (:func:`pause_writes`) raises :class:`PauseExpired`, so a snapshot
taken after writes resumed is never called consistent.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memstrata.store.lock import pid_alive

if TYPE_CHECKING:
    from memstrata.roles import HostedMemory

__all__ = ["PAUSE_FILE", "PauseChannel", "PauseExpired", "PauseUnavailable", "pause_writes"]

log = logging.getLogger(__name__)

#: Where a serving process names its pause socket, in the data dir it holds.
PAUSE_FILE = "pause.json"
_SOCKET_NAME = "pause.sock"
#: The longest pause a server grants, whatever a client asks for.
MAX_PAUSE_S = 600.0
#: AF_UNIX paths longer than this do not fit (108 bytes with the final NUL on Linux).
_MAX_SOCKET_PATH = 100


class PausableMemory(Protocol):
    """What a pause needs of the served memory (a :class:`~memstrata.memory.Memory`)."""

    def writes_paused(self) -> contextlib.AbstractContextManager[None]: ...


class PauseUnavailable(RuntimeError):
    """No live process offers a pause for this data dir (or it refused)."""


class PauseExpired(RuntimeError):
    """The pause ended (its time was up) before the client said it was done."""


def _send(conn: socket.socket, message: dict[str, Any]) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


def _receive(reader: Any) -> dict[str, Any] | None:
    """The next JSON line, or None when the other end closed."""
    line = reader.readline()
    if not line:
        return None
    data = json.loads(line)
    return data if isinstance(data, dict) else None


class PauseChannel:
    """The serving side: a socket on which a backup asks this process to hold its writes."""

    def __init__(self, memory: PausableMemory, data_dir: Path, *,
                 max_pause_s: float = MAX_PAUSE_S) -> None:
        self.memory = memory
        self.data_dir = Path(data_dir)
        self.max_pause_s = max_pause_s
        self.path: Path | None = None
        self._tmp: Path | None = None
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()
        #: Pauses granted so far (tests and logs read it).
        self.pauses = 0

    def _socket_path(self) -> Path:
        path = self.data_dir / _SOCKET_NAME
        if len(str(path)) <= _MAX_SOCKET_PATH:
            return path
        # A deep data dir: the socket goes to a private folder of its own (named in pause.json).
        self._tmp = Path(tempfile.mkdtemp(prefix="memstrata-pause-"))
        return self._tmp / _SOCKET_NAME

    def start(self) -> PauseChannel:
        path = self._socket_path()
        path.unlink(missing_ok=True)  # a socket file a killed serve left behind
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(str(path))
        finally:
            os.umask(old)
        sock.listen(4)
        self._sock, self.path = sock, path
        marker = self.data_dir / PAUSE_FILE
        tmp = marker.with_name(f".{PAUSE_FILE}.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump({"socket": str(path), "pid": os.getpid()}, fh)
        tmp.replace(marker)
        self._thread = threading.Thread(target=self._accept, name="backup-pause", daemon=True)
        self._thread.start()
        return self

    def _accept(self) -> None:
        assert self._sock is not None
        while not self._closed.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:  # closed by close()
                return
            # One pause at a time: a second backup waits for the first to finish.
            with conn:
                try:
                    self._serve(conn)
                except (OSError, ValueError) as exc:
                    log.warning("backup pause: a client failed (%s: %s)", type(exc).__name__, exc)

    def _serve(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        conn.settimeout(30.0)
        asked = _receive(reader)
        if asked is None or asked.get("op") != "pause":
            _send(conn, {"paused": False, "error": "expected {\"op\": \"pause\"}"})
            return
        limit = min(float(asked.get("max_s") or self.max_pause_s), self.max_pause_s)
        started = time.monotonic()
        expired = False
        with self.memory.writes_paused():
            self.pauses += 1
            held = time.monotonic()
            log.info("backup pause: writes held (flushed in %.2f s), for at most %.0f s",
                     held - started, limit)
            _send(conn, {"paused": True, "pid": os.getpid(), "flush_s": held - started})
            conn.settimeout(max(0.01, limit - (time.monotonic() - held)))
            try:
                _receive(reader)  # "resume", or the client went away (None)
            except TimeoutError:
                expired = True
        paused_s = time.monotonic() - held
        log.info("backup pause: writes go on after %.2f s%s", paused_s,
                 " (the pause's time was up)" if expired else "")
        conn.settimeout(5.0)
        with contextlib.suppress(OSError):
            _send(conn, {"resumed": True, "expired": expired, "paused_s": paused_s})

    def close(self) -> None:
        self._closed.set()
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
            self._sock.close()
        marker = self.data_dir / PAUSE_FILE
        with contextlib.suppress(OSError, ValueError):
            if json.loads(marker.read_text()).get("pid") == os.getpid():
                marker.unlink()
        if self.path is not None:
            self.path.unlink(missing_ok=True)
        if self._tmp is not None:
            with contextlib.suppress(OSError):
                self._tmp.rmdir()

    def __enter__(self) -> PauseChannel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def channel_of(data_dir: Path) -> tuple[Path, int] | None:
    """The pause socket and pid of the live process serving ``data_dir``, if any."""
    try:
        info = json.loads((Path(data_dir) / PAUSE_FILE).read_text())
        path, pid = Path(info["socket"]), int(info["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return (path, pid) if pid_alive(pid) else None


@contextlib.contextmanager
def pause_writes(data_dir: Path, max_s: float, *,
                 flush_timeout_s: float = 600.0) -> Iterator[dict[str, Any]]:
    """Hold the writes of the process serving ``data_dir`` while the block runs.

    Yields what the server said (its pid, how long its flush took).
    :class:`PauseUnavailable` when no live process offers a pause;
    :class:`PauseExpired` after the block when the pause ran out first.
    """
    found = channel_of(data_dir)
    if found is None:
        raise PauseUnavailable(f"no running `memstrata serve` offers a write pause for "
                               f"{data_dir} (no live {PAUSE_FILE})")
    path, pid = found
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(flush_timeout_s)  # the server flushes every store before it answers
        try:
            conn.connect(str(path))
        except OSError as exc:
            raise PauseUnavailable(f"cannot reach the write pause of process {pid} at {path} "
                                   f"({exc.strerror or exc})") from None
        reader = conn.makefile("rb")
        _send(conn, {"op": "pause", "max_s": max_s})
        answer = _receive(reader)
        if not answer or not answer.get("paused"):
            raise PauseUnavailable(f"process {pid} did not pause its writes: "
                                   f"{(answer or {}).get('error', 'no answer')}")
        started = time.monotonic()
        yield {**answer, "pid": pid}
        with contextlib.suppress(OSError):  # an expired pause: the server has hung up
            _send(conn, {"op": "resume"})
        try:
            done = _receive(reader)
        except (OSError, ValueError):
            done = None
        if done is None:
            raise PauseExpired(f"process {pid} ended the write pause without saying how (it "
                               f"may have stopped) before the copy was done")
        if done.get("expired"):
            raise PauseExpired(f"the write pause ran out after {done.get('paused_s', 0):.1f} s "
                               f"(at most {max_s:g} s) before the copy was done "
                               f"({time.monotonic() - started:.1f} s)")
    finally:
        conn.close()


@contextlib.contextmanager
def offered(memory: HostedMemory) -> Iterator[PauseChannel | None]:
    """While the block runs, offer backups a write pause of ``memory`` (``serve`` wraps its
    service in it). Nothing is offered for a memory that is not wholly embedded (its stores
    have their own snapshots); a channel that cannot start is logged."""
    from memstrata.store.factory import embedded_backends

    settings = memory.settings
    if len(embedded_backends(settings)) < 3:
        yield None
        return
    channel = PauseChannel(memory, settings.data_dir)
    try:
        channel.start()
    except OSError as exc:
        log.warning("backups cannot pause this service's writes (%s); `memstrata backup` "
                    "will refuse while it runs", exc)
        yield None
        return
    try:
        yield channel
    finally:
        channel.close()
