"""Conventional placeholders in ``--help``: ``FILE`` and ``TEXT``, not ``{file}`` and ``<str>``.

Typer 0.29 labels every parameter with its Python type (``<str>``, ``<bool>``
on flags, ``{file}`` for a required argument), which reads like a template
left unfilled. :func:`tidy_help` walks the finished command tree once, so
commands added by any module get the same treatment: arguments and options
show an upper-case name, flags show nothing.

Only public names are used: ``typer.Context``, ``typer.main.get_command``'s
tree, the ``typer.core`` parameter classes and the Click parameter API they
keep (``metavar``, ``get_usage_pieces``, ``display_type``,
``display_type_rich``). Typer ships its own copy of Click as the private
``typer._click``; nothing here imports it (the floor in pyproject.toml is the
version these hooks were checked on). ``tests/unit/test_help_text.py`` fails,
naming the missing hook, if an upgrade drops one.
"""

from __future__ import annotations

import re
from typing import Any

from typer import Context
from typer.core import TyperArgument, TyperOption

#: The hooks this module overrides or calls, by class (checked by the unit test).
HOOKS: dict[type, tuple[str, ...]] = {
    TyperArgument: ("get_usage_pieces", "display_type_rich", "display_name_raw"),
    TyperOption: ("display_type", "display_type_rich"),
}

_TYPE_NAMES = {"str": "TEXT", "int": "N", "float": "NUMBER", "path": "PATH",
               "file": "FILE", "dir": "DIR", "datetime": "DATE"}


class _Argument(TyperArgument):
    """An argument shown by its name alone, in the usage line and in the table."""

    def get_usage_pieces(self, ctx: Any) -> list[str]:
        return [self.display_name_raw if self.required else f"[{self.display_name_raw}]"]

    def display_type_rich(self, ctx: Any) -> str | None:
        return None


def _option_label(option: TyperOption, ctx: Any) -> str:
    """``<str>`` -> TEXT, ``<int range>`` -> N, ``<list[str]>`` -> TEXT..., choices kept."""
    label = option.display_type(ctx).strip("<>")
    many = label.startswith("list[")
    label = label.removeprefix("list[").removesuffix("]").removesuffix(" range")
    if "|" in label:
        return f"[{label}]"
    return _TYPE_NAMES.get(label, label.upper()) + ("..." if many else "")


def _tidy_params(command: Any) -> None:
    ctx = Context(command)
    help_option = command.get_help_option(ctx)
    params = [*command.params, *([help_option] if help_option is not None else [])]
    for param in params:
        if isinstance(param, TyperArgument):
            param.__class__ = _Argument
            if param.metavar is None:
                many = "..." if param.nargs != 1 else ""
                param.metavar = (param.name or "value").upper() + many
        elif isinstance(param, TyperOption) and param.metavar is None:
            param.metavar = "" if param.is_flag else _option_label(param, ctx)


_LITERAL = re.compile(r"``([^`]+)``")
_LIST_LINE = re.compile(r"^\s*(?:[-*•]|\d+\.)\s|^\s{2,}")


def reflow(text: str) -> str:
    """Docstring text as the terminal should show it.

    Rich keeps a docstring's line breaks, so a paragraph wrapped at 79 columns
    in the source breaks mid-sentence on a narrower terminal: each paragraph is
    joined into one line for the terminal to wrap (lists and indented blocks
    keep their lines). Sphinx's double backquotes become single ones.
    """
    text = _LITERAL.sub(r"`\1`", text)
    out = []
    for para in re.split(r"\n\s*\n", text.strip()):
        lines = para.splitlines()
        if any(_LIST_LINE.match(ln) for ln in lines[1:]) or para.lstrip().startswith("\b"):
            out.append(para)
        else:
            out.append(" ".join(ln.strip() for ln in lines))
    return "\n\n".join(out)


def tidy_help(command: Any) -> Any:
    """Give every command under ``command`` conventional placeholders and reflowed help text;
    returns ``command``."""
    if command.help:
        command.help = reflow(command.help)
    _tidy_params(command)
    for sub in getattr(command, "commands", {}).values():
        tidy_help(sub)
    return command
