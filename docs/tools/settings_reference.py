"""Write ``docs/settings-reference.md`` from the settings classes themselves.

Every ``MEMSTRATA_*`` variable, its default and the ``#:`` comment above its
field in the source, one table per namespace. ``tests/unit/test_docs_settings.py``
fails when the committed page differs from what this prints, so the page cannot
drift from the code. Run ``python docs/tools/settings_reference.py --write``
after changing a setting.
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_settings import BaseSettings

PAGE = Path(__file__).resolve().parents[1] / "settings-reference.md"


def _comments(cls: type) -> dict[str, str]:
    """The ``#:`` comment lines written just above each field of ``cls``."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    lines = source.splitlines()
    out: dict[str, str] = {}
    tree = ast.parse(source)
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    for node in body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            text: list[str] = []
            i = node.lineno - 2
            while i >= 0 and lines[i].strip().startswith("#:"):
                text.insert(0, lines[i].strip()[2:].strip())
                i -= 1
            if text:
                out[node.target.id] = " ".join(text)
    return out


def _default(field: Any) -> str:
    if field.is_required():
        return "(required)"
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if hasattr(value, "get_secret_value"):
        return "***"
    text = str(value.value if hasattr(value, "value") else value)
    text = text.replace(str(Path.home()), "~")  # the page must not depend on who built it
    return f"`{text}`" if text else '`""`'


def _table(cls: type[BaseSettings]) -> list[str]:
    prefix = str(cls.model_config.get("env_prefix") or "").upper()
    notes: dict[str, str] = {}
    for klass in reversed(cls.__mro__):  # the core's fields are declared in its groups
        if issubclass(klass, BaseModel) and klass not in (BaseModel, BaseSettings):
            notes.update(_comments(klass))
    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    for name, field in cls.model_fields.items():
        meaning = (field.description or notes.get(name, "")).replace("|", "\\|")
        rows.append(f"| `{prefix}{name.upper()}` | {_default(field)} | {meaning} |")
    return rows


def render() -> str:
    from memstrata.config import Settings, settings_namespaces

    found, _failed = settings_namespaces()
    out = ["# Settings reference", "",
           "Generated from the settings classes by `docs/tools/settings_reference.py`;",
           "a test fails when this page and the code disagree. How the values are",
           "loaded (environment, TOML file, precedence, errors): [configuration](configuration.md).",
           "", "## Core (`memstrata.config.Settings`)", ""]
    out += _table(Settings)
    for ns in sorted(found):
        cls = found[ns]
        out += ["", f"## `{ns}` (`{cls.__module__}.{cls.__qualname__}`)", ""]
        out += _table(cls)
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    text = render()
    if "--write" in sys.argv:
        PAGE.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
