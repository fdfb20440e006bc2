"""``python -m streams worker``: the stream worker without the memstrata CLI.

Settings are loaded once here (:func:`memstrata.config.load_config`: the
environment and ``MEMSTRATA_CONFIG_FILE``) and handed down; the broker is
``MEMSTRATA_KAFKA_BROKERS`` or the one a running ``memstrata up`` recorded.
Benchmarks and tests start workers this way.
"""

from __future__ import annotations

import logging
import sys

from memstrata.config import ConfigError, load_config
from memstrata.kafka import KafkaSettings
from streams.runtime import StreamRuntime
from streams.settings import StreamSettings


def main(argv: list[str]) -> int:
    if argv[1:] != ["worker"]:
        print("usage: python -m streams worker", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING)
    try:
        config = load_config()
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    StreamRuntime(config.settings, stream=config.get(StreamSettings),
                  kafka=config.get(KafkaSettings)).run(embedded_broker=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
