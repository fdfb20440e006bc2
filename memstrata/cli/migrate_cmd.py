"""``memstrata migrate``: carry a data dir's stored vectors across an encoder change.

A data dir whose vectors another encoder wrote is refused at open (the index
fingerprint, :class:`~memstrata.fingerprint.IndexMismatch`): vectors of two
encoders cannot share an index. This command re-encodes every L0 unit of the
doc store with the encoder the settings now choose (:func:`memstrata.rebuild.reencode`);
the raw turns, the L0 units and BM25 stay as they are. Builder and window
changes need no command: a session is rebuilt when it is ingested again.

Exit status: 0 migrated or nothing to do; 1 failed; 2 bad settings; 3 the data
dir is held by another process (stop ``serve`` first).
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from memstrata.cli import DataDir, _settings, app, console, err
from memstrata.cli.exits import Exit


@app.command()
def migrate(
    data_dir: DataDir = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Say what would change; change nothing.")] = False,
) -> None:
    """Re-encode stored vectors for the encoder the settings choose (after an upgrade or
    an MEMSTRATA_EMBED_* change); needs the data dir to itself."""
    from memstrata.cli.locked import exit_locked
    from memstrata.rebuild import plan_migration, reencode
    from memstrata.roles import DataDirLocked

    settings = _settings(data_dir)
    plan = plan_migration(settings)
    console.print(escape(plan.describe()), soft_wrap=True, highlight=False)
    if dry_run or not plan.needed:
        return
    last = [0]

    def progress(store: str, done: int, total: int) -> None:
        if done == total or done - last[0] >= max(1, total // 10):
            last[0] = done
            err.print(f"re-encoding: {done}/{total} L0 units")

    try:
        _, memory = reencode(settings, progress)
    except DataDirLocked as exc:
        exit_locked(exc)
    except Exception as exc:  # noqa: BLE001 - one line naming the failure; the mark stays
        err.print(f"[red]migrate failed: {escape(type(exc).__name__)}: {escape(str(exc))}; "
                  f"run `memstrata migrate` again to finish[/red]", soft_wrap=True)
        raise typer.Exit(Exit.FAILED) from None
    memory.close()
    console.print(f"migrated {escape(str(settings.data_dir))}: vectors are {plan.now[0]} "
                  f"(dim {plan.now[1]})", soft_wrap=True, highlight=False)
