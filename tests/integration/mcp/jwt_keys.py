"""Signing keys made in the test, a JWKS of their public halves, and tokens signed with them.

Nothing is fetched: the identity provider is this module. ES256 (P-256) keys
are generated in microseconds, so every test module can make its own.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

ISSUER = "https://idp.test.invalid/"
AUDIENCE = "memstrata-mcp"


@dataclass
class Idp:
    """One signing key (``kid``) and a stranger's key that no JWKS lists."""

    kid: str = "k1"
    key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    stranger: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))

    def jwks(self) -> dict[str, Any]:
        public = json.loads(ECAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**public, "kid": self.kid, "use": "sig", "alg": "ES256"}]}

    def write_jwks(self, path: Path) -> Path:
        path.write_text(json.dumps(self.jwks()))
        return path

    def claims(self, **over: Any) -> dict[str, Any]:
        now = int(time.time())
        base: dict[str, Any] = {"iss": ISSUER, "aud": AUDIENCE, "sub": "agent-1",
                                "iat": now, "exp": now + 300, "tenant": "acme",
                                "user": "maya", "scope": "read write"}
        base.update(over)
        return {k: v for k, v in base.items() if v is not None}

    def token(self, *, signer: Any = None, headers: dict[str, Any] | None = None,
              algorithm: str = "ES256", **over: Any) -> str:
        """A token with the default claims, ``over`` changing them (None drops one)."""
        return jwt.encode(self.claims(**over), signer if signer is not None else self.key,
                          algorithm=algorithm, headers={"kid": self.kid, **(headers or {})})
