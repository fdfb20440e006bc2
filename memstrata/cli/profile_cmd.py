"""``memstrata profile``: a user's entity and persona profiles as Markdown (or JSON).

Locally it reads the doc store only (SQLite opened read-only), so it runs
beside a writer and loads no model; with ``--remote`` (or
``MEMSTRATA_API_ADDRESS``, or a live ``memstrata serve`` holding the data dir)
it asks the service (``GetProfile``, ``ListEntities``). Both give the same
records (:mod:`memstrata.profile_records`), printed by the same code.
Profiles are kept by the write path (``MEMSTRATA_PROFILES``); a data dir
written with them off has none.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.markdown import Markdown
from rich.markup import escape

from memstrata.cli import DataDir, User, _scope, _settings, app, console, err, show_scope
from memstrata.cli.access import DEFAULT_TENANT, Remote, TenantOrKey

if TYPE_CHECKING:
    from memstrata.model import Scope
    from memstrata.profile_records import EntityProfile, EntitySummary


class _Reads:
    """The two profile reads of one command, over the doc store or the service."""

    def __init__(self, scope: Scope, profile: Any, entities: Any, note: str = "") -> None:
        #: ``note``: why there may be no profiles (said when there are none).
        self.scope, self.profile, self.entities, self.note = scope, profile, entities, note


@contextmanager
def _local(data_dir: Path | None, tenant: str | None, user: str) -> Iterator[_Reads]:
    from memstrata.profile_reads import entity_list, profiles_named
    from memstrata.profiles.book import ProfileBook
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
        off = "" if settings.profiles else " (MEMSTRATA_PROFILES is off)"
        yield _Reads(scope, lambda e: profiles_named(book, scope, e),
                     lambda everything: entity_list(book, scope, everything=everything),
                     off)


@contextmanager
def _remote(address: str, data_dir: Path | None, tenant: str | None,
            user: str) -> Iterator[_Reads]:
    from memstrata.cli.access import Where, open_reader

    with open_reader(Where(data_dir, address)) as opened:
        client = opened.client
        assert client is not None  # an address always opens the service
        scope = opened.scope(tenant, user)
        yield _Reads(scope, lambda e: client.get_profile(scope, e),
                     lambda everything: client.list_entities(scope, everything=everything))


def profiles_markdown(found: list[EntityProfile]) -> str:
    """One entity's profile per record: sections of bullets, each with its sources."""
    from memstrata.profiles.markdown import render_profile

    return "\n".join(render_profile(p.as_view(), p.names) for p in found)


def entities_markdown(scope: Scope, entities: list[EntitySummary]) -> str:
    """The entities table, as ``memstrata profile`` without ENTITY prints it."""
    from memstrata.profile_records import summary_view
    from memstrata.profiles.markdown import render_entities

    names: dict[str, str] = {}
    for e in entities:
        names.update(e.names)
    return (f"# Entities of {show_scope(scope)}\n\n"
            + render_entities([summary_view(e) for e in entities], names))


@app.command()
def profile(
    entity: Annotated[Optional[str], typer.Argument(
        help="Who: a name, an alias, a relation ('my sister') or 'me'; omitted: list the "
             "entities.", show_default=False)] = None,
    tenant: TenantOrKey = None,
    user: User = ...,  # type: ignore[assignment]
    everything: Annotated[bool, typer.Option(
        "--all", help="List names of unknown kind too (mentioned, never described).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the profile records as JSON.")
                       ] = False,
    raw_markdown: Annotated[bool, typer.Option("--plain", help="Print Markdown source.")
                            ] = False,
    data_dir: DataDir = None,
    remote: Remote = None,
) -> None:
    """Print a user's profiles: one entity's sections with every bullet's sources, or the
    list of entities with their kind, relation and aliases."""
    from memstrata.cli.access import Where
    from memstrata.profile_records import ProfileNotFound

    _scope(tenant or DEFAULT_TENANT, user)
    address = Where(data_dir, remote).address
    opened = (_remote(address, data_dir, tenant, user) if address
              else _local(data_dir, tenant, user))
    with opened as reads:
        scope = reads.scope
        if entity is None:
            records: list[Any] = reads.entities(everything)
        else:
            try:
                records = reads.profile(entity)
            except ProfileNotFound:
                err.print(f"[red]no profile named {escape(entity)!r} for "
                          f"{escape(show_scope(scope))} (run without ENTITY to list them)[/red]",
                          soft_wrap=True)
                raise typer.Exit(1) from None
    if as_json:
        json.dump([r.model_dump(mode="json") for r in records], sys.stdout, indent=1,
                  ensure_ascii=False)
        sys.stdout.write("\n")
        return
    if entity is None:
        if not records:
            console.print(f"no profiles for {show_scope(scope)}{reads.note}")
            return
        text = entities_markdown(scope, records)
    else:
        text = profiles_markdown(records)
    if raw_markdown or not sys.stdout.isatty():
        sys.stdout.write(text)
    else:
        console.print(Markdown(text))


__all__ = ["entities_markdown", "profile", "profiles_markdown"]
