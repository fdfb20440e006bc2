"""FakeSaslBroker: a TEST DOUBLE of a Kafka broker's login, over real sockets.

It speaks just enough of the Kafka protocol (ApiVersions, SaslHandshake,
SaslAuthenticate, with aiokafka's own encoders) to refuse every SASL login, so
tests can show what a client sees when a password is wrong. Optionally behind
TLS with a given certificate. The embedded broker (tansu) has neither TLS nor
SASL, and no Kafka with SASL can run here.
"""

from __future__ import annotations

import asyncio
import ssl
import struct
import threading
from typing import Any

from aiokafka.protocol.admin import (
    ApiVersionResponse_v0,
    ApiVersionResponse_v1,
    SaslAuthenticateResponse_v0,
    SaslAuthenticateResponse_v1,
    SaslHandShakeResponse_v0,
    SaslHandShakeResponse_v1,
)

SASL_AUTHENTICATION_FAILED = 58
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


class FakeSaslBroker:
    """Listens on 127.0.0.1; every login is refused with SaslAuthenticationFailed."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self.ssl_context = ssl_context
        self.port = 0
        self.logins: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.AbstractServer | None = None

    def __enter__(self) -> "FakeSaslBroker":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: Any) -> None:
        async def stop() -> None:
            assert self._server is not None
            self._server.close()
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0,
                                                  ssl=self.ssl_context)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
                api_key, version, correlation = struct.unpack(">hhi", frame[:8])
                body = self._reply(api_key, version, frame)
                if body is None:
                    break
                payload = struct.pack(">i", correlation) + body
                writer.write(struct.pack(">i", len(payload)) + payload)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    def _reply(self, api_key: int, version: int, frame: bytes) -> bytes | None:
        if api_key == 18:  # ApiVersions
            versions = [(18, 0, 2), (17, 0, 1), (36, 0, 1), (3, 0, 1)]
            cls = ApiVersionResponse_v0 if version == 0 else ApiVersionResponse_v1
            args: list[Any] = [0, versions] + ([] if version == 0 else [0])
            return bytes(cls(*args).encode())
        if api_key == 17:  # SaslHandshake
            cls = SaslHandShakeResponse_v0 if version == 0 else SaslHandShakeResponse_v1
            return bytes(cls(0, MECHANISMS).encode())
        if api_key == 36:  # SaslAuthenticate: whatever the credentials, refuse them
            self.logins.append(frame[8:].decode("latin-1"))
            msg = "Authentication failed: Invalid username or password"
            if version == 0:
                return bytes(SaslAuthenticateResponse_v0(
                    SASL_AUTHENTICATION_FAILED, msg, b"").encode())
            return bytes(SaslAuthenticateResponse_v1(
                SASL_AUTHENTICATION_FAILED, msg, b"", 0).encode())
        return None
