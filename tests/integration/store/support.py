"""Scopes, record builders and the Backend handle shared by the store contract tests.

A plain module (not conftest) so test modules can import it; the
fixtures that build backends are in ``conftest.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from memstrata.ids import record_id
from memstrata.model import Scope
from memstrata.store.types import DocStore, LexicalDoc, LexicalStore, VectorRecord, VectorStore

DIM = 8
PREFIX = "mt"

ALICE = Scope(tenant_id="tenant-a", user_id="alice")
BOB = Scope(tenant_id="tenant-a", user_id="bob")  # same tenant as ALICE, other user
MALLORY = Scope(tenant_id="tenant-b", user_id="alice")  # other tenant, same user id as ALICE

S = TypeVar("S", VectorStore, LexicalStore, DocStore)


@dataclass
class Backend(Generic[S]):
    """One implementation under test: how to open it and what it promises beyond the interface."""

    name: str
    opener: Callable[..., S]
    #: Writes are searchable without flush() (true everywhere except OpenSearch BM25).
    immediate: bool = True
    opened: list[S] = field(default_factory=list)

    def open(self, **kwargs: Any) -> S:
        """A new handle on the same storage (closed at teardown)."""
        store = self.opener(**kwargs)
        self.opened.append(store)
        return store

    def close_all(self) -> None:
        for store in reversed(self.opened):
            store.close()


# -- record builders -------------------------------------------------------
def unit_id(scope: Scope, session_id: str, turn: int) -> str:
    """The id memstrata gives the L0 unit of one turn (a UUID that depends on the scope)."""
    return record_id(scope.tenant_id, scope.user_id, session_id, "L0", turn, turn)


def basis(i: int, dim: int = DIM) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    v[i] = 1.0
    return v


def unit_vector(*weights: float) -> np.ndarray:
    """A normalised vector whose first components are ``weights``."""
    v = np.zeros(DIM, dtype=np.float32)
    v[: len(weights)] = weights
    return v / np.linalg.norm(v)


def vrec(scope: Scope, session_id: str, turn: int, vector: np.ndarray) -> VectorRecord:
    return VectorRecord(unit_id(scope, session_id, turn), scope, session_id, turn, vector)


def ldoc(
    scope: Scope, session_id: str, turn: int, text: str, keywords: list[str] | None = None
) -> LexicalDoc:
    return LexicalDoc(
        unit_id(scope, session_id, turn), scope, session_id, turn, text, keywords or []
    )
