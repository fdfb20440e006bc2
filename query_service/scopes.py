"""Which scope each RPC needs, and what a bound-user or platform key may name in a request.

One table, :data:`REQUIRED`, lists every RPC of ``memstrata.v1.MemoryService``;
an RPC missing from it is refused for every key (fail closed), and
``tests/integration/query_service/test_scopes.py`` walks the service
descriptor so a new RPC without an entry fails the suite. :data:`USERS` says
where each request names a user, so a key bound to one user is refused any
other (PERMISSION_DENIED naming the field); RPCs that span a whole tenant are
refused to such keys. Refusals name what was missing, never the key.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from query_service.keys import Grant

READ: Final = "read"
WRITE: Final = "write"
DELETE: Final = "delete"
ADMIN: Final = "admin"
#: Any valid key may make the call (it only describes the key itself).
ANY_KEY: Final = None

#: The scope each RPC needs (``ListUsers`` for a tenant other than the key's own needs
#: ``admin`` as well: :func:`needed`).
REQUIRED: Final[dict[str, str | None]] = {
    "Answer": READ,
    "AnswerStream": READ,
    "Search": READ,
    "ListSessions": READ,
    "GetSession": READ,
    "ReadUnits": READ,
    "ReadFacts": READ,
    "ReadTurns": READ,
    "ReadRaw": READ,
    "GetProfile": READ,
    "ListEntities": READ,
    "GetStats": READ,
    "ExportUser": READ,
    "ListUsers": READ,
    "Ingest": WRITE,
    "IngestBatch": WRITE,
    "CloseSession": WRITE,
    "DeleteSession": DELETE,
    "DeleteUser": DELETE,
    "ReadAudit": ADMIN,
    "DescribeKey": ANY_KEY,
}

#: The request reaches across the tenant's users: refused to a key bound to one user.
TENANT_WIDE: Final = "tenant-wide"
#: The request names no user (and reveals none).
NO_USER: Final = "no user"
#: Where each request names its user: a field, ``event.user_id`` (Ingest),
#: ``events[].user_id`` (IngestBatch), or one of the two markers above.
USERS: Final[dict[str, str]] = {
    **{m: "user_id" for m in ("Answer", "AnswerStream", "Search", "ListSessions", "GetSession",
                              "ReadUnits", "ReadFacts", "ReadTurns", "ReadRaw",
                              "GetProfile", "ListEntities",
                              "CloseSession", "DeleteSession", "DeleteUser", "ExportUser")},
    "Ingest": "event.user_id",
    "IngestBatch": "events[].user_id",
    "GetStats": TENANT_WIDE,
    "ListUsers": TENANT_WIDE,
    "ReadAudit": TENANT_WIDE,
    "DescribeKey": NO_USER,
}

#: Calls always written to the audit log (success or not); admin calls are too (:func:`audited`).
AUDITED: Final = frozenset({"DeleteSession", "DeleteUser", "ExportUser", "ReadAudit"})


def needed(method: str, grant: Grant, tenant: str) -> tuple[str, ...]:
    """The scopes ``method`` needs for ``tenant``; raises KeyError for an RPC not in the table."""
    scope = REQUIRED[method]
    if scope is None:
        return ()
    if method == "ListUsers" and tenant != grant.tenant:
        return (READ, ADMIN)  # a platform key listing another tenant's users
    return (scope,)


def missing_scope(method: str, grant: Grant, tenant: str) -> str | None:
    """Why the key may not make this call (names the scope missing); None when it may."""
    try:
        scopes = needed(method, grant, tenant)
    except KeyError:
        return f"{method}: no scope is defined for this call, so it is refused"
    for scope in scopes:
        if scope not in grant.scopes:
            has = ", ".join(grant.shown_scopes())
            why = f" for tenant {tenant!r}" if scope == ADMIN and method == "ListUsers" else ""
            return (f"{method} needs the {scope!r} scope{why}; this API key has "
                    f"{has or 'no scope'}")
    return None


def audited(method: str, grant: Grant | None, tenant: str | None, refused: bool) -> bool:
    """Whether this call goes to the audit log: deletes, exports and admin calls, and
    refused calls of keys that hold the admin scope."""
    if method in AUDITED:
        return True
    if grant is None:
        return False
    if refused and ADMIN in grant.scopes:
        return True
    try:
        return ADMIN in needed(method, grant, tenant or grant.tenant)
    except KeyError:
        return False


def recorded(method: str, grant: Grant | None, tenant: str | None, request: Any) -> bool:
    """Whether a call that may run goes to the audit log when it ends.

    The audited calls (:func:`audited`), less the later pages of a ``ReadAudit``
    walk: the first page (``after_seq`` 0) records the reading, and recording every
    page would hand the walk a new entry to read each time, so it never ended.
    """
    if method == "ReadAudit" and request.after_seq:
        return False
    return audited(method, grant, tenant, refused=False)


def _user_fields(rule: str, request: Any) -> Iterator[tuple[str, str]]:
    """(field path, user id) pairs the request names, by the table's rule."""
    if rule == "user_id":
        yield "user_id", request.user_id
    elif rule == "event.user_id":
        yield "event.user_id", request.event.user_id
    elif rule == "events[].user_id":
        for i, e in enumerate(request.events):
            yield f"events[{i}].user_id", e.user_id


def _event_tenants(method: str, request: Any) -> Iterator[tuple[str, str]]:
    """(field path, tenant) pairs of the turn events that name a tenant."""
    if method == "Ingest":
        if request.event.tenant_id:
            yield "event.tenant_id", request.event.tenant_id
    elif method == "IngestBatch":
        for i, e in enumerate(request.events):
            if e.tenant_id:
                yield f"events[{i}].tenant_id", e.tenant_id


def refused_request(method: str, request: Any, grant: Grant) -> str | None:
    """Why the request names something the key may not reach (naming the field); None: fine.

    A bound key may name its own user only and no tenant-wide call; every key may
    name, in a turn event's ``tenant_id``, only the tenants it may act for.
    """
    for where, tenant in _event_tenants(method, request):
        if tenant not in grant.tenants:
            return f"{where}: this API key may not act for tenant {tenant!r}"
    if grant.user is None:
        return None
    rule = USERS.get(method, TENANT_WIDE)
    if rule == NO_USER:
        return None
    if rule == TENANT_WIDE:
        return (f"{method}: this API key is bound to user {grant.user!r} and may not make "
                f"calls that span the tenant")
    if method == "ExportUser" and request.all_users:
        return (f"all_users: this API key is bound to user {grant.user!r} and may export "
                f"that user only")
    for where, user in _user_fields(rule, request):
        if user != grant.user:
            return f"{where}: this API key is bound to user {grant.user!r}"
    return None


__all__ = ["ADMIN", "ANY_KEY", "AUDITED", "DELETE", "NO_USER", "READ", "REQUIRED",
           "TENANT_WIDE", "USERS", "WRITE", "audited", "missing_scope", "needed", "recorded",
           "refused_request"]
