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
from memstrata.limits import TurnLimits
from memstrata.telemetry.setup import tracing_from_env
from streams.runtime import StreamRuntime
from streams.settings import StreamSettings, check_turns_fit


def main(argv: list[str]) -> int:
    if argv[1:] != ["worker"]:
        print("usage: python -m streams worker", file=sys.stderr)
        return 2
    # Timestamps: a worker's log is read beside the broker's and the other workers'.
    logging.basicConfig(level=logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        # Traces when OTEL_TRACES_EXPORTER / OTEL_EXPORTER_OTLP_ENDPOINT ask (docs/tracing.md).
        tracing_from_env("memstrata-stream-worker")
        config = load_config()
        stream, turns = config.get(StreamSettings), config.get(TurnLimits)
        check_turns_fit(stream, turns)
    except (ConfigError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 2
    StreamRuntime(config.settings, stream=stream, kafka=config.get(KafkaSettings),
                  turns=turns).run(embedded_broker=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
