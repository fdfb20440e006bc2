"""API keys: which tenant a key belongs to, and what that tenant may spend.

The keys file (JSON, ``MEMSTRATA_SERVICE_KEYS_FILE``) holds only SHA-256 hashes
of keys, never a key. A key reads ``msk_<id>_<secret>``: the id finds the
entry, the hash of the whole key is compared in constant time. The secret is
32 random bytes, so a fast hash is enough (nothing to brute-force). The file is
re-read when it changes on disk, so ``memstrata keys add`` and revocations take
effect without a restart. A file that goes bad while the service runs (a
half-saved hand edit) does not take the service down: :class:`KeyRing` keeps
the last good keys, logs one error naming the file and the problem (never its
content) and reads the file again when it changes.

The commands that change the file (:func:`add_key`, :func:`revoke_key`,
:func:`set_tenant_policy`) read, change and write it under an exclusive lock on
a sibling file (``.<name>.lock``), so concurrent commands never undo each other,
and replace it atomically (a 0600 temporary file renamed over it), so a reader
sees the old file or the new one, never half of one.

File layout::

    {"keys": {"<id>": {"tenant": "acme", "sha256": "...", "created": "...",
                       "revoked": false, "scopes": ["read", "write"],
                       "user": "maya", "tenants": ["globex"]}},
     "tenants": {"acme": {"rate_per_s": 50, "burst": 100, "max_concurrent": 8,
                          "daily_tokens": 200000, "daily_usd": 2.5,
                          "on_budget_exhausted": "offline", "weight": 2}}}

``weight`` is the tenant's share of the read and answer pools when tenants
compete (weighted fair queuing, ``query_service.scheduler``; default 1): a
tenant of weight 2 gets about twice the pool time of a tenant of weight 1
while both have calls waiting. It belongs to the tenant, not to one of its
keys, so minting more keys never buys a larger share.

``scopes`` says what a key may do (:data:`SCOPES`; which RPC needs which:
``query_service.scopes``); a key without the field (every key written before
scopes existed) has :data:`DEFAULT_SCOPES`, so old files keep working as they
did. ``user``, when set, binds the key to that one user. ``tenants`` names the
other tenants a platform key may act for (an ingest pipeline serving several):
a call picks one with its ``x-memstrata-tenant`` header; any other tenant is
refused.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import logging
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from memstrata.lifecycle.retention import RetentionPolicy
from memstrata.model import Identifier

PREFIX = "msk"
#: How long a keys command waits for another one to finish with the file.
LOCK_WAIT_S = 30.0

log = logging.getLogger(__name__)

ScopeName = Literal["read", "write", "delete", "admin"]
#: Every scope, in the order they are shown.
SCOPES: tuple[ScopeName, ...] = ("read", "write", "delete", "admin")
#: A key's scopes when it names none: what every key could do before scopes existed.
DEFAULT_SCOPES: tuple[ScopeName, ...] = ("read", "write", "delete")


@dataclass(frozen=True)
class Grant:
    """What one valid key may do: the tenants it acts for, its scopes, its bound user."""

    key_id: str
    #: The key's own tenant: the call's tenant when the call names none.
    tenant: str
    #: Every tenant the key may act for, its own included.
    tenants: frozenset[str]
    scopes: frozenset[str]
    #: Set: the key acts for this user only.
    user: str | None = None

    def shown_scopes(self) -> list[str]:
        return [s for s in SCOPES if s in self.scopes]


class KeyEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tenant: Identifier
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    created: str | None = None
    revoked: bool = False
    #: None (a key written before scopes existed): :data:`DEFAULT_SCOPES`.
    scopes: list[ScopeName] | None = Field(None, min_length=1)
    #: Set: the key acts for this one user only.
    user: Identifier | None = None
    #: Other tenants a platform key may act for (picked per call by the tenant header).
    tenants: list[Identifier] | None = None

    @field_validator("scopes", "tenants")
    @classmethod
    def _no_repeats(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError("names a value twice")
        return value

    def grant(self, key_id: str) -> Grant:
        scopes = self.scopes if self.scopes is not None else DEFAULT_SCOPES
        return Grant(key_id=key_id, tenant=self.tenant,
                     tenants=frozenset({self.tenant, *(self.tenants or ())}),
                     scopes=frozenset(scopes), user=self.user)

    def shown_scopes(self) -> list[str]:
        return self.grant("").shown_scopes()


def parse_scopes(text: str, field: str = "scopes") -> list[ScopeName]:
    """``read,write`` -> ["read", "write"]; a clear error naming ``field`` otherwise."""
    names = [s.strip().lower() for s in text.split(",") if s.strip()]
    if not names:
        raise ValueError(f"{field}: name at least one of {', '.join(SCOPES)}")
    unknown = [n for n in names if n not in SCOPES]
    if unknown:
        raise ValueError(f"{field}: unknown scope {unknown[0]!r}; the scopes are "
                         f"{', '.join(SCOPES)}")
    return [s for s in SCOPES if s in names]


class TenantPolicy(BaseModel):
    """Per-tenant overrides of the service's default limits; None: the default."""

    model_config = ConfigDict(extra="forbid")

    rate_per_s: float | None = Field(None, gt=0)
    burst: int | None = Field(None, ge=1)
    max_concurrent: int | None = Field(None, ge=1)
    #: LLM tokens (in + out) per UTC day; None: unlimited.
    daily_tokens: int | None = Field(None, ge=0)
    #: LLM spend in USD per UTC day; None: unlimited.
    daily_usd: float | None = Field(None, ge=0)
    on_budget_exhausted: Literal["offline", "refuse"] | None = None
    #: Share of the pools under contention (weighted fair queuing); None: 1.
    weight: float | None = Field(None, gt=0, le=1000)
    #: How long the tenant's data is kept (``memstrata.lifecycle.retention``); None: forever.
    retention: RetentionPolicy | None = None


class KeysFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    keys: dict[str, KeyEntry] = Field(default_factory=dict)
    tenants: dict[str, TenantPolicy] = Field(default_factory=dict)


class KeysFileError(ValueError):
    """The keys file cannot be read; the message names the file."""


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _split(key: str) -> str | None:
    parts = key.split("_", 2)
    if len(parts) != 3 or parts[0] != PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1]


def _problem(exc: ValidationError) -> str:
    """What is wrong with the file, by place and rule, without quoting its content."""
    parts = []
    for e in exc.errors(include_url=False, include_context=False, include_input=False):
        where = ".".join(str(p) for p in e["loc"])
        parts.append(f"{where}: {e['msg']}" if where else str(e["msg"]))
    more = f" (and {len(parts) - 3} more)" if len(parts) > 3 else ""
    return "; ".join(parts[:3]) + more


def read_keys_file(path: Path) -> KeysFile:
    """The keys file; an absent one holds no keys. Raises :class:`KeysFileError`."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return KeysFile()
    except OSError as exc:
        raise KeysFileError(f"keys file {path}: cannot read it ({exc.strerror})") from None
    if not raw.strip():
        return KeysFile()
    try:
        return KeysFile.model_validate_json(raw)
    except ValidationError as exc:
        raise KeysFileError(f"keys file {path}: {_problem(exc)}") from None


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold the keys file's sibling lock: one read-modify-write at a time."""
    _make_parent(path)
    lock = path.with_name(f".{path.name}.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise KeysFileError(
                        f"keys file {path}: another keys command has held {lock} for "
                        f"{LOCK_WAIT_S:g} s; retry once it is done") from None
                time.sleep(0.01)
        yield
    finally:
        os.close(fd)  # drops the lock


def _make_parent(path: Path) -> None:
    if not path.parent.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)


