"""How a LangGraph item lives in memstrata: one session per item, its value one message.

An item at ``namespace`` / ``key`` belongs to the user ``namespace[0]`` (the
tenant is the API key's) and is kept as one session of that user:

* the session id is ``lg:`` and a hash of the rest of the namespace and the key,
  so the same item always lands in the same session;
* its labels (set once, when the session is created) name the namespace
  (``lg.ns.1``, ``lg.ns.2``...), the key (``lg.key``) and the item's creation time
  (``lg.created``); :func:`located` reads them back;
* its one turn holds two messages: a user message with the value's text (what
  memstrata's summaries, search and answers read: the ``index`` fields' text, else
  the value's fields as ``name: value`` lines) and an assistant message with the
  value as JSON (what ``get`` returns, exactly); their message ids are hashed from
  the item and that JSON, so a re-sent put adds nothing;
* its session date is the time of the put (``updated_at``), which also anchors
  the relative dates memstrata resolves in the value's text.

Nothing here calls the service; :mod:`memstrata.integrations.langgraph` does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langgraph.store.base import InvalidNamespaceError, Item, MatchCondition, get_text_at_path

from memstrata.model import MAX_ID_LEN, SessionMeta, Turn, is_identifier

PREFIX = "lg:"
KEY_LABEL = "lg.key"
CREATED_LABEL = "lg.created"
NS_LABEL = "lg.ns."
#: The service's default limits on session labels (``MEMSTRATA_TURN_MAX_LABELS`` and
#: ``MEMSTRATA_TURN_MAX_LABEL_CHARS``): checked here so a bad item fails before any call.
MAX_LABELS = 16
MAX_LABEL_CHARS = 128
#: The user, then one label each for the rest of the namespace (key and time take two).
MAX_DEPTH = 1 + MAX_LABELS - 2
#: The service's default ``MEMSTRATA_TURN_MAX_CONTENT_CHARS``.
MAX_VALUE_CHARS = 20_000


def _digest(*parts: object) -> str:
    text = json.dumps(parts, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Location:
    """Where an item is: its user, its session, and the labels that name it."""

    namespace: tuple[str, ...]
    key: str

    @property
    def user(self) -> str:
        return self.namespace[0]

    @property
    def session_id(self) -> str:
        return PREFIX + _digest(list(self.namespace[1:]), self.key)

    def message_id(self, content: str, part: str) -> str:
        return PREFIX + _digest(list(self.namespace[1:]), self.key, content, part)

    def labels(self, created: datetime) -> dict[str, str]:
        out = {f"{NS_LABEL}{i}": label for i, label in enumerate(self.namespace) if i}
        out[KEY_LABEL] = self.key
        out[CREATED_LABEL] = created.isoformat()
        return out


def check_user(namespace: Sequence[str], what: str) -> str:
    """The user a namespace (or prefix) starts with, or InvalidNamespaceError saying why."""
    if not namespace or namespace[0] == "*":
        raise InvalidNamespaceError(
            f"{what}: must start with the memstrata user, as (user, ...); got {tuple(namespace)}"
            " (the tenant comes from the API key; memstrata reads one user's memory at a time)")
    user = namespace[0]
    if not is_identifier(user):
        raise InvalidNamespaceError(
            f"{what}[0]: user {user!r} is not a memstrata id (1 to {MAX_ID_LEN} letters, "
            "digits or ._:@/+-)")
    return user


def locate(namespace: Sequence[str], key: str) -> Location:
    """The item's :class:`Location`, or InvalidNamespaceError naming the field and the limit."""
    check_user(namespace, "namespace")
    if len(namespace) > MAX_DEPTH:
        raise InvalidNamespaceError(
            f"namespace: {len(namespace)} labels, limit is {MAX_DEPTH} (the user and one "
            f"session label each; MEMSTRATA_TURN_MAX_LABELS={MAX_LABELS})")
    for i, label in enumerate(namespace):
        if len(label) > MAX_LABEL_CHARS:
            raise InvalidNamespaceError(
                f"namespace[{i}]: {len(label)} characters, limit is {MAX_LABEL_CHARS}")
    if not isinstance(key, str) or len(key) > MAX_LABEL_CHARS:
        raise ValueError(f"key: {len(str(key))} characters, limit is {MAX_LABEL_CHARS}")
    return Location(tuple(namespace), key)


