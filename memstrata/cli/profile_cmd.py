"""``memstrata profile``: a user's entity and persona profiles as Markdown.

Reads the doc store only (SQLite opened read-only), so it runs beside a
writer and loads no model. Profiles are kept by the write path
(``MEMSTRATA_PROFILES``); a data dir written with them off has none.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Optional

import typer
from rich.markdown import Markdown
from rich.markup import escape

from memstrata.cli import DataDir, User, _scope, _settings, app, console, err, show_scope
from memstrata.cli.access import DEFAULT_TENANT, TenantOrKey


@app.command()
def profile(
    entity: Annotated[Optional[str], typer.Argument(
        help="Who: a name, an alias, a relation ('my sister') or 'me'; omitted: list the "
             "entities.", show_default=False)] = None,
    tenant: TenantOrKey = None,
    user: User = ...,  # type: ignore[assignment]
    everything: Annotated[bool, typer.Option(
        "--all", help="List names of unknown kind too (mentioned, never described).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the stored views as JSON.")
                       ] = False,
    raw_markdown: Annotated[bool, typer.Option("--plain", help="Print Markdown source.")
                            ] = False,
    data_dir: DataDir = None,
) -> None:
    """Print a user's profiles: one entity's sections with every bullet's sources, or the
    list of entities with their kind, relation and aliases."""
    from memstrata.profiles.book import ProfileBook
    from memstrata.profiles.markdown import render_entities, render_profile
    from memstrata.store.factory import open_doc_store

    scope = _scope(tenant or DEFAULT_TENANT, user)
    settings = _settings(data_dir)
    if settings.doc_backend == "sqlite" and not settings.docs_path.is_file():
        err.print(f"[red]nothing ingested into {escape(str(settings.data_dir))} yet: run "
                  f"`memstrata ingest FILE` first[/red]", soft_wrap=True)
        raise typer.Exit(2)
    try:
        docs = open_doc_store(settings, read_only=True)
    except Exception as exc:  # noqa: BLE001 - an unreachable backend is a usage problem here
        err.print(f"[red]cannot open the doc store: {escape(str(exc))}[/red]", soft_wrap=True)
        raise typer.Exit(2) from None
    with docs:
        book = ProfileBook(docs)
        names = book.key_names(scope)
        if entity is None:
            views = book.views(scope, everything=everything)
        else:
            views = book.find(scope, entity)
            if not views:
                err.print(f"[red]no profile named {escape(entity)!r} for "
                          f"{escape(show_scope(scope))} (run without ENTITY to list them)[/red]",
                          soft_wrap=True)
                raise typer.Exit(1)
    if as_json:
        json.dump(views, sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
        return
    if entity is None:
        if not views:
            off = "" if settings.profiles else " (MEMSTRATA_PROFILES is off)"
            console.print(f"no profiles for {show_scope(scope)}{off}")
            return
        text = f"# Entities of {show_scope(scope)}\n\n" + render_entities(views, names)
    else:
        text = "\n".join(render_profile(v, names) for v in views)
    if raw_markdown or not sys.stdout.isatty():
        sys.stdout.write(text)
    else:
        console.print(Markdown(text))


__all__ = ["profile"]
