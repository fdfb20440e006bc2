"""The gate's SCRAM server against aiokafka's SCRAM client (no broker, no network)."""

from __future__ import annotations

import base64

import pytest

from streams.broker_gate import (
    SASL_AUTHENTICATE,
    AuthFailed,
    ScramExchange,
    authenticate_bytes,
    authenticate_response,
    parse_request,
    scram_verifier,
)


def _client(user: str, password: str, mechanism: str = "SCRAM-SHA-256") -> object:
    from aiokafka.conn import ScramAuthenticator

    return ScramAuthenticator(loop=None, sasl_plain_username=user,
                              sasl_plain_password=password, sasl_mechanism=mechanism)


def _exchange(server: ScramExchange, client: object) -> bytes:
    first = client.first_message().encode()  # type: ignore[attr-defined]
    server_first = server.first(first)
    client.process_server_first_message(server_first.decode())  # type: ignore[attr-defined]
    return server.final(client.final_message().encode())  # type: ignore[attr-defined]


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_the_right_login_passes_and_the_server_proves_it_knows_the_verifier(
        mechanism: str) -> None:
    server = ScramExchange(mechanism, "memstrata", scram_verifier("s3cret", mechanism))
    client = _client("memstrata", "s3cret", mechanism)
    final = _exchange(server, client)
    client.process_server_final_message(final.decode())  # type: ignore[attr-defined]


@pytest.mark.parametrize("user,password", [("memstrata", "wrong"), ("mallory", "s3cret"),
                                           ("mallory", "wrong")])
def test_a_wrong_user_or_password_fails_at_the_same_step(user: str, password: str) -> None:
    server = ScramExchange("SCRAM-SHA-256", "memstrata",
                           scram_verifier("s3cret", "SCRAM-SHA-256"))
    with pytest.raises(AuthFailed):
        _exchange(server, _client(user, password))


@pytest.mark.parametrize("user,password,ok", [
    ("recycler-1", "one-off", True), ("recycler-1", "s3cret", False),
    ("memstrata", "one-off", False), ("memstrata", "s3cret", True)])
def test_a_recycles_one_off_login_passes_with_its_own_password_only(
        user: str, password: str, ok: bool) -> None:
    """The recycle's extra identity (streams.recycle) does not weaken the main login."""
    server = ScramExchange("SCRAM-SHA-256", "memstrata", scram_verifier("s3cret", "SCRAM-SHA-256"),
                           {"recycler-1": scram_verifier("one-off", "SCRAM-SHA-256")})
    if ok:
        _exchange(server, _client(user, password))
        assert server.username == user
    else:
        with pytest.raises(AuthFailed):
            _exchange(server, _client(user, password))


def test_a_replayed_or_forged_final_message_fails() -> None:
    verifier = scram_verifier("s3cret", "SCRAM-SHA-256")
    first = ScramExchange("SCRAM-SHA-256", "memstrata", verifier)
    client = _client("memstrata", "s3cret")
    _exchange(first, client)
    # The same client-final against a new exchange (another server nonce) is refused.
    second = ScramExchange("SCRAM-SHA-256", "memstrata", verifier)
    second.first(b"n,,n=memstrata,r=" + client._nonce[:32].encode())  # type: ignore[attr-defined]
    with pytest.raises(AuthFailed):
        second.final(client.final_message().encode())  # type: ignore[attr-defined]
    # A final message before the first, a channel binding, garbage: refused.
    with pytest.raises(AuthFailed):
        ScramExchange("SCRAM-SHA-256", "memstrata", verifier).final(b"c=biws,r=x,p=AAAA")
    for bad in (b"p=tls-unique,,n=memstrata,r=abc", b"\xff\xfe", b"n,,garbage"):
        with pytest.raises(AuthFailed):
            ScramExchange("SCRAM-SHA-256", "memstrata", verifier).first(bad)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_sasl_authenticate_frames_round_trip(version: int) -> None:
    """The request and response layouts of each SaslAuthenticate version aiokafka or
    librdkafka may send (v2 is a flexible version: compact fields and tagged fields)."""
    token = b"n,,n=memstrata,r=abc"
    header = (SASL_AUTHENTICATE.to_bytes(2, "big") + version.to_bytes(2, "big")
              + (7).to_bytes(4, "big", signed=True) + (3).to_bytes(2, "big") + b"cli")
    if version >= 2:
        body = header + b"\x00" + bytes([len(token) + 1]) + token + b"\x00"
    else:
        body = header + len(token).to_bytes(4, "big") + token
    req = parse_request(body)
    assert (req.api_key, req.version, req.correlation_id) == (SASL_AUTHENTICATE, version, 7)
    assert authenticate_bytes(req) == token
    out = authenticate_response(req, 0, None, b"r=xyz")
    assert int.from_bytes(out[:4], "big") == len(out) - 4
    assert out[4:8] == (7).to_bytes(4, "big")
    assert b"r=xyz" in out


def test_verifier_round_trips_through_json() -> None:
    from streams.broker_gate import ScramVerifier

    # "-" and "!" are outside base64's alphabet: the password cannot turn up in the
    # salt or keys by chance ("pw" once did).
    password = "not-the-pw!"
    v = scram_verifier(password, "SCRAM-SHA-512")
    assert ScramVerifier.from_json(v.to_json()) == v
    assert base64.b64decode(v.to_json()["salt"]) == v.salt
    assert password not in str(v.to_json())
