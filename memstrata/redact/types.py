"""What a detector finds, and the interface every detector implements.

A detector reads a text and returns :class:`Finding` spans; it never keeps,
logs or returns anything but the span and its kind, so the redactor is the
one place that sees both the text and what was found in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["RULE_KINDS", "Detector", "Finding"]

#: The kinds the rule detectors find (no model needed), in the order overlaps are settled:
#: when two detectors claim the same span, the earlier kind wins.
RULE_KINDS: tuple[str, ...] = ("card", "iban", "email", "ip", "phone")


@dataclass(frozen=True, slots=True)
class Finding:
    """A span ``text[start:end]`` holding a value of ``kind`` (``email``, ``person``...)."""

    kind: str
    start: int
    end: int
    #: The value in a canonical form (digits of a phone, lower-case email): two spellings
    #: of one value get one placeholder. Never logged, never stored.
    key: str = ""

    def __post_init__(self) -> None:
        if not 0 <= self.start < self.end:
            raise ValueError(f"finding {self.kind}: empty or negative span "
                             f"[{self.start}, {self.end})")


@runtime_checkable
class Detector(Protocol):
    """Finds sensitive values in a text (rules, Presidio...)."""

    #: A short name for errors and docs (``rules``, ``presidio``).
    name: str

    @property
    def kinds(self) -> frozenset[str]:
        """Every kind this detector can report."""
        ...

    def find(self, text: str, kinds: frozenset[str]) -> list[Finding]:
        """The spans of ``text`` holding a value of one of ``kinds`` (overlaps allowed)."""
        ...
