"""BM25 store on OpenSearch: index ``<prefix>-l0`` shared by all tenants.

Queries use ``multi_match`` (free text, analysed by the ``english`` analyzer,
never parsed as query syntax) with the scope as non-scoring ``filter`` clauses.
Upserts are bulk writes without a refresh, so ingest stays cheap; :meth:`flush`
refreshes. Deletes refresh before and after, because stale hits of deleted
data must not be served.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any

from opensearchpy import OpenSearch, helpers

from memstrata.model import Scope
from memstrata.store._errors import guard
from memstrata.store._opensearch import (
    DEFAULT_TIMEOUT_S,
    ensure_index,
    make_client,
    scope_filter,
)
from memstrata.store.types import (
    FIELD_TIE_BREAKER,
    Hit,
    LexicalDoc,
    LexicalStore,
    StoreError,
)

BACKEND = "opensearch"
# Words (with inner apostrophes kept for the possessive filter). Rejoining them with
# spaces means "text:pizza" is two words here, as it is for tantivy, instead of
# one token under the standard tokenizer's word-break rules.
_WORDS = re.compile(r"\w+(?:'\w+)*")

MAPPING: dict[str, Any] = {
    "mappings": {
        "dynamic": "strict",
        "properties": {
            "text": {"type": "text", "analyzer": "english"},
            "keywords": {"type": "text", "analyzer": "english"},
            "tenant_id": {"type": "keyword"},
            "user_id": {"type": "keyword"},
            "session_id": {"type": "keyword"},
            "turn_index": {"type": "integer"},
        },
    }
}


class OpenSearchLexicalStore(LexicalStore):
    """L0 summaries and keywords in one OpenSearch index, BM25 over both fields."""

    name = BACKEND

    def __init__(
        self,
        url: str | None = None,
        *,
        client: OpenSearch | None = None,
        prefix: str = "memstrata",
        user: str | None = None,
        password: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_retries: int = 2,
        ca_file: str | None = None,
        name: str = "l0",
    ) -> None:
        if (url is None) == (client is None):
            raise StoreError(f"{BACKEND}: give exactly one of url or client")
        #: ``name`` tells apart the L0 index and the session-level one.
        self.index = f"{prefix}-{name}"
        self.timeout = timeout
        self._owns_client = client is None
        self._client = (
            client
            if client is not None
            else make_client(url or "", user=user, password=password, timeout=timeout,
                             max_retries=max_retries, ca_file=ca_file)
        )
        with guard(BACKEND, f"create index {self.index}"):
            ensure_index(self._client, self.index, MAPPING, timeout, url=url)

    # -- writes -----------------------------------------------------------
    def upsert(self, docs: Sequence[LexicalDoc]) -> None:
        """Index documents by id (replacing any earlier version); visible after :meth:`flush`."""
        if not docs:
            return
        actions = (
            {
                "_op_type": "index",
                "_index": self.index,
                "_id": d.id,
                "_source": {
                    "text": d.text,
                    "keywords": list(d.keywords),
                    "tenant_id": d.scope.tenant_id,
                    "user_id": d.scope.user_id,
                    "session_id": d.session_id,
                    "turn_index": d.turn_index,
                },
            }
            for d in docs
        )
        with guard(BACKEND, f"bulk upsert {len(docs)} documents into {self.index}"):
            helpers.bulk(self._client, actions, chunk_size=500, request_timeout=self.timeout)

    def delete(self, scope: Scope, session_id: str | None = None) -> None:
        flt = scope_filter(scope)
        if session_id is not None:
            flt.append({"term": {"session_id": session_id}})
        with guard(BACKEND, f"delete {scope}/{session_id or '*'} from {self.index}"):
            # Refresh first: delete_by_query only sees documents a refresh has exposed.
            self._client.indices.refresh(index=self.index, request_timeout=self.timeout)
            self._client.delete_by_query(
                index=self.index,
                body={"query": {"bool": {"filter": flt}}},
                refresh=True,
                conflicts="proceed",
                request_timeout=self.timeout,
            )

    # -- reads ------------------------------------------------------------
    def search(
        self,
        scope: Scope,
        query: str,
        limit: int,
        session_ids: Collection[str] | None = None,
    ) -> list[Hit]:
        if limit <= 0 or (session_ids is not None and not session_ids):
            return []
        text = " ".join(_WORDS.findall(query))
        if not text:
            return []
        flt = scope_filter(scope)
        if session_ids is not None:
            flt.append({"terms": {"session_id": sorted(set(session_ids))}})
        body = {
            "size": limit,
            "_source": ["session_id"],
            "query": {
                "bool": {
                    "must": {
                        "multi_match": {
                            "query": text,
                            "fields": ["text", "keywords"],
                            # Term-centric like the tantivy store: per term the
                            # better field plus a tie-breaker share of the other.
                            "type": "cross_fields",
                            "tie_breaker": FIELD_TIE_BREAKER,
                            "operator": "or",
                        }
                    },
                    "filter": flt,
                }
            },
        }
        with guard(BACKEND, f"search {scope} in {self.index}"):
            res = self._client.search(index=self.index, body=body, request_timeout=self.timeout)
        return [
            Hit(h["_id"], h["_source"]["session_id"], float(h["_score"]))
            for h in res["hits"]["hits"]
        ]

    def count(self, scope: Scope | None = None) -> int:
        body = None if scope is None else {"query": {"bool": {"filter": scope_filter(scope)}}}
        with guard(BACKEND, f"count {scope or 'all'} in {self.index}"):
            res = self._client.count(index=self.index, body=body, request_timeout=self.timeout)
        return int(res["count"])

    def count_session(self, scope: Scope, session_id: str) -> int:
        body = {"query": {"bool": {"filter": [*scope_filter(scope),
                                              {"term": {"session_id": session_id}}]}}}
        with guard(BACKEND, f"count {scope}/{session_id} in {self.index}"):
            res = self._client.count(index=self.index, body=body, request_timeout=self.timeout)
        return int(res["count"])

    # -- lifecycle --------------------------------------------------------
    def flush(self) -> None:
        """Refresh the index so that upserts become searchable."""
        with guard(BACKEND, f"refresh {self.index}"):
            self._client.indices.refresh(index=self.index, request_timeout=self.timeout)

    def close(self) -> None:
        if self._owns_client:
            with guard(BACKEND, "close"):
                self._client.close()
