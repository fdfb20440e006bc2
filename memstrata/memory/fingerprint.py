"""The data dir's identity: which encoder, builder and windows indexed it.

The fingerprint is kept in the doc store under a scope of its own; a data dir
indexed by another encoder is refused (:class:`IndexMismatch`), and every
session's digest carries the fingerprint so other builder or window settings
rebuild a session when it is written again.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from memstrata.config import Settings
from memstrata.embed.types import Embedder
from memstrata.fingerprint import SETTING_OF, IndexFingerprint, IndexMismatch
from memstrata.memory.core import MemoryCore
from memstrata.model import Scope, Turn, turns_digest
from memstrata.store.types import DocStore

#: Deployment-wide records live in the doc store under a scope no real id can
#: spell ('#' is not allowed in ids), so they never meet a tenant's data.
_META_SCOPE = Scope.model_construct(tenant_id="#memstrata", user_id="#index")
_META_SESSION, _FINGERPRINT = "#index", "fingerprint"


def embedder_id(embedder: Embedder) -> str:
    """The encoder's name plus its model, when it names one."""
    model = embedder.model_id
    return f"{embedder.name}:{model}" if model else embedder.name


def _refuse_other_encoder(settings: Settings, docs: DocStore, embedder: str,
                          dim: int) -> dict[str, Any] | None:
    """The stored fingerprint; :class:`IndexMismatch` if another encoder wrote the data dir."""
    stored = docs.get_layer(_META_SCOPE, _META_SESSION, _FINGERPRINT, "1")
    if stored is not None and (stored.get("embedder"), stored.get("dim")) != (embedder, dim):
        changes = "; ".join(
            f"{k}: {stored.get(k)!r} -> {v!r} ({SETTING_OF[k]})"
            for k, v in (("embedder", embedder), ("dim", dim)) if stored.get(k) != v)
        raise IndexMismatch(
            f"the data dir {settings.data_dir} was indexed with another encoder "
            f"({changes}). Vectors of two encoders cannot share an index: restore the old "
            f"setting, re-encode the stored vectors with `memstrata migrate`, or re-index "
            f"into a new data dir: MEMSTRATA_DATA_DIR=<new dir> memstrata ingest <your files>"
        )
    return stored


class MemoryFingerprint(MemoryCore):
    """Checks and records the fingerprint; digests sessions under it."""

    def check_fingerprint(self, *, record: bool = True) -> None:
        """Refuse stores indexed by another encoder; remember this index's fingerprint.

        Builder and window changes need no refusal: every session's digest
        carries the fingerprint, so ingesting a session again rebuilds it.
        """
        now = self.fingerprint
        stored = _refuse_other_encoder(self.settings, self.docs, now.embedder, now.dim)
        #: What changed since the data dir was last written (builder or window
        #: settings): sessions indexed before are rebuilt when ingested again.
        self.changed_settings = now.changes(stored) if stored is not None else []
        if record and stored != now.as_dict():
            self.docs.put_layer(_META_SCOPE, _META_SESSION, _FINGERPRINT, "1", now.as_dict())

    @functools.cached_property
    def fingerprint(self) -> IndexFingerprint:
        s = self.settings
        return IndexFingerprint(
            builder=self.builder.version,
            window_turns=s.l0_window_turns,
            window_overlap=s.l0_window_overlap,
            window_max_chars=s.l0_max_window_chars,
            embedder=embedder_id(self.embedder),
            dim=self.embedder.dim,
        )

    @functools.cached_property
    def _fp_key(self) -> str:
        return self.fingerprint.key

    def _digest(self, turns: Sequence[Turn]) -> str:
        return f"{self._fp_key}:{turns_digest(list(turns))}"
