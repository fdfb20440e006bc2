"""The Kafka wing: settings, security, end offsets, committed offsets and the clients.

- :mod:`~memstrata.kafka.settings`: :class:`KafkaSettings` (``MEMSTRATA_KAFKA_*``),
  the one settings class of every Kafka client, and the embedded broker's record
  in the data dir. It imports nothing else of this package.
- :mod:`~memstrata.kafka.security`: TLS/SASL keyword arguments, Faust credentials,
  and :func:`start_checked`, which names the setting a broker refused.
- :mod:`~memstrata.kafka.clients`: the one place that builds producers, consumers
  and admin clients from the settings.
- :mod:`~memstrata.kafka.ends`: end offsets as a fetch reports them.
- :mod:`~memstrata.kafka.ranges`: offset ranges read again by a consumer without a group.
- :mod:`~memstrata.kafka.offsets`: how far a consumer group is behind its topics.

Imports run one way, settings at the bottom (an import-linter contract in
pyproject.toml holds it). aiokafka is imported only when a client is built.
"""

from memstrata.kafka import clients
from memstrata.kafka.ends import log_end_offsets
from memstrata.kafka.offsets import (
    committed_offsets,
    group_lag,
    topic_ends,
    wait_committed,
    wait_committed_to,
)
from memstrata.kafka.security import (
    KafkaSecurityError,
    diagnose,
    faust_credentials,
    kafka_client_kwargs,
    ssl_context,
    start_checked,
)
from memstrata.kafka.settings import (
    BROKER_FILE,
    BrokerLogin,
    KafkaSettings,
    pid_alive,
    read_broker_file,
    recorded_broker,
    write_broker_file,
    write_private,
)

__all__ = [
    "BROKER_FILE", "BrokerLogin", "KafkaSecurityError", "KafkaSettings", "clients",
    "committed_offsets", "diagnose", "faust_credentials", "group_lag", "kafka_client_kwargs",
    "log_end_offsets", "pid_alive", "read_broker_file", "recorded_broker", "ssl_context",
    "start_checked", "topic_ends", "wait_committed", "wait_committed_to", "write_broker_file",
    "write_private",
]
