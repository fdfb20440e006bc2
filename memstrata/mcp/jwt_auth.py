"""Optional JWT bearer tokens: a platform's identity provider vouches for tenant, user, scopes.

When ``MEMSTRATA_MCP_JWT_JWKS_FILE`` (or ``_JWKS_URL``) is set, a bearer token
that is not a memstrata API key is read as a JWT and checked with PyJWT:
the header's ``alg`` must be one of ``MEMSTRATA_MCP_JWT_ALGORITHMS`` (public-key
algorithms only, so ``none`` and HMAC-with-a-public-key forgeries never get as
far as a signature check), the signature must verify against the JWKS key
named by ``kid``, ``exp`` must lie ahead and ``nbf``/``iat`` behind (with
``MEMSTRATA_MCP_JWT_LEEWAY_S`` of skew), ``iss`` and ``aud`` must be the
configured ones. The claims then give the tenant (always), the user the token
is bound to (required unless ``MEMSTRATA_MCP_JWT_USER_REQUIRED=false``) and the
scopes (``read``, ``write``, ``delete``). A refusal is a :class:`TokenRefused`
that names the check that failed; the HTTP layer answers it with 401.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from pydantic import TypeAdapter, ValidationError

from memstrata.mcp.access import CannotVerify, KeyVerifier
from memstrata.mcp.settings import McpSettings
from memstrata.model import Identifier

__all__ = ["BearerVerifier", "JwtClaims", "JwtVerifier", "TOOL_SCOPES", "TokenRefused",
           "looks_like_jwt"]

log = logging.getLogger(__name__)

#: The scopes a token may carry; others in its scopes claim are ignored.
TOOL_SCOPES = frozenset({"read", "write", "delete"})
#: Longer tokens are refused unread.
MAX_JWT_CHARS = 16_384
_IDENTIFIER: TypeAdapter[str] = TypeAdapter(Identifier)


class TokenRefused(Exception):
    """A bearer JWT failed a check; ``check`` names it (``exp``, ``iss``, ``signature``...)."""

    def __init__(self, check: str, message: str) -> None:
        super().__init__(f"{check}: {message}")
        self.check = check


@dataclass(frozen=True)
class JwtClaims:
    """What a verified token grants."""

    tenant: str
    #: Set: the token acts for this user only.
    user: str | None
    scopes: frozenset[str]
    subject: str | None
    issuer: str


def looks_like_jwt(token: str) -> bool:
    """Three base64url segments (a compact JWS); a memstrata key never looks like one."""
    return token.count(".") == 2 and not token.startswith("msk_")


class _JwksFile:
    """The key set of a file, read again when the file changes (key rotation)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._keys: jwt.PyJWKSet | None = None

    def keys(self) -> jwt.PyJWKSet:
        try:
            st = self.path.stat()
            stamp = (st.st_mtime_ns, st.st_size)
            if self._keys is None or stamp != self._stamp:
                self._keys = jwt.PyJWKSet.from_json(self.path.read_text())
                self._stamp = stamp
        except (OSError, jwt.PyJWKSetError, ValueError) as exc:
            if self._keys is None:
                log.error("JWKS file %s: cannot read a key set from it (%s)", self.path, exc)
                raise CannotVerify(503, f"the server's JWKS file cannot be read ({exc})") \
                    from None
            log.warning("JWKS file %s changed but cannot be read (%s); keeping the last "
                        "good keys", self.path, exc)
        return self._keys

    def key_for(self, kid: str | None) -> Any:
        keys = self.keys()
        if kid is None:
            if len(keys.keys) == 1:
                return keys.keys[0].key
            raise TokenRefused("kid", "the token names no key id and the JWKS holds "
                                      f"{len(keys.keys)} keys")
        for k in keys.keys:
            if k.key_id == kid:
                return k.key
        raise TokenRefused("kid", f"no key {kid!r} in the JWKS")


class _JwksUrl:
    """The key set behind a URL (PyJWKClient: cached, refetched for an unknown ``kid``)."""

    def __init__(self, url: str, refresh_s: float) -> None:
        self.client = jwt.PyJWKClient(url, cache_keys=True, lifespan=refresh_s, timeout=5)

    def key_for(self, token: str) -> Any:
        try:
            return self.client.get_signing_key_from_jwt(token).key
        except jwt.PyJWKClientConnectionError as exc:
            raise CannotVerify(503, f"the JWKS could not be fetched ({exc}); retry later") \
                from None
        except jwt.PyJWKClientError as exc:
            raise TokenRefused("kid", str(exc)) from None


