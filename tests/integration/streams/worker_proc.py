"""Run one stream worker process for the integration tests (``python -m ...worker_proc``).

It runs the same :class:`~streams.runtime.StreamRuntime` as ``memstrata worker``,
with the settings taken from the environment (``MEMSTRATA_*``,
``MEMSTRATA_STREAM_*``, ``MEMSTRATA_KAFKA_*``).
"""

from __future__ import annotations

import logging

from memstrata.config import Settings
from streams.runtime import StreamRuntime
from streams.settings import KafkaSettings, StreamSettings


def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    StreamRuntime(Settings(), stream=StreamSettings(), kafka=KafkaSettings()).run(
        embedded_broker=False)


if __name__ == "__main__":
    main()
