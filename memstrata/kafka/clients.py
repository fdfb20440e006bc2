"""The one place that builds memstrata's aiokafka clients from a :class:`KafkaSettings`.

Every producer, consumer and admin client of the stream worker, the query
service, ``memstrata produce``, the prewarmer and the benches comes from here,
so the broker list and TLS/SASL (:func:`memstrata.kafka.security.kafka_client_kwargs`)
are applied the same way everywhere and a new client cannot forget them. What
differs per use (acknowledgements, consumer group, auto-commit, request
timeout, linger...) is passed as an override; security and the bootstrap
address cannot be overridden, only set in the settings (or ``brokers``).

aiokafka (the ``kafka`` extra) is imported when a client is built, never when
this module is imported. The clients are returned unstarted: callers start
them (with :func:`memstrata.kafka.security.start_checked` where a refused
TLS/SASL setting should be named).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from memstrata.kafka.security import kafka_client_kwargs
from memstrata.kafka.settings import KafkaSettings

if TYPE_CHECKING:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient

__all__ = ["Acks", "admin", "consumer", "producer"]

#: A producer's acknowledgement: ``"all"`` (every in-sync replica), 1 (the leader), 0 (none).
Acks = Literal[0, 1, "all"]

#: Keywords the settings own: an override naming one is refused.
_OWNED = frozenset({"bootstrap_servers", "security_protocol", "ssl_context", "sasl_mechanism",
                    "sasl_plain_username", "sasl_plain_password"})


def _common(kafka: KafkaSettings, brokers: str | None, request_timeout_s: float | None,
            options: dict[str, Any]) -> dict[str, Any]:
    """Bootstrap address, TLS/SASL and the request timeout, merged with ``options``."""
    owned = sorted(_OWNED & options.keys())
    if owned:
        raise TypeError(f"{', '.join(owned)}: set by the Kafka settings "
                        "(MEMSTRATA_KAFKA_*), not per client")
    address = brokers or kafka.brokers
    if not address:
        raise ValueError("no broker: set MEMSTRATA_KAFKA_BROKERS")
    kwargs: dict[str, Any] = {"bootstrap_servers": address, **kafka_client_kwargs(kafka)}
    if request_timeout_s is not None:
        kwargs["request_timeout_ms"] = int(request_timeout_s * 1000)
    return {**kwargs, **options}


def producer(kafka: KafkaSettings, *, acks: Acks, brokers: str | None = None,
             request_timeout_s: float | None = None, **options: Any) -> AIOKafkaProducer:
    """An unstarted producer; ``acks`` is what each use's acknowledgement promises.

    ``brokers`` replaces ``kafka.brokers`` (an embedded broker's address is known only
    once it runs); ``request_timeout_s`` unset keeps aiokafka's default; ``options``
    go to ``AIOKafkaProducer`` as they are (``linger_ms``, ``partitioner``...).
    """
    from aiokafka import AIOKafkaProducer

    return AIOKafkaProducer(acks=acks, **_common(kafka, brokers, request_timeout_s, options))


def consumer(kafka: KafkaSettings, *topics: str, brokers: str | None = None,
             group: str | None = None, enable_auto_commit: bool = False,
             request_timeout_s: float | None = None, **options: Any) -> AIOKafkaConsumer:
    """An unstarted consumer of ``topics`` (none: assign partitions yourself).

    Group-less and committing nothing unless asked: memstrata commits an offset only
    once what it read is stored, so auto-commit is an explicit choice of the caller.
    """
    from aiokafka import AIOKafkaConsumer

    return AIOKafkaConsumer(*topics, group_id=group, enable_auto_commit=enable_auto_commit,
                            **_common(kafka, brokers, request_timeout_s, options))


def admin(kafka: KafkaSettings, *, brokers: str | None = None,
          request_timeout_s: float | None = None, **options: Any) -> AIOKafkaAdminClient:
    """An unstarted admin client (topics, the groups' committed offsets)."""
    from aiokafka.admin import AIOKafkaAdminClient

    return AIOKafkaAdminClient(**_common(kafka, brokers, request_timeout_s, options))