@dataclass(frozen=True)
class Written:
    """What a put writes: the text memstrata reads and the exact JSON ``get`` returns."""

    text: str
    value_json: str


def encode(where: Location, value: Mapping[str, Any],
           fields: Sequence[str] | None = None) -> Written:
    """The two message contents of a value, or ValueError naming the key and the limit."""
    try:
        content = json.dumps(dict(value), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"value of {where.key!r}: not JSON-serializable ({exc})") from None
    if len(content) > MAX_VALUE_CHARS:
        raise ValueError(f"value of {where.key!r}: {len(content)} characters of JSON, limit is "
                         f"{MAX_VALUE_CHARS} (MEMSTRATA_TURN_MAX_CONTENT_CHARS)")
    text = readable(json.loads(content), fields)[:MAX_VALUE_CHARS].strip() or content
    return Written(text, content)


def readable(value: dict[str, Any], fields: Sequence[str] | None) -> str:
    """The text of a value that memstrata indexes and answers from.

    ``fields``: LangGraph index paths (``"text"``, ``"tags[*]"``, ``"a.b"``); their
    texts, one a line. Without them, a value of one text field is that text, and
    any other value its top-level fields as ``name: value`` lines.
    """
    if fields and list(fields) != ["$"]:
        return "\n".join(t for f in fields for t in get_text_at_path(value, f))
    if len(value) == 1 and isinstance(next(iter(value.values())), str):
        return str(next(iter(value.values())))
    return "\n".join(f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
                     for k, v in value.items())


def located(meta: SessionMeta) -> Location | None:
    """The item a session holds, from its labels; None for a session that is not an item."""
    labels = meta.labels
    if not meta.session_id.startswith(PREFIX) or KEY_LABEL not in labels:
        return None
    rest: list[str] = []
    while f"{NS_LABEL}{len(rest) + 1}" in labels:
        rest.append(labels[f"{NS_LABEL}{len(rest) + 1}"])
    where = Location((meta.scope.user_id, *rest), labels[KEY_LABEL])
    return where if where.session_id == meta.session_id else None


def decode(meta: SessionMeta, turns: Sequence[Turn]) -> Item | None:
    """The item of a session read back (its last assistant message is the newest value)."""
    where = located(meta)
    messages = [m for t in turns for m in t.messages if m.role == "assistant"]
    if where is None or not messages:
        return None
    try:
        value = json.loads(messages[-1].content)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    updated = meta.session_date
    created_text = meta.labels.get(CREATED_LABEL)
    created = datetime.fromisoformat(created_text) if created_text else updated
    if updated is None or created is None:
        return None
    return Item(value=value, key=where.key, namespace=where.namespace, created_at=created,
                updated_at=updated)


def under(namespace: tuple[str, ...], prefix: Sequence[str]) -> bool:
    return namespace[:len(prefix)] == tuple(prefix)


def matches(value: Any, wanted: Any) -> bool:
    """LangGraph's filter rules: equal values, nested dicts, and ``$eq $ne $gt $gte $lt $lte``."""
    if isinstance(wanted, dict):
        if any(str(k).startswith("$") for k in wanted):
            return all(_compare(value, op, arg) for op, arg in wanted.items())
        return isinstance(value, dict) and all(matches(value.get(k), v)
                                               for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (isinstance(value, (list, tuple)) and len(value) == len(wanted)
                and all(matches(a, b) for a, b in zip(value, wanted)))
    return bool(value == wanted)


def _compare(value: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(value == arg)
    if op == "$ne":
        return bool(value != arg)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"filter: unknown operator {op!r} (use $eq $ne $gt $gte $lt $lte)")
    try:
        a, b = float(value), float(arg)
    except (TypeError, ValueError):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def fits(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    """Whether a namespace meets a prefix or suffix condition (``*`` matches any label)."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path))
    else:
        raise ValueError(f"match_type: {condition.match_type!r}, expected prefix or suffix")
    return all(p == "*" or n == p for n, p in pairs)
