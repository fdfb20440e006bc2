"""Conventional placeholders in ``--help``: ``FILE`` and ``TEXT``, not ``{file}`` and ``<str>``.

Typer 0.29 labels every parameter with its Python type (``<str>``, ``<bool>``
on flags, ``{file}`` for a required argument), which reads like a template
left unfilled. :func:`tidy_help` walks the finished command tree once, so
commands added by any module get the same treatment: arguments and options
show an upper-case name, flags show nothing.
"""

from __future__ import annotations

from typer import _click
from typer.core import TyperArgument, TyperOption

_TYPE_NAMES = {"str": "TEXT", "int": "N", "float": "NUMBER", "path": "PATH",
               "file": "FILE", "dir": "DIR", "datetime": "DATE"}


class _Argument(TyperArgument):
    """An argument shown by its name alone, in the usage line and in the table."""

    def _usage_display_name(self) -> str:
        return self.display_name_raw if self.required else f"[{self.display_name_raw}]"

    def display_type_rich(self, ctx: _click.Context) -> str | None:
        return None


def _option_label(option: TyperOption, ctx: _click.Context) -> str:
    """``<str>`` -> TEXT, ``<int range>`` -> N, ``<list[str]>`` -> TEXT..., choices kept."""
    label = option.display_type(ctx).strip("<>")
    many = label.startswith("list[")
    label = label.removeprefix("list[").removesuffix("]").removesuffix(" range")
    if "|" in label:
        return f"[{label}]"
    return _TYPE_NAMES.get(label, label.upper()) + ("..." if many else "")


def _tidy_params(command: _click.Command) -> None:
    ctx = _click.Context(command)
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


def tidy_help(command: _click.Command) -> _click.Command:
    """Give every command under ``command`` conventional placeholders; returns ``command``."""
    _tidy_params(command)
    for sub in getattr(command, "commands", {}).values():
        tidy_help(sub)
    return command
