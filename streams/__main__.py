"""``python -m streams worker``: the stream worker without the memstrata CLI.

Settings come from the environment (``MEMSTRATA_*``, ``MEMSTRATA_STREAM_*``,
``MEMSTRATA_KAFKA_*``); the broker is ``MEMSTRATA_KAFKA_BROKERS`` or the one a
running ``memstrata up`` recorded. Benchmarks and tests start workers this way.
"""

from __future__ import annotations

import logging
import sys

from memstrata.config import ConfigError, load_settings, register_namespace
from memstrata.limits import TurnLimits
from streams.runtime import StreamRuntime
from streams.settings import KafkaSettings, StreamSettings, check_turns_fit


def main(argv: list[str]) -> int:
    if argv[1:] != ["worker"]:
        print("usage: python -m streams worker", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING)
    register_namespace(StreamSettings)
    register_namespace(KafkaSettings)
    try:
        settings = load_settings()
        stream, turns = StreamSettings(), TurnLimits()
        check_turns_fit(stream, turns)
    except (ConfigError, ValueError) as exc:  # ValidationError is a ValueError
        print(exc, file=sys.stderr)
        return 2
    StreamRuntime(settings, stream=stream, kafka=KafkaSettings(), turns=turns).run(
        embedded_broker=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
