"""The small parts behind operable processes (issue 16), without starting a service."""

from __future__ import annotations

import json
import logging
import os
import socket
from pathlib import Path

import pytest

from memstrata.cli.ingest_input import not_text, unusable_path


def test_binary_and_other_encodings_are_named_with_the_offset(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    assert "binary data, not a text file (a NUL byte at offset 3)" in str(
        not_text(path, b"abc\x00def"))
    assert "not UTF-8 text (byte 0xe9 at offset 3)" in str(
        not_text(path, "caf\u00e9!".encode("latin-1")))
    # A character cut by the end of the peek is not an error; plain UTF-8 passes.
    assert not_text(path, "ol\u00e1".encode()[:-1]) is None
    assert not_text(path, "ol\u00e1 \u2603".encode()) is None
    path.write_bytes(b'{"a": 1}\n' + bytes([0xff, 0xfe]) + b"\n")
    assert "not UTF-8 text (byte 0xff at offset 9)" in str(unusable_path(path))


def test_the_wait_empty_warning_is_a_count_not_kilobytes() -> None:
    from streams.worker import _ShortWaitEmpty

    shorten = _ShortWaitEmpty()
    waiting = [(1, "m" * 200)] * 40  # Faust lists (refcount, message) for each
    big = logging.LogRecord("faust.transport.consumer", logging.WARNING, __file__, 1,
                            "[^--Consumer]: wait_empty: Waiting for tasks %r", (waiting,), None)
    assert shorten.filter(big)
    assert big.getMessage() == "stopping: waiting for 40 events in progress to be stored"
    traces = logging.LogRecord("faust.transport.consumer", logging.INFO, __file__, 1,
                               "[^--Consumer]: Agent tracebacks:\n%s", ("...",), None)
    assert not shorten.filter(traces)
    other = logging.LogRecord("faust", logging.WARNING, __file__, 1, "something else", (), None)
    assert shorten.filter(other) and other.getMessage() == "something else"


def test_a_serve_marker_is_removed_only_by_its_writer(tmp_path: Path) -> None:
    from query_service.cli import ServeMarker

    path = tmp_path / "serve.json"
    path.write_text(json.dumps({"address": "127.0.0.1:1", "pid": os.getpid() + 1}))
    ServeMarker(path).remove()  # never wrote it: a refused serve
    assert path.exists()
    mine = ServeMarker(path)
    mine.write("127.0.0.1:2")
    assert json.loads(path.read_text()) == {"address": "127.0.0.1:2", "pid": os.getpid()}
    mine.remove()
    assert not path.exists()


def test_a_taken_port_is_named_as_in_use() -> None:
    from query_service.server import bind_problem

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        assert bind_problem("127.0.0.1", port) == "the port is in use by another process"
    assert bind_problem("127.0.0.1", port) == ""


def test_logs_off_a_terminal_are_plain_lines(capsys: pytest.CaptureFixture[str]) -> None:
    from memstrata.cli import err, setup_logging

    assert not err.is_terminal
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    try:
        setup_logging(logging.INFO)
        logging.getLogger("memstrata.test").warning("stopped: %d lost", 3)
        logged = capsys.readouterr().err
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
    assert logged.rstrip().endswith("WARNING memstrata.test: stopped: 3 lost")
    assert "\x1b[" not in logged
