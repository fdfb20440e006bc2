"""Every call carries an API key; its tenant is the only tenant the call can touch.

(The check itself runs in :class:`~query_service.interceptors.call.CallInterceptor`.)

The key comes in metadata ``x-api-key`` (or ``authorization: Bearer <key>``).
A client may also send ``x-memstrata-tenant`` to say which tenant it expects:
a mismatch is refused (PERMISSION_DENIED), it never selects a tenant. Health
checks and reflection need no key. Keys are never logged, and no refusal's
message names the keys file or quotes it (a damaged file keeps the last good
keys in force: :class:`~query_service.keys.KeyRing`).
"""

from __future__ import annotations

from typing import Any

KEY_HEADER = "x-api-key"
TENANT_HEADER = "x-memstrata-tenant"

NO_KEY = "missing API key: send it in metadata 'x-api-key' (or 'authorization: Bearer ...')"
BAD_KEY = "invalid or revoked API key"
#: No file path or content: a caller learns nothing about the server's files.
KEYS_UNAVAILABLE = "the service cannot check API keys right now; retry later"


def key_from_metadata(metadata: Any) -> str | None:
    for k, v in metadata or ():
        if k == KEY_HEADER and v:
            return str(v)
        if k == "authorization" and str(v).lower().startswith("bearer "):
            return str(v)[7:].strip() or None
    return None
