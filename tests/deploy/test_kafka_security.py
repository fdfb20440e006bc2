"""Kafka TLS and SASL settings reach every client, and refusals name the setting.

The login refusals come from FakeSaslBroker (a TEST DOUBLE of a broker's SASL
exchange, tests/deploy/fake_sasl_broker.py) over real sockets and real TLS.
"""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("aiokafka", reason="the kafka extra")

from memstrata.kafka.security import (
    KafkaSecurityError,
    faust_credentials,
    kafka_client_kwargs,
)
from memstrata.kafka.settings import KafkaSettings
from tests.deploy.fake_sasl_broker import FakeSaslBroker

KAFKA_ENV = ("SECURITY_PROTOCOL", "SASL_MECHANISM", "SASL_USERNAME", "SASL_PASSWORD",
             "SSL_CAFILE", "SSL_CERTFILE", "SSL_KEYFILE", "SSL_CHECK_HOSTNAME", "BROKERS")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KAFKA_ENV:
        monkeypatch.delenv("MEMSTRATA_KAFKA_" + name, raising=False)


def _self_signed(directory: Path, name: str) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("no openssl to make a test certificate")
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", f"/CN={name}", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return cert, key


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("certs")
    broker_cert, broker_key = _self_signed(d, "broker")
    other_ca, _ = _self_signed(d, "other-ca")
    return {"broker_cert": broker_cert, "broker_key": broker_key, "other_ca": other_ca}


@pytest.fixture
def tls_broker(certs: dict[str, Path]) -> Iterator[FakeSaslBroker]:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(certs["broker_cert"]), str(certs["broker_key"]))
    with FakeSaslBroker(ctx) as broker:
        yield broker


