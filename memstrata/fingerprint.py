"""What stored records depend on, so that changing it never silently mixes data.

An L0 unit is the output of the layer builder (its version, which covers its
own settings) over windows cut by the window settings, embedded by one
encoder. :class:`IndexFingerprint` names all of those. Every session's stored
digest starts with the fingerprint's key, so a session indexed under other
settings is rebuilt when it is ingested again; the encoder part is also
checked when a data dir is opened for writing, because vectors of two
encoders cannot share an index at all.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from memstrata.ids import content_hash

#: Which setting controls each part (for messages that say what changed).
SETTING_OF = {
    "builder": "MEMSTRATA_LLM_BACKEND / MEMSTRATA_LLM_MODEL_BUILDER / MEMSTRATA_L0_MAX_SUMMARY_WORDS"
               " / MEMSTRATA_L1_MAX_INPUT_CHARS",
    "window_turns": "MEMSTRATA_L0_WINDOW_TURNS",
    "window_overlap": "MEMSTRATA_L0_WINDOW_OVERLAP",
    "window_max_chars": "MEMSTRATA_L0_MAX_WINDOW_CHARS",
    "embedder": "MEMSTRATA_EMBED_BACKEND / MEMSTRATA_EMBED_MODEL / MEMSTRATA_EMBED_ARITHMETIC",
    "dim": "MEMSTRATA_EMBED_DIM",
}


@dataclass(frozen=True)
class IndexFingerprint:
    """Everything that changes stored L0 records."""

    builder: str
    window_turns: int
    window_overlap: int
    window_max_chars: int
    embedder: str
    dim: int

    @property
    def key(self) -> str:
        return content_hash(*(f"{k}={v}" for k, v in sorted(asdict(self).items())))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def encoder(self) -> tuple[str, int]:
        return (self.embedder, self.dim)

    def changes(self, stored: dict[str, Any]) -> list[str]:
        """``part: stored -> now (SETTING)`` for each part that differs from ``stored``."""
        now = asdict(self)
        return [
            f"{k}: {stored.get(k)!r} -> {v!r} ({SETTING_OF[k]})"
            for k, v in now.items() if stored.get(k) != v
        ]


class IndexMismatch(RuntimeError):
    """The data dir was indexed with another encoder; its vectors cannot be mixed."""
