"""Byte-compile this repository's packages once, for the subprocesses the suite starts.

The suite starts well over a hundred Python processes (``memstrata`` commands,
``serve``, stream workers, Ray drivers), each importing these packages. Where
``PYTHONDONTWRITEBYTECODE`` is set (this machine's shells and CI set it), no
process writes ``__pycache__``, so each one compiles every module it imports
from source again: about 0.2 s of CPU per start. Python still *reads* cached
bytecode when the interpreter may not write it, so compiling once here, the
way an install or a first run without that variable would, saves that in each
process and changes nothing they run (a stale file is ignored: the cache is
checked against the source's mtime and size). ``__pycache__`` is git- and
docker-ignored.
"""

from __future__ import annotations

import compileall
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("memstrata", "query_service", "streams", "workers", "tests")


def compile_packages() -> None:
    """Write bytecode for the repository's packages unless the interpreter does it itself."""
    if not sys.dont_write_bytecode:
        return  # every process caches what it compiles on its own
    for name in PACKAGES:
        path = ROOT / name
        if path.is_dir():
            compileall.compile_dir(path, quiet=2, workers=1)
