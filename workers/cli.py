"""``memstrata workers head|node|check``: what a Ray head or worker node needs.

``memstrata`` adds the group through :func:`register` (a ``memstrata.commands``
entry point); loading this module imports no Ray, a command does when it runs.
``head`` and ``node`` become ``ray start --block`` with this environment's
Python, so the node's worker processes import this same memstrata; anything
after the known options goes to ``ray start`` unchanged.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer
from rich.markup import escape

from memstrata.cli import console, err
from memstrata.cli.exits import Exit

workers_app = typer.Typer(no_args_is_help=True, help=(
    "Ray worker nodes for L1/L2 builds and rollouts (the ray extra): run a head or a "
    "worker node, check MEMSTRATA_WORKERS_*."))

_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}

NumCpus = Annotated[Optional[int], typer.Option(
    "--num-cpus", min=0, help="CPUs this node offers (default: Ray counts them).")]
NodeIp = Annotated[Optional[str], typer.Option(
    "--node-ip-address", help="The address other nodes reach this one at (a machine with "
                              "several interfaces).")]
DryRun = Annotated[bool, typer.Option(
    "--dry-run", help="Print the ray start line instead of running it.")]


def _start(cmd_of: Any, dry_run: bool) -> None:
    from memstrata.config import ConfigError

    try:
        from workers.node import node_env, run, shown_env
        cmd = cmd_of()
        env = node_env(_workers_settings())  # the cluster's token, when one is set
    except ConfigError as exc:
        err.print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
        raise typer.Exit(Exit.USAGE) from None
    if dry_run:
        console.print(escape(" ".join([shown_env(env), *cmd]).strip()), soft_wrap=True)
        return
    run(cmd, env)


@workers_app.command(context_settings=_PASS_THROUGH)
def head(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(help="GCS port the worker nodes join.")] = 6379,
    client_port: Annotated[int, typer.Option(
        help="Ray client port (MEMSTRATA_WORKERS_RAY_ADDRESS=ray://HEAD:PORT).")] = 10001,
    num_cpus: NumCpus = None,
    node_ip: NodeIp = None,
    dashboard: Annotated[bool, typer.Option(
        "--dashboard/--no-dashboard", help="Ray's dashboard on the head.")] = False,
    dry_run: DryRun = False,
) -> None:
    """Run the cluster's head node (blocks; Ctrl-C stops it)."""
    from workers.node import head_command

    _start(lambda: head_command(port, num_cpus=num_cpus, node_ip=node_ip,
                                client_port=client_port, dashboard=dashboard,
                                extra=ctx.args), dry_run)


@workers_app.command(context_settings=_PASS_THROUGH)
def node(
    ctx: typer.Context,
    address: Annotated[Optional[str], typer.Option(
        envvar="MEMSTRATA_WORKERS_RAY_ADDRESS", show_envvar=False,
        help="The head's GCS address HOST:PORT (default: "
             "MEMSTRATA_WORKERS_RAY_ADDRESS).")] = None,
    num_cpus: NumCpus = None,
    node_ip: NodeIp = None,
    dry_run: DryRun = False,
) -> None:
    """Run a worker node that joins the head (blocks; Ctrl-C stops it)."""
    from workers.node import node_command

    def command() -> list[str]:
        _workers_settings(ray_address=address)  # a malformed address is named like the variable
        return node_command(address, num_cpus=num_cpus, node_ip=node_ip, extra=ctx.args)

    _start(command, dry_run)


@workers_app.command()
def check() -> None:
    """Validate MEMSTRATA_WORKERS_* and reach the cluster as the service would."""
    from memstrata.config import ConfigError

    try:
        from workers.cluster import RayAuthRefused, RayUnreachable, RayVersionMismatch
        from workers.node import check as check_cluster
    except ImportError:
        err.print("[red]the workers need the ray extra: pip install 'memstrata[ray]'[/red]")
        raise typer.Exit(Exit.USAGE) from None
    try:
        console.print(escape(check_cluster(_workers_settings())), soft_wrap=True)
    except (ConfigError, RayAuthRefused, RayVersionMismatch) as exc:  # fix a setting
        err.print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
        raise typer.Exit(Exit.USAGE) from None
    except RayUnreachable as exc:
        err.print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
        raise typer.Exit(Exit.UNREACHABLE) from None


def _workers_settings(**given: Any) -> Any:  # -> WorkersSettings (lazy: no ray import for --help)
    """``MEMSTRATA_WORKERS_*`` from the command's one configuration load (a bad value
    exits 2 naming the variable, as in every command)."""
    from memstrata.cli import _config
    from workers.settings import WorkersSettings

    return _config(workers=given).get(WorkersSettings)


def register(app: typer.Typer) -> None:
    """``memstrata workers head|node|check`` (entry point ``memstrata.commands``)."""
    app.add_typer(workers_app, name="workers")
