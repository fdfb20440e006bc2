"""FakeOpenAIServer: a TEST DOUBLE of an OpenAI-compatible HTTP API.

A real HTTP server on 127.0.0.1 (stdlib ``http.server`` in a thread) that
speaks enough of the chat-completions and embeddings protocol for the real
``openai`` SDK to talk to it. Tests script the replies per endpoint and then
inspect the requests the client actually sent, so request shapes, retries and
error handling are exercised over a real socket instead of mocks.

    with FakeOpenAIServer() as server:
        server.queue_error(server.CHAT, 429)
        server.queue_json({"answer": 42}, prompt_tokens=30)
        ...  # point the client at server.base_url
        body = server.requests(server.CHAT)[-1].body
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


@dataclass
class Reply:
    """One scripted HTTP response; a dict ``body`` is sent as JSON, a str as is."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    #: Wait this long before answering (to provoke client timeouts).
    delay_s: float = 0.0


#: A fixed reply, or a function of the decoded request body.
Responder = Reply | Callable[[dict[str, Any]], Reply]


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    #: Header names lower-cased (HTTP headers are case-insensitive).
    headers: dict[str, str]
    body: dict[str, Any]


def fake_vector(text: str, dim: int) -> list[float]:
    """Deterministic, deliberately un-normalised vector for ``text``."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    values: list[float] = (np.random.default_rng(seed).normal(size=dim) * 3.0).tolist()
    return values


def chat_body(content: str | None = None, *, tool_calls: list[dict[str, Any]] | None = None,
              prompt_tokens: int = 10, completion_tokens: int = 5, model: str = "fake-model",
              finish_reason: str | None = None) -> dict[str, Any]:
    """A ``chat.completion`` object as the API returns it."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop")}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def tool_call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


def error_body(status: int, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "fake_error", "param": None,
                      "code": str(status)}}


class FakeOpenAIServer:
    """Scripted OpenAI-compatible server (test double; see the module docstring).

    Each endpoint has a FIFO of :data:`Responder` s. When it is empty the
    endpoint's fallback answers: chat replies 418 (a 4xx the client does not
    retry, so a missing script fails fast); embeddings return
    :func:`fake_vector` of each input. ``reverse_embeddings`` returns the
    embedding rows in reverse order, as a server is allowed to.
    """

    CHAT = "/v1/chat/completions"
    EMBEDDINGS = "/v1/embeddings"

    def __init__(self, *, embed_dim: int = 8, reverse_embeddings: bool = False) -> None:
        self.embed_dim = embed_dim
        self.reverse_embeddings = reverse_embeddings
        self._lock = threading.Lock()
        self._queues: dict[str, deque[Responder]] = defaultdict(deque)
        self._fallbacks: dict[str, Responder] = {
            self.CHAT: Reply(418, error_body(418, "FakeOpenAIServer: no scripted chat reply")),
            self.EMBEDDINGS: self._embeddings_reply,
        }
        self._requests: list[RecordedRequest] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = {"_raw": raw.decode(errors="replace")}
                headers = {k.lower(): v for k, v in self.headers.items()}
                reply = server._handle(self.path, headers, body)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                payload = (reply.body if isinstance(reply.body, str)
                           else json.dumps(reply.body)).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                        daemon=True, name="FakeOpenAIServer")
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # -- scripting -------------------------------------------------------------

    def queue(self, path: str, *responders: Responder) -> None:
        with self._lock:
            self._queues[path].extend(responders)

    def set_fallback(self, path: str, responder: Responder) -> None:
        with self._lock:
            self._fallbacks[path] = responder

    def queue_chat(self, content: str | None = None, **kwargs: Any) -> None:
        """Queue a successful completion (see :func:`chat_body` for the options)."""
        self.queue(self.CHAT, Reply(200, chat_body(content, **kwargs)))

    def queue_json(self, obj: Any, **kwargs: Any) -> None:
        self.queue_chat(json.dumps(obj), **kwargs)

    def queue_tool_call(self, name: str, arguments: dict[str, Any], **kwargs: Any) -> None:
        self.queue_chat(None, tool_calls=[tool_call(name, arguments)], **kwargs)

    def queue_error(self, path: str, status: int, message: str = "scripted failure",
                    headers: dict[str, str] | None = None) -> None:
        self.queue(path, Reply(status, error_body(status, message), headers or {}))

    def pending(self, path: str) -> int:
        with self._lock:
            return len(self._queues[path])

    # -- inspection ----------------------------------------------------------------

    def requests(self, path: str | None = None) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self._requests if path is None or r.path == path]

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    # -- internals ---------------------------------------------------------------------

    def _handle(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Reply:
        with self._lock:
            self._requests.append(RecordedRequest(path, headers, body))
            queue = self._queues[path]
            responder = queue.popleft() if queue else self._fallbacks.get(path)
        if responder is None:
            return Reply(404, error_body(404, f"FakeOpenAIServer: no route {path}"))
        return responder(body) if callable(responder) else responder

    def _embeddings_reply(self, body: dict[str, Any]) -> Reply:
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        dim = int(body.get("dimensions") or self.embed_dim)
        rows = [{"object": "embedding", "index": i, "embedding": fake_vector(t, dim)}
                for i, t in enumerate(texts)]
        if self.reverse_embeddings:
            rows.reverse()
        return Reply(200, {"object": "list", "data": rows, "model": body.get("model"),
                           "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)}})
