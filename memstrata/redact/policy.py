"""Who gets redacted, and how: a default rule plus per-tenant overrides.

A rule has a ``mode`` (``off``: store as sent; ``mask``: replace each value with
a typed placeholder; ``drop``: never store a message holding one) and the
``kinds`` it looks for. The default comes from ``MEMSTRATA_REDACT_MODE`` and
``MEMSTRATA_REDACT_KINDS``; the policy file (``MEMSTRATA_REDACT_POLICY_FILE``,
TOML or JSON) may replace it and name tenants::

    [default]
    mode = "mask"

    [tenants.acme]
    mode = "drop"
    kinds = ["card", "iban"]

A tenant's missing field is the default's. The file lives beside the data, not
in the service's keys file, because every process that writes reads it: the
query service, the stream workers and ``memstrata ingest``. It is read again
when it changes (at most once a second); a file that goes bad while a process
runs leaves the last good policy in force and is reported once, by location
and rule, never by content.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import tomllib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memstrata.model import Identifier

__all__ = ["Mode", "Policy", "PolicyFileError", "PolicySource", "Rule", "read_policy_file"]

Mode = Literal["off", "mask", "drop"]
MODES: tuple[Mode, ...] = ("off", "mask", "drop")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rule:
    """What one tenant's messages go through."""

    mode: Mode
    kinds: frozenset[str]

    @property
    def active(self) -> bool:
        return self.mode != "off" and bool(self.kinds)


@dataclass(frozen=True)
class Policy:
    """The default rule and the tenants that differ from it."""

    default: Rule
    tenants: dict[str, Rule]

    def rule(self, tenant_id: str) -> Rule:
        return self.tenants.get(tenant_id, self.default)

    @property
    def active(self) -> bool:
        """Whether any tenant's messages are scanned (off everywhere: nothing to do)."""
        return self.default.active or any(r.active for r in self.tenants.values())


class _RuleEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Mode | None = None
    kinds: list[str] | None = Field(None, max_length=64)


class _PolicyDoc(BaseModel):
    model_config = ConfigDict(extra="forbid")

    default: _RuleEntry = Field(default_factory=_RuleEntry)
    tenants: dict[Identifier, _RuleEntry] = Field(default_factory=dict)


class PolicyFileError(ValueError):
    """The policy file cannot be used; the message names the file, the place and the rule."""


def _merge(entry: _RuleEntry, base: Rule, known: Collection[str], where: str,
           path: Path) -> Rule:
    kinds = base.kinds
    if entry.kinds is not None:
        unknown = [k for k in entry.kinds if k not in known]
        if unknown:
            raise PolicyFileError(
                f"redaction policy file {path}: {where}.kinds: unknown kind {unknown[0]!r} "
                f"(known: {', '.join(sorted(known))})")
        kinds = frozenset(entry.kinds)
    return Rule(entry.mode or base.mode, kinds)


def read_policy_file(path: Path, base: Rule, known: Collection[str]) -> Policy:
    """The policy in ``path`` over ``base`` (the settings' default); :class:`PolicyFileError`."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise PolicyFileError(f"redaction policy file {path}: cannot read it "
                              f"({exc.strerror or type(exc).__name__})") from None
    try:
        data = (tomllib.loads(raw.decode("utf-8")) if path.suffix.lower() == ".toml"
                else json.loads(raw))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        kind = "TOML" if path.suffix.lower() == ".toml" else "JSON"
        # The parser's position only: its message may quote the file.
        at = getattr(exc, "lineno", None)
        raise PolicyFileError(f"redaction policy file {path}: not valid {kind}"
                              + (f" (line {at})" if at else "")) from None
    try:
        doc = _PolicyDoc.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False, include_input=False, include_context=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise PolicyFileError(f"redaction policy file {path}: {where}: {err['msg']} "
                              f"(modes: {', '.join(MODES)})") from None
    default = _merge(doc.default, base, known, "default", path)
    tenants = {t: _merge(e, default, known, f"tenants.{t}", path)
               for t, e in doc.tenants.items()}
    return Policy(default, tenants)


class PolicySource:
    """The policy in force: the settings' default, or the policy file over it, kept fresh."""

    def __init__(self, base: Rule, known: Collection[str], path: Path | None = None, *,
                 check_every_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self._base = base
        self._known = frozenset(known)
        self._every = check_every_s
        self._clock = clock
        self._lock = threading.Lock()
        self._next_check = 0.0
        self._stamp: tuple[int, ...] | None = None
        #: The problem with the file on disk while it is bad; None when it is good.
        self.problem: str | None = None
        self._policy = Policy(base, {})
        if path is not None:  # a bad file at start-up stops the start
            self._stamp = self._stat(path)
            self._policy = read_policy_file(path, base, self._known)
            self._next_check = clock() + check_every_s

    @staticmethod
    def _stat(path: Path) -> tuple[int, ...]:
        try:
            st = os.stat(path)
        except OSError as exc:
            return (-1, exc.errno or 0)
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def current(self) -> Policy:
        if self.path is None or self._clock() < self._next_check:
            return self._policy
        with self._lock:
            now = self._clock()
            if now < self._next_check:
                return self._policy
            self._next_check = now + self._every
            stamp = self._stat(self.path)
            if stamp == self._stamp:
                return self._policy
            self._stamp = stamp
            try:
                self._policy = read_policy_file(self.path, self._base, self._known)
            except PolicyFileError as exc:
                self.problem = str(exc)
                log.error("%s; the last good redaction policy stays in force until the file "
                          "is fixed", exc)
            else:
                if self.problem is not None:
                    log.warning("redaction policy file %s is readable again", self.path)
                self.problem = None
            return self._policy
