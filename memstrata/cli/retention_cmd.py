"""``memstrata retention show | dry-run | apply``: the tenants' retention policies, by hand.

The policies live in the keys/tenants file (``tenants.<tenant>.retention``);
``memstrata serve`` sweeps on its own schedule (:mod:`memstrata.lifecycle.retention_service`).
``dry-run`` reads the doc store only (it works beside a running serve) and deletes
nothing; ``apply`` sweeps now: through the memory's own delete when this process
can own the stores, or, with ``MEMSTRATA_KAFKA_BROKERS`` set (Kafka mode), by
publishing delete events the stream workers apply.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, NoReturn, Optional

import typer
from rich.markup import escape
from rich.table import Table

from memstrata.cli import DataDir, _config, _settings, app, console, err
from memstrata.cli.exits import Exit

retention_app = typer.Typer(
    help="Retention policies per tenant (in the keys/tenants file): show them, see what "
         "they would delete, or sweep now.", no_args_is_help=True)
app.add_typer(retention_app, name="retention")

TenantOpt = Annotated[Optional[str], typer.Option(
    "--tenant", "-t", help="Only this tenant (default: every tenant with a policy).")]
KeysFileOpt = Annotated[Optional[Path], typer.Option(
    "--keys-file", help="Keys/tenants file (MEMSTRATA_SERVICE_KEYS_FILE; default: in the "
                        "data dir).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the whole result as JSON.")]


def _fail(message: str, code: Exit) -> NoReturn:
    err.print(f"[red]{escape(message)}[/red]", soft_wrap=True)
    raise typer.Exit(code)


def _policies(keys_file: Path | None, data_dir: Path | None,
              tenant: str | None) -> tuple[Path, dict[str, Any]]:
    """The file and the policies to apply (one tenant's or all); exits on a bad file."""
    from memstrata.cli.access import keys_path
    from memstrata.lifecycle.retention import RetentionPolicyError, read_policies

    path = keys_path(keys_file, data_dir)
    try:
        policies = read_policies(path)
    except RetentionPolicyError as exc:
        _fail(f"{exc}; fix the file (see docs/lifecycle-retention.md)", Exit.USAGE)
    chosen = {t: p for t, p in policies.items()
              if (tenant is None or t == tenant) and not p.keeps_forever}
    if tenant is not None and tenant not in chosen:
        err.print(f"tenant {tenant} has no retention policy in {path}: its data is kept "
                  f"forever", soft_wrap=True)
    return path, chosen


def _retention_settings(data_dir: Path | None) -> Any:
    from memstrata.lifecycle.retention_settings import RetentionSettings

    return _config(data_dir).get(RetentionSettings)


def _days(value: int | None) -> str:
    return "-" if value is None else f"{value} days"


@retention_app.command("show")
def show(tenant: TenantOpt = None, keys_file: KeysFileOpt = None,
         data_dir: DataDir = None) -> None:
    """Each tenant's policy, the sweep's schedule and each tenant's last sweep."""
    from memstrata.lifecycle.retention_service import state_dir
    from memstrata.lifecycle.retention_sweep import JOURNAL, read_receipts

    path, policies = _policies(keys_file, data_dir, tenant)
    rs = _retention_settings(data_dir)
    where = state_dir(_settings(data_dir).data_dir)
    last: dict[str, dict[str, Any]] = {}
    for r in read_receipts(where):
        for t, part in r.get("tenants", {}).items():
            last[t] = {"finished_at": r.get("finished_at"), "mode": r.get("mode"),
                       "sessions_deleted": part.get("sessions_deleted", 0),
                       "errors": len(part.get("errors", []))}
    table = Table(title=f"retention policies in {path}")
    for col in ("tenant", "session max age", "user inactive", "last sweep", "deleted then"):
        table.add_column(col)
    for t, p in sorted(policies.items()):
        seen = last.get(t, {})
        table.add_row(t, _days(p.session_max_age_days), _days(p.user_inactive_days),
                      str(seen.get("finished_at") or "never"),
                      str(seen.get("sessions_deleted", "-")))
    console.print(table)
    if not policies and tenant is None:
        console.print("no tenant has a retention policy: everything is kept forever")
    console.print(f"serve sweeps every {rs.interval_s:g} s"
                  + ("" if rs.enabled else " (off: MEMSTRATA_RETENTION_ENABLED=false)")
                  + f"; receipts: {where / 'receipts.jsonl'}")
    if (where / JOURNAL).is_file():
        console.print("[yellow]a sweep was interrupted; the next sweep (serve's, or "
                      "`memstrata retention apply`) finishes it[/yellow]")


def _plan_rows(plans: list[Any], limit: int) -> tuple[Table, Table, int]:
    summary = Table(title="what the policies expire now (nothing is deleted)")
    for col in ("tenant", "users", "sessions", "undated", "users to delete",
                "sessions to delete"):
        summary.add_column(col)
    items = Table()
    for col in ("tenant", "user", "session", "reason", "dated"):
        items.add_column(col)
    shown = 0
    for p in plans:
        summary.add_row(p.tenant, str(p.users), str(p.sessions), str(p.undated),
                        str(p.users_expired), str(p.sessions_expired))
        for e in p.expired:
            if shown < limit:
                what = (e.session_id if e.session_id is not None
                        else f"(the whole user: {len(e.sessions)} sessions)")
                items.add_row(p.tenant, e.scope.user_id, what, e.reason,
                              e.last.strftime("%Y-%m-%d"))
            shown += 1
    return summary, items, shown


@retention_app.command("dry-run")
def dry_run(tenant: TenantOpt = None, keys_file: KeysFileOpt = None,
            as_json: JsonOpt = False,
            limit: Annotated[int, typer.Option(
                "--limit", min=0, help="Most expired sessions/users to list (--json lists "
                                       "all).")] = 50,
            as_of: Annotated[Optional[datetime], typer.Option(
                "--as-of", help="Judge expiry at this instant instead of now (UTC unless "
                                "it names a zone): what a later sweep would delete.")] = None,
            data_dir: DataDir = None) -> None:
    """What the policies would delete now; deletes and writes nothing.

    Reads the doc store only, so it runs beside `memstrata serve`. A session without a
    date is dated by when a sweep first saw its content (one no sweep has seen yet
    counts as written now).
    """
    from memstrata.lifecycle.retention_service import state_dir
    from memstrata.lifecycle.retention_sweep import Sweeper

    _, policies = _policies(keys_file, data_dir, tenant)
    settings = _settings(data_dir)
    docs = _read_docs(settings)
    try:
        when = None if as_of is None else (as_of if as_of.tzinfo else as_of.replace(tzinfo=UTC))
        plans = Sweeper(docs, None, state_dir(settings.data_dir)).plan(policies, now=when)
    finally:
        docs.close()
    if as_json:
        sys.stdout.write(json.dumps({"dry_run": True, "tenants": {p.tenant: {
            "policy": p.policy.model_dump(exclude_none=True), "now": p.now.isoformat(),
            "users_checked": p.users, "sessions_checked": p.sessions, "undated": p.undated,
            "sessions_expired": p.sessions_expired, "users_expired": p.users_expired,
            "expired": [e.to_json() for e in p.expired]} for p in plans}}, indent=2) + "\n")
        return
    summary, items, total = _plan_rows(plans, limit)
    console.print(summary)
    if total:
        console.print(items)
    if total > limit:
        console.print(f"... and {total - limit} more (--limit, or --json for all)")


def _read_docs(settings: Any) -> Any:
    """The doc store opened for reading (beside a writer: SQLite is opened read-only)."""
    from memstrata.store.factory import open_doc_store

    if settings.doc_backend == "sqlite" and not settings.docs_path.is_file():
        _fail(f"nothing ingested into {settings.data_dir} yet (no {settings.docs_path})",
              Exit.USAGE)
    try:
        return open_doc_store(settings, read_only=True)
    except Exception as exc:  # noqa: BLE001 - a backend that cannot start: one line
        _fail(f"cannot open the doc store: {exc}", Exit.FAILED)


@retention_app.command("apply")
def apply(tenant: TenantOpt = None, keys_file: KeysFileOpt = None, as_json: JsonOpt = False,
          data_dir: DataDir = None) -> None:
    """Sweep now: delete what the policies expire, everywhere it is derived; write a receipt.

    Without MEMSTRATA_KAFKA_BROKERS this process deletes through the memory itself (it
    needs the data dir: stop `memstrata serve`, which sweeps on its own schedule). With
    it (Kafka mode) the deletes are control events the stream workers apply.
    """
    from memstrata.cli.access import serving_address
    from memstrata.kafka import KafkaSettings
    from memstrata.lifecycle.retention_service import state_dir
    from memstrata.lifecycle.retention_sweep import SweepBusy, Sweeper

    _, policies = _policies(keys_file, data_dir, tenant)
    config = _config(data_dir)
    settings, kafka, rs = config.settings, config.get(KafkaSettings), _retention_settings(data_dir)
    if not policies:
        return
    where = state_dir(settings.data_dir)
    try:
        if kafka.brokers:
            receipt = _apply_via_topic(settings, kafka, rs, where, policies)
        else:
            if address := serving_address(data_dir):
                _fail(f"memstrata serve (at {address}) holds {settings.data_dir} and sweeps it "
                      f"itself every {rs.interval_s:g} s (MEMSTRATA_RETENTION_INTERVAL_S); "
                      f"stop it to sweep now. `memstrata retention dry-run` works beside it.",
                      Exit.LOCKED)
            from memstrata.cli import _open
            from memstrata.lifecycle.retention_sweep import MemoryDeleter

            memory = _open(data_dir)
            try:
                receipt = Sweeper(memory.docs, MemoryDeleter(memory), where,
                                  flush_every=rs.flush_every).sweep(policies)
            finally:
                memory.close()
    except SweepBusy as exc:
        _fail(str(exc), Exit.LOCKED)
    _print_receipt(receipt.to_json(), where, as_json)


def _apply_via_topic(settings: Any, kafka: Any, rs: Any, where: Path,
                     policies: dict[str, Any]) -> Any:
    from memstrata.lifecycle.retention_sweep import Sweeper
    from memstrata.lifecycle.retention_topic import ControlTopicDeleter

    docs = _read_docs(settings)
    try:
        try:
            deleter = ControlTopicDeleter(kafka, apply_wait_s=rs.apply_wait_s)
            deleter.start()
        except Exception as exc:  # noqa: BLE001 - the broker cannot be reached: one line
            _fail(f"cannot reach the brokers {kafka.brokers}: {exc}", Exit.UNREACHABLE)
        try:
            return Sweeper(docs, deleter, where, flush_every=rs.flush_every).sweep(policies)
        finally:
            deleter.close()
    finally:
        docs.close()


def _print_receipt(receipt: dict[str, Any], where: Path, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(receipt, indent=2) + "\n")
        return
    table = Table(title=f"retention sweep {receipt['sweep_id']} ({receipt['mode']}"
                        f"{', finished an interrupted one' if receipt['resumed'] else ''})")
    for col in ("tenant", "users checked", "sessions checked", "sessions deleted",
                "users deleted", "removed", "errors"):
        table.add_column(col)
    for t, part in receipt["tenants"].items():
        removed = ", ".join(f"{k} {v}" for k, v in sorted(part["removed"].items())) or "-"
        table.add_row(t, str(part["users_checked"]), str(part["sessions_checked"]),
                      str(part["sessions_deleted"]), str(part["users_deleted"]), removed,
                      str(len(part["errors"])))
    console.print(table)
    applied = [f.get("applied") for f in receipt.get("flushes", []) if "applied" in f]
    if applied and not all(applied):
        console.print("[yellow]the stream workers had not applied every delete event within "
                      "MEMSTRATA_RETENTION_APPLY_WAIT_S; they stay in the control topic and are "
                      "applied when the workers catch up[/yellow]")
    console.print(f"receipt appended to {where / 'receipts.jsonl'}")
    if not receipt["complete"]:
        raise typer.Exit(Exit.FAILED)