class JwtVerifier:
    """Checks a bearer JWT (see the module's text) and returns what it grants."""

    def __init__(self, settings: McpSettings) -> None:
        if not settings.jwt_enabled:
            raise ValueError("JWT bearer tokens are off: no JWKS is configured")
        self.settings = settings
        self.algorithms = list(settings.jwt_algorithms)
        self._file = _JwksFile(settings.jwt_jwks_file) if settings.jwt_jwks_file else None
        self._url = (_JwksUrl(settings.jwt_jwks_url, settings.jwt_jwks_refresh_s)
                     if settings.jwt_jwks_url else None)

    async def verify(self, token: str) -> JwtClaims:
        """The token's grant; raises :class:`TokenRefused` naming the failed check."""
        if self._url is not None:  # may fetch over HTTP: off the event loop
            return await asyncio.to_thread(self.verify_now, token)
        return self.verify_now(token)

    def verify_now(self, token: str) -> JwtClaims:
        if len(token) > MAX_JWT_CHARS:
            raise TokenRefused("size", f"longer than {MAX_JWT_CHARS} characters")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.DecodeError as exc:
            raise TokenRefused("format", f"not a signed JWT ({exc})") from None
        alg = header.get("alg")
        if alg not in self.algorithms:
            raise TokenRefused("alg", f"{alg!r} is not accepted (accepted: "
                                      f"{', '.join(self.algorithms)})")
        key = (self._file.key_for(header.get("kid")) if self._file is not None
               else self._url.key_for(token))  # type: ignore[union-attr]
        s = self.settings
        try:
            claims = jwt.decode(
                token, key, algorithms=self.algorithms, audience=s.jwt_audience,
                issuer=s.jwt_issuer, leeway=s.jwt_leeway_s,
                options={"require": ["exp", "iss", "aud"], "verify_signature": True})
        except jwt.ExpiredSignatureError:
            raise TokenRefused("exp", "the token has expired") from None
        except jwt.ImmatureSignatureError as exc:
            raise TokenRefused("nbf", f"the token is not valid yet ({exc})") from None
        except jwt.InvalidIssuedAtError:
            raise TokenRefused("iat", "the token is issued in the future") from None
        except jwt.InvalidIssuerError:
            raise TokenRefused("iss", f"the issuer is not {s.jwt_issuer!r}") from None
        except jwt.InvalidAudienceError:
            raise TokenRefused("aud", f"the audience does not include {s.jwt_audience!r}") \
                from None
        except jwt.MissingRequiredClaimError as exc:
            raise TokenRefused(exc.claim, "missing claim") from None
        except jwt.InvalidSignatureError:
            raise TokenRefused("signature", "does not verify against the JWKS key") from None
        except jwt.InvalidAlgorithmError as exc:
            raise TokenRefused("alg", str(exc)) from None
        except jwt.InvalidTokenError as exc:
            raise TokenRefused("token", str(exc)) from None
        return self._grant(claims)

    def _grant(self, claims: dict[str, Any]) -> JwtClaims:
        s = self.settings
        tenant = self._identifier(claims, s.jwt_tenant_claim, required=True)
        user = self._identifier(claims, s.jwt_user_claim, required=s.jwt_user_required)
        raw = claims.get(s.jwt_scopes_claim)
        if raw is None:
            raise TokenRefused(s.jwt_scopes_claim, "missing claim (the token's scopes)")
        if isinstance(raw, str):
            names = raw.split()
        elif isinstance(raw, list) and all(isinstance(x, str) for x in raw):
            names = raw
        else:
            raise TokenRefused(s.jwt_scopes_claim, "must be a space-separated string or a "
                                                   "list of strings")
        sub = claims.get("sub")
        return JwtClaims(tenant=tenant, user=user, scopes=frozenset(names) & TOOL_SCOPES,
                         subject=sub if isinstance(sub, str) else None,
                         issuer=str(claims["iss"]))

    @staticmethod
    def _identifier(claims: dict[str, Any], name: str, *, required: bool) -> Any:
        value = claims.get(name)
        if value is None:
            if required:
                raise TokenRefused(name, "missing claim")
            return None
        try:
            return _IDENTIFIER.validate_python(value)
        except ValidationError:
            raise TokenRefused(name, "must be 1 to 128 letters, digits or . _ : @ / + - "
                                     "characters") from None


class BearerVerifier:
    """The SDK's ``TokenVerifier``: a JWT when JWTs are on and the token looks like one,
    else a memstrata API key (:class:`~memstrata.mcp.access.KeyVerifier`)."""

    def __init__(self, keys: KeyVerifier, jwts: JwtVerifier | None) -> None:
        self.keys = keys
        self.jwts = jwts

    async def verify_token(self, token: str):  # -> AccessToken | None (SDK type: lazy import)
        if self.jwts is None or not looks_like_jwt(token):
            return await self.keys.verify_token(token)
        from mcp.server.auth.provider import AccessToken

        grant = await self.jwts.verify(token)
        return AccessToken(token=token, client_id=f"jwt:{grant.subject or grant.tenant}",
                           scopes=sorted(grant.scopes), subject=grant.subject,
                           claims={"tenant": grant.tenant, "user": grant.user, "via": "jwt",
                                   "iss": grant.issuer})
