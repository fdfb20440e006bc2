"""``memstrata.cli.help_text`` leans on Typer's parameter hooks: an upgrade that drops one
fails here by name, not as a silently uglier ``--help``."""

from __future__ import annotations

import typer

from memstrata.cli.help_text import HOOKS, tidy_help


def test_every_typer_hook_help_text_uses_still_exists():
    missing = [f"{cls.__module__}.{cls.__name__}.{name}" for cls, names in HOOKS.items()
               for name in names if not hasattr(cls, name)]
    assert not missing, (f"typer {typer.__version__} no longer has {missing}: "
                         "memstrata/cli/help_text.py must be adapted to the new API")


def test_help_text_imports_no_private_typer_or_click_name():
    from pathlib import Path

    import memstrata.cli as cli

    for path in Path(cli.__file__).parent.glob("*.py"):
        text = path.read_text()
        for private in ("from typer import _", "typer._", "import click", "from click"):
            code = [ln for ln in text.splitlines()
                    if private in ln and not ln.lstrip().startswith(("#", "``"))]
            assert not code, (path.name, code)


def test_tidied_help_shows_names_not_python_types(capsys, monkeypatch):
    app = typer.Typer(add_completion=False)

    @app.command()
    def load(file: str, count: int = 3, fast: bool = False,
             tags: list[str] = typer.Option(None)) -> None:  # noqa: B008 - Typer's style
        """Load FILE."""

    monkeypatch.setenv("COLUMNS", "120")
    command = tidy_help(typer.main.get_command(app))
    try:
        command.main(["--help"], prog_name="load")
    except SystemExit as exc:
        assert exc.code == 0
    out = capsys.readouterr().out
    assert "load [OPTIONS] FILE" in out, out
    for placeholder in ("{file}", "<str>", "<int>", "<bool>", "<list"):
        assert placeholder not in out, (placeholder, out)
    assert " N " in out.split("--count", 1)[1].splitlines()[0], out
