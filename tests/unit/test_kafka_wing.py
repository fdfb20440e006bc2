"""The Kafka wing (issue 32, item 2): one package, one place that builds the clients.

Before it, four modules sat loose at the core's root (``kafka`` and
``kafka_security`` importing each other) and 14 aiokafka clients were
constructed in 7 modules, each applying TLS/SASL by hand. The import-linter
contract "The Kafka wing" holds the one-way imports; these tests hold the rest.
"""

from __future__ import annotations

import re
from pathlib import Path

import memstrata.kafka

ROOT = Path(__file__).resolve().parents[2]
#: Where product and bench code lives (tests may build raw clients to probe a broker).
SCANNED = ("memstrata", "streams", "query_service", "workers", "bench")
BUILDS = re.compile(r"\b(AIOKafkaProducer|AIOKafkaConsumer|AIOKafkaAdminClient)\(")


def test_every_aiokafka_client_is_built_by_memstrata_kafka_clients() -> None:
    allowed = ROOT / "memstrata" / "kafka" / "clients.py"
    found = []
    for package in SCANNED:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == allowed:
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if BUILDS.search(line) and not line.lstrip().startswith("#"):
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "build it with memstrata.kafka.clients:\n" + "\n".join(found)
    assert BUILDS.search(allowed.read_text(encoding="utf-8"))  # the scan would see one


def test_the_old_module_paths_are_gone_and_the_package_exports_its_names() -> None:
    for old in ("kafka.py", "kafka_security.py", "kafka_ends.py", "offsets.py"):
        assert not (ROOT / "memstrata" / old).exists(), old
    for name in memstrata.kafka.__all__:
        assert getattr(memstrata.kafka, name) is not None, name
    from memstrata.kafka import KafkaSettings
    from memstrata.kafka.settings import KafkaSettings as defined

    assert KafkaSettings is defined