def _write(path: Path, data: KeysFile) -> None:
    """Replace the file atomically with a 0600 copy (callers hold :func:`_locked`)."""
    _make_parent(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:  # mkstemp creates it 0600
            fh.write(data.model_dump_json(indent=2, exclude_none=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())  # a revocation reported done survives a crash
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def add_key(path: Path, tenant: str, *, scopes: list[ScopeName] | None = None,
            user: str | None = None, tenants: list[str] | None = None) -> tuple[str, str]:
    """Create a key for ``tenant``; store its hash; return (key id, key). The key is shown once.

    ``scopes`` None: :data:`DEFAULT_SCOPES`; ``user``: bind the key to that user;
    ``tenants``: other tenants it may act for. Raises ValidationError naming the field.
    """
    extra = sorted(set(tenants or ()) - {tenant}) or None
    entry = KeyEntry(tenant=tenant, sha256="0" * 64, scopes=scopes, user=user, tenants=extra)
    with _locked(path):
        data = read_keys_file(path)
        key_id = secrets.token_hex(6)
        while key_id in data.keys:
            key_id = secrets.token_hex(6)
        key = f"{PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"
        data.keys[key_id] = entry.model_copy(update={
            "sha256": hash_key(key),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds")})
        _write(path, data)
    return key_id, key


def set_scopes(path: Path, key_id: str, scopes: list[ScopeName]) -> KeyEntry:
    """Replace a key's scopes; return its entry. Raises KeyError for an unknown id."""
    KeyEntry(tenant="x", sha256="0" * 64, scopes=scopes)  # validates them
    with _locked(path):
        data = read_keys_file(path)
        entry = data.keys[key_id]
        entry.scopes = list(scopes)
        _write(path, data)
    return entry


def revoke_key(path: Path, key_id: str) -> str:
    """Mark a key revoked; return its tenant. Raises KeyError for an unknown id."""
    with _locked(path):
        data = read_keys_file(path)
        entry = data.keys[key_id]
        entry.revoked = True
        _write(path, data)
    return entry.tenant


def set_tenant_policy(path: Path, tenant: str, policy: TenantPolicy) -> None:
    with _locked(path):
        data = read_keys_file(path)
        data.tenants[tenant] = policy
        _write(path, data)


class KeyRing:
    """The keys file in memory, re-read when it changes on disk.

    A change is a new modification time, size or inode (an atomic replace). A
    file that cannot be read or parsed at start-up raises
    :class:`KeysFileError`; later, the last good keys stay in force, one error
    is logged per bad version of the file, and the next change is read again.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, ...] | None = None
        self._data = KeysFile()
        #: Each unrevoked key's hash and grant, built once per version of the file.
        self._grants: dict[str, tuple[str, Grant]] = {}
        #: The problem with the file on disk, while it is bad; None when it is good.
        self.problem: str | None = None
        if path is not None:
            stamp = self._stat(path)  # before the read: a change during it is read next time
            self._use(read_keys_file(path))
            self._stamp = stamp

    def _use(self, data: KeysFile) -> None:
        self._grants = {k: (e.sha256, e.grant(k)) for k, e in data.keys.items() if not e.revoked}
        self._data = data

    @staticmethod
    def _stat(path: Path) -> tuple[int, ...]:
        try:
            st = path.stat()
        except FileNotFoundError:
            return (0, -1, 0)
        except OSError as exc:
            return (-1, exc.errno or 0, 0)  # read_keys_file names the problem
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def _refresh(self) -> None:
        path = self.path
        if path is None:
            return
        stamp = self._stat(path)
        if stamp == self._stamp:
            return
        with self._lock:
            if stamp == self._stamp:
                return
            try:
                data = read_keys_file(path)
            except KeysFileError as exc:
                self._stamp = stamp  # this version is reported once, not per call
                self.problem = str(exc)
                log.error("%s; still using the last good keys (%d keys) until the file is "
                          "fixed", exc, len(self._data.keys))
                return
            self._use(data)
            self._stamp = stamp
            if self.problem is not None:
                self.problem = None
                log.warning("keys file %s is readable again (%d keys)", path, len(data.keys))

    def grant_for(self, key: str) -> Grant | None:
        """What a valid, unrevoked key may do; None for any other key."""
        self._refresh()
        key_id = _split(key)
        found = self._grants.get(key_id) if key_id else None
        if found is None:
            return None
        sha256, grant = found
        return grant if hmac.compare_digest(sha256, hash_key(key)) else None

    def tenant_for(self, key: str) -> str | None:
        """The own tenant of a valid, unrevoked key; None otherwise."""
        grant = self.grant_for(key)
        return grant.tenant if grant is not None else None

    def policy(self, tenant: str) -> TenantPolicy:
        return self._data.tenants.get(tenant) or TenantPolicy()

    @property
    def tenants(self) -> set[str]:
        """Every tenant some key may act for (platform keys' other tenants included)."""
        return {t for e in self._data.keys.values() for t in (e.tenant, *(e.tenants or ()))}


def dump_for_display(path: Path) -> list[dict[str, object]]:
    """Key ids, tenants, scopes, bound users and states (no hashes) for ``memstrata keys list``."""
    data = read_keys_file(path)
    return [{"id": k, "tenant": e.tenant, "created": e.created, "revoked": e.revoked,
             "scopes": ",".join(e.shown_scopes()), "user": e.user or "",
             "tenants": ",".join(e.tenants or ())}
            for k, e in sorted(data.keys.items())]


__all__ = ["DEFAULT_SCOPES", "Grant", "KeyRing", "KeysFile", "KeysFileError", "SCOPES",
           "TenantPolicy", "add_key", "hash_key", "parse_scopes", "read_keys_file",
           "revoke_key", "set_scopes", "set_tenant_policy", "dump_for_display"]
