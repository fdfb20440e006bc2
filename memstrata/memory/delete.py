"""Deletes: forget one session, or everything of one user, in every store."""

from __future__ import annotations

from collections.abc import Callable

from memstrata.memory.core import MemoryCore
from memstrata.model import Scope
from memstrata.roles import DeleteReceipt
from memstrata.unit_caches import forget_everywhere


class MemoryDeletes(MemoryCore):
    """:meth:`delete`, store by store, with a receipt."""

    def delete(self, scope: Scope, session_id: str | None = None) -> DeleteReceipt:
        """Forget one session, or everything of one user, in every store.

        The sessions' digests are cleared first, so a delete that fails part way
        leaves sessions that a re-ingest rebuilds (never skips) and that a
        second delete finishes; the receipt says which stores failed.
        """
        self._writable()
        receipt = DeleteReceipt(scope=scope, session_id=session_id)
        with self._write_lock:
            if session_id is None:
                metas = self.docs.list_sessions(scope)
            else:
                one = self.docs.get_session(scope, session_id)
                metas = [one] if one else []
            for meta in metas:
                self.docs.put_session(meta, digest=None)
            stores: list[tuple[str, Callable[[], int], Callable[[], None]]] = [
                ("vectors", lambda: self.vectors.count(scope),
                 lambda: self.vectors.delete(scope, session_id)),
                ("lexical", lambda: self.lexical.count(scope),
                 lambda: self.lexical.delete(scope, session_id)),
            ]
            if self.session_lexical is not None:
                whole = self.session_lexical
                stores.append(("session_lexical", lambda: whole.count(scope),
                               lambda: whole.delete(scope, session_id)))
            stores += [
                ("docs", lambda: self.docs.count_turns(scope),
                 lambda: self._delete_docs(scope, session_id)),
            ]
            # The doc store goes last: until it is done the sessions stay listed
            # (digest cleared), so the user can see them and delete again.
            for name, count, delete in stores:
                if receipt.errors:
                    receipt.errors[name] = "not attempted: an earlier store failed"
                    continue
                try:
                    before = count()
                    delete()
                    receipt.removed[name] = before - count()
                except Exception as exc:  # noqa: BLE001 - reported; a retry finishes the job
                    receipt.errors[name] = f"{type(exc).__name__}: {exc}"
            receipt.complete = not receipt.errors
            if session_id is None:  # nothing of a forgotten user stays, its queries included
                self.retriever.query_vectors.forget(scope)
            forget_everywhere(scope, session_id)  # parsed units, facts, wire messages
        return receipt

    def _delete_docs(self, scope: Scope, session_id: str | None) -> None:
        """The doc store's part of a delete: a session's share of the profiles is removed
        (the profiles it touched rewritten) in the same transaction as its records; a
        user's profiles go with the user."""
        with self.docs.atomic():
            if session_id is not None:
                self.profiles.forget_session(scope, session_id).apply(self.docs)
            self.docs.delete(scope, session_id)
