"""API keys: which tenant a key belongs to, and what that tenant may spend.

The keys file (JSON, ``MEMSTRATA_SERVICE_KEYS_FILE``) holds only SHA-256 hashes
of keys, never a key. A key reads ``msk_<id>_<secret>``: the id finds the
entry, the hash of the whole key is compared in constant time. The secret is
32 random bytes, so a fast hash is enough (nothing to brute-force). The file is
re-read when it changes on disk, so ``memstrata keys add`` and revocations take
effect without a restart.

File layout::

    {"keys": {"<id>": {"tenant": "acme", "sha256": "...", "created": "...",
                       "revoked": false}},
     "tenants": {"acme": {"rate_per_s": 50, "burst": 100, "max_concurrent": 8,
                          "daily_tokens": 200000, "daily_usd": 2.5,
                          "on_budget_exhausted": "offline", "weight": 2}}}

``weight`` is the tenant's share of the read and answer pools when tenants
compete (weighted fair queuing, ``query_service.scheduler``; default 1): a
tenant of weight 2 gets about twice the pool time of a tenant of weight 1
while both have calls waiting. It belongs to the tenant, not to one of its
keys, so minting more keys never buys a larger share.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memstrata.model import Identifier

PREFIX = "msk"


class KeyEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tenant: Identifier
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    created: str | None = None
    revoked: bool = False


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


def read_keys_file(path: Path) -> KeysFile:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return KeysFile()
    try:
        return KeysFile.model_validate_json(text) if text.strip() else KeysFile()
    except ValueError as exc:
        raise KeysFileError(f"keys file {path}: {exc}") from None


def _write(path: Path, data: KeysFile) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(data.model_dump_json(indent=2, exclude_none=True) + "\n")
    os.replace(tmp, path)


def add_key(path: Path, tenant: str) -> tuple[str, str]:
    """Create a key for ``tenant``; store its hash; return (key id, key). The key is shown once."""
    KeyEntry(tenant=tenant, sha256="0" * 64)  # validates the tenant id
    data = read_keys_file(path)
    key_id = secrets.token_hex(6)
    key = f"{PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"
    data.keys[key_id] = KeyEntry(tenant=tenant, sha256=hash_key(key),
                                 created=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    _write(path, data)
    return key_id, key


def revoke_key(path: Path, key_id: str) -> str:
    """Mark a key revoked; return its tenant. Raises KeyError for an unknown id."""
    data = read_keys_file(path)
    entry = data.keys[key_id]
    entry.revoked = True
    _write(path, data)
    return entry.tenant


def set_tenant_policy(path: Path, tenant: str, policy: TenantPolicy) -> None:
    data = read_keys_file(path)
    data.tenants[tenant] = policy
    _write(path, data)


class KeyRing:
    """The keys file in memory, re-read when its modification time or size changes."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._data = KeysFile()
        self._refresh()

    def _refresh(self) -> None:
        if self.path is None:
            return
        try:
            st = self.path.stat()
            stamp = (st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = (0, -1)
        if stamp == self._stamp:
            return
        with self._lock:
            if stamp != self._stamp:
                self._data = read_keys_file(self.path)
                self._stamp = stamp

    def tenant_for(self, key: str) -> str | None:
        """The tenant of a valid, unrevoked key; None otherwise."""
        self._refresh()
        key_id = _split(key)
        entry = self._data.keys.get(key_id) if key_id else None
        if entry is None or entry.revoked:
            return None
        return entry.tenant if hmac.compare_digest(entry.sha256, hash_key(key)) else None

    def policy(self, tenant: str) -> TenantPolicy:
        return self._data.tenants.get(tenant) or TenantPolicy()

    @property
    def tenants(self) -> set[str]:
        return {e.tenant for e in self._data.keys.values()}


def dump_for_display(path: Path) -> list[dict[str, object]]:
    """Key ids, tenants and states (no hashes) for ``memstrata keys list``."""
    data = read_keys_file(path)
    return [{"id": k, "tenant": e.tenant, "created": e.created, "revoked": e.revoked}
            for k, e in sorted(data.keys.items())]


__all__ = ["KeyRing", "KeysFile", "KeysFileError", "TenantPolicy", "add_key", "hash_key",
           "read_keys_file", "revoke_key", "set_tenant_policy", "dump_for_display"]
