"""Run as a script: open a data dir for writing, say so, and hold it until stdin closes.

Used by tests that need a real second process holding the embedded stores.
With ``--ingest FILE`` it ingests the file first (a writer doing real work).
"""

from __future__ import annotations

import sys
from pathlib import Path

from memstrata.config import Settings
from memstrata.ingest.formats import read_file
from memstrata.memory import Memory


def main() -> None:
    data_dir = Path(sys.argv[1])
    with Memory.open(Settings(data_dir=data_dir)) as memory:
        if len(sys.argv) > 3 and sys.argv[2] == "--ingest":
            memory.ingest(read_file(Path(sys.argv[3])).sessions)
        print("ready", flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
