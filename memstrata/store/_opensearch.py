"""What the two OpenSearch stores share: the client, index creation, scope filters, paging."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from opensearchpy import OpenSearch
from opensearchpy.exceptions import RequestError

from memstrata.model import Scope
from memstrata.store._errors import tls_setting

#: Seconds any single request may take unless the caller says otherwise.
DEFAULT_TIMEOUT_S = 10.0
#: The setting that fixes an untrusted server certificate.
CA_SETTING = "MEMSTRATA_OPENSEARCH_CA_FILE"


def make_client(
    url: str,
    *,
    user: str | None = None,
    password: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    max_retries: int = 2,
    ca_file: str | None = None,
) -> OpenSearch:
    """A client with every request bounded by ``timeout`` (retried only if it cannot connect).

    ``ca_file`` (MEMSTRATA_OPENSEARCH_CA_FILE) is the CA bundle an https URL is verified with.
    """
    auth = (user, password or "") if user else None
    tls: dict[str, Any] = {"verify_certs": True, "ca_certs": ca_file} if ca_file else {}
    return OpenSearch(hosts=[url], http_auth=auth, timeout=timeout, max_retries=max_retries,
                      **tls)


def ensure_index(client: OpenSearch, name: str, body: dict[str, Any], timeout: float,
                 *, url: str | None = None) -> None:
    """Create ``name`` with ``body`` unless it exists (a concurrent creator is not an error).

    This is a store's first request: an untrusted certificate of ``url`` (the
    client's server) is reported as :data:`CA_SETTING` to fix.
    """
    with tls_setting(url, CA_SETTING):
        if client.indices.exists(index=name, request_timeout=timeout):
            return
        try:
            client.indices.create(index=name, body=body, request_timeout=timeout)
        except RequestError as exc:
            if "already_exists" not in str(getattr(exc, "error", "")):
                raise


def scope_filter(scope: Scope) -> list[dict[str, Any]]:
    """Non-scoring term clauses that confine a query to one tenant's one user."""
    return [{"term": {"tenant_id": scope.tenant_id}}, {"term": {"user_id": scope.user_id}}]


def search_all(
    client: OpenSearch,
    index: str,
    query: dict[str, Any],
    sort: list[dict[str, Any]],
    *,
    timeout: float,
    page_size: int,
) -> Iterator[dict[str, Any]]:
    """Every hit of ``query`` in ``sort`` order, paged with search_after.

    ``sort`` must end in a unique field, or pages could skip or repeat hits.
    """
    after: list[Any] | None = None
    while True:
        body: dict[str, Any] = {"size": page_size, "query": query, "sort": sort}
        if after is not None:
            body["search_after"] = after
        hits = client.search(index=index, body=body, request_timeout=timeout)["hits"]["hits"]
        yield from hits
        if len(hits) < page_size:
            return
        after = hits[-1]["sort"]