def test_sasl_ssl_scram_settings_reach_an_aiokafka_client(certs: dict[str, Path],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from aiokafka import AIOKafkaProducer

    for k, v in {"SECURITY_PROTOCOL": "SASL_SSL", "SASL_MECHANISM": "SCRAM-SHA-512",
                 "SASL_USERNAME": "memstrata", "SASL_PASSWORD": "s3cret",
                 "SSL_CAFILE": str(certs["broker_cert"])}.items():
        monkeypatch.setenv("MEMSTRATA_KAFKA_" + k, v)
    kwargs = kafka_client_kwargs(KafkaSettings())
    assert kwargs["security_protocol"] == "SASL_SSL"
    assert kwargs["sasl_mechanism"] == "SCRAM-SHA-512"
    assert (kwargs["sasl_plain_username"], kwargs["sasl_plain_password"]) == ("memstrata", "s3cret")
    assert isinstance(kwargs["ssl_context"], ssl.SSLContext)
    assert kwargs["ssl_context"].verify_mode == ssl.CERT_REQUIRED

    async def build() -> AIOKafkaProducer:
        producer = AIOKafkaProducer(bootstrap_servers="127.0.0.1:1", **kwargs)
        await producer.stop()
        return producer

    client = asyncio.run(build()).client
    assert client._security_protocol == "SASL_SSL"
    assert client._sasl_mechanism == "SCRAM-SHA-512"
    assert client._sasl_plain_password == "s3cret"



def test_every_client_built_from_the_settings_carries_their_tls_and_sasl(
        certs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """memstrata.kafka.clients builds producers, consumers and admins: all get the security."""
    from memstrata.kafka import clients

    _env(monkeypatch, security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-256",
         sasl_username="svc", sasl_password="pw", ssl_cafile=str(certs["broker_cert"]))
    kafka = KafkaSettings(brokers="127.0.0.1:1")

    async def build() -> list[object]:
        made = [clients.producer(kafka, acks="all"), clients.consumer(kafka, "t", group="g"),
                clients.admin(kafka, request_timeout_s=3)]
        inner = [made[0].client, made[1]._client, made[2]._client]
        await made[0].stop()
        await made[1].stop()
        await made[2].close()
        return inner

    for client in asyncio.run(build()):
        assert client._bootstrap_servers == "127.0.0.1:1"  # type: ignore[attr-defined]
        assert client._security_protocol == "SASL_SSL"  # type: ignore[attr-defined]
        assert client._sasl_mechanism == "SCRAM-SHA-256"  # type: ignore[attr-defined]
        assert client._sasl_plain_password == "pw"  # type: ignore[attr-defined]
        assert isinstance(client._ssl_context, ssl.SSLContext)  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="security_protocol: set by the Kafka settings"):
        clients.admin(kafka, security_protocol="PLAINTEXT")
    with pytest.raises(ValueError, match="MEMSTRATA_KAFKA_BROKERS"):
        clients.admin(KafkaSettings())

def test_the_faust_app_gets_the_same_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("faust", reason="the kafka extra")
    import faust

    monkeypatch.setenv("MEMSTRATA_KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    monkeypatch.setenv("MEMSTRATA_KAFKA_SASL_MECHANISM", "SCRAM-SHA-256")
    monkeypatch.setenv("MEMSTRATA_KAFKA_SASL_USERNAME", "svc")
    monkeypatch.setenv("MEMSTRATA_KAFKA_SASL_PASSWORD", "pw")
    creds = faust_credentials(KafkaSettings())
    assert isinstance(creds, faust.SASLCredentials)
    assert creds.mechanism.value == "SCRAM-SHA-256" and creds.password == "pw"
    assert faust_credentials(KafkaSettings(security_protocol="PLAINTEXT")) is None


def test_plaintext_is_the_default_and_adds_nothing() -> None:
    assert kafka_client_kwargs(KafkaSettings()) == {"security_protocol": "PLAINTEXT"}


def test_bad_combinations_name_the_setting(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import ValidationError

    monkeypatch.setenv("MEMSTRATA_KAFKA_SECURITY_PROTOCOL", "SASL_SSL")
    monkeypatch.setenv("MEMSTRATA_KAFKA_SASL_USERNAME", "svc")
    with pytest.raises(ValidationError, match="MEMSTRATA_KAFKA_SASL_PASSWORD"):
        KafkaSettings()
    monkeypatch.setenv("MEMSTRATA_KAFKA_SASL_PASSWORD", "pw")
    monkeypatch.setenv("MEMSTRATA_KAFKA_SSL_CAFILE", str(tmp_path / "missing.pem"))
    with pytest.raises(ValidationError, match="MEMSTRATA_KAFKA_SSL_CAFILE: no such file"):
        KafkaSettings()
    monkeypatch.setenv("MEMSTRATA_KAFKA_SASL_MECHANISM", "MD5")
    with pytest.raises(ValidationError, match="sasl_mechanism"):
        KafkaSettings()


def test_the_settings_are_known_to_the_config_check(monkeypatch: pytest.MonkeyPatch) -> None:
    from memstrata.config import unknown_variables

    env = {"MEMSTRATA_KAFKA_SECURITY_PROTOCOL": "SSL", "MEMSTRATA_KAFKA_SSL_CAFILE": "/x",
           "MEMSTRATA_KAFKA_SASL_PASSWORD": "pw", "MEMSTRATA_OPENSEARCH_CA_FILE": "/y",
           "MEMSTRATA_QDRANT_CA_FILE": "/z", "MEMSTRATA_KAFKA_SASL_PASWORD": "typo"}
    assert unknown_variables(env) == ["MEMSTRATA_KAFKA_SASL_PASWORD"]


def test_memstrata_config_masks_the_kafka_password(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from memstrata.cli import _register_subcommands, app

    _register_subcommands()
    monkeypatch.setenv("MEMSTRATA_KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    monkeypatch.setenv("MEMSTRATA_KAFKA_SASL_USERNAME", "svc")
    monkeypatch.setenv("MEMSTRATA_KAFKA_SASL_PASSWORD", "hunter2-secret")
    out = CliRunner().invoke(app, ["config"]).output
    assert "MEMSTRATA_KAFKA_SASL_PASSWORD=***" in out
    assert "MEMSTRATA_KAFKA_SASL_USERNAME=svc" in out
    assert "hunter2-secret" not in out


def _env(monkeypatch: pytest.MonkeyPatch, **values: str) -> None:
    for k, v in values.items():
        monkeypatch.setenv("MEMSTRATA_KAFKA_" + k.upper(), v)


def test_untrusted_broker_certificate_names_the_ca_setting(
        tls_broker: FakeSaslBroker, certs: dict[str, Path],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The service's producer, `produce` and the worker's topic setup all say why."""
    from query_service.publish import KafkaPublisher
    from streams.broker import BrokerError, ensure_topics
    from streams.produce import StreamProducer
    from streams.topics import TopicSpec

    _env(monkeypatch, security_protocol="SSL", ssl_cafile=str(certs["other_ca"]))
    want = f"not trusted by MEMSTRATA_KAFKA_SSL_CAFILE ({certs['other_ca']})"

    async def publisher() -> None:
        await KafkaPublisher(KafkaSettings(), tls_broker.address).start()

    async def producer() -> None:
        await StreamProducer(tls_broker.address, request_timeout_s=5,
                             kafka=KafkaSettings()).start()

    with pytest.raises(KafkaSecurityError, match=want.replace("(", r"\(").replace(")", r"\)")):
        asyncio.run(publisher())
    with pytest.raises(KafkaSecurityError, match="MEMSTRATA_KAFKA_SSL_CAFILE"):
        asyncio.run(producer())
    with pytest.raises(BrokerError, match="MEMSTRATA_KAFKA_SSL_CAFILE"):
        asyncio.run(ensure_topics(tls_broker.address, [TopicSpec("t", 1, 1)], timeout_s=5,
                                  kafka=KafkaSettings()))


def test_wrong_password_names_the_sasl_settings(
        tls_broker: FakeSaslBroker, certs: dict[str, Path],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Trusted TLS (the CA file is the broker's certificate), then a refused login."""
    from query_service.publish import KafkaPublisher

    _env(monkeypatch, security_protocol="SASL_SSL", sasl_mechanism="PLAIN",
         sasl_username="memstrata", sasl_password="wrong-password",
         ssl_cafile=str(certs["broker_cert"]))

    async def publisher() -> None:
        await KafkaPublisher(KafkaSettings(), tls_broker.address).start()

    with pytest.raises(KafkaSecurityError) as info:
        asyncio.run(publisher())
    text = str(info.value)
    assert "refused SASL PLAIN login of MEMSTRATA_KAFKA_SASL_USERNAME='memstrata'" in text
    assert "MEMSTRATA_KAFKA_SASL_PASSWORD" in text and "wrong-password" not in text
    assert any("memstrata" in login for login in tls_broker.logins)  # TLS worked, login tried
