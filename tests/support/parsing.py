"""``ast.parse`` for tests that read the repository's own sources.

CPython 3.11.7's AST state is not thread-safe: a parse in the test's thread while
a service thread left by an earlier test formats a traceback (3.11's traceback
parses source lines for its carets) can fail with ``SystemError: AST constructor
recursion depth mismatch``. That is an interpreter race, not a fault of the file
read, so the parse is tried again (a real syntax error is never retried).
"""

from __future__ import annotations

import ast
import time

_RACE = "AST constructor recursion depth mismatch"


def parse(source: str, filename: str = "<unknown>", attempts: int = 5) -> ast.Module:
    for attempt in range(attempts):
        try:
            return ast.parse(source, filename=filename)
        except SystemError as exc:
            if _RACE not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.01)
    raise AssertionError("unreachable")
