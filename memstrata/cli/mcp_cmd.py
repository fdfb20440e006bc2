"""``memstrata mcp``: memory as an MCP server (needs the ``mcp`` and ``grpc`` extras).

It is a client of the query service, not a second engine: every tool call goes
through gRPC with the caller's API key, so the service's limits, fair shares,
budgets and metrics apply. The service is ``--remote``, else
``MEMSTRATA_API_ADDRESS``, else the ``memstrata serve`` holding the data dir.
"""

from __future__ import annotations

import logging
import socket
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import typer
from rich.markup import escape

from memstrata.cli import DataDir, _config, app, err
from memstrata.cli.access import Remote, Where
from memstrata.cli.exits import Exit

Transport = Literal["stdio", "streamable-http"]


def register() -> None:
    """Attach ``mcp`` to the command line (imports nothing heavy)."""
    app.command("mcp")(mcp)


def _settings(data_dir: Path | None, given: dict[str, Any]) -> tuple[Any, Any]:
    from memstrata.client.settings import ClientSettings
    from memstrata.mcp.settings import McpSettings

    config = _config(data_dir, **({"mcp": given} if given else {}))
    return config.get(McpSettings), config.get(ClientSettings)


def _bind_problem(host: str, port: int) -> str | None:
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def mcp(
    transport: Annotated[Optional[str], typer.Option(
        "--transport", help="stdio (an MCP client starts this command) or streamable-http "
                            "(MEMSTRATA_MCP_TRANSPORT; default stdio).",
        show_default=False)] = None,
    host: Annotated[Optional[str], typer.Option(
        help="Address the HTTP transport listens on (MEMSTRATA_MCP_HOST, default "
             "127.0.0.1).", show_default=False)] = None,
    port: Annotated[Optional[int], typer.Option(
        help="Port of the HTTP transport, endpoint /mcp (MEMSTRATA_MCP_PORT, default 8000).",
        show_default=False)] = None,
    remote: Remote = None,
    data_dir: DataDir = None,
) -> None:
    """Serve memory to MCP clients: search, ask, read sessions, add turns, delete.

    Over HTTP each request must carry `Authorization: Bearer <API key>`; the key's tenant
    is the scope. Over stdio the key is MEMSTRATA_API_KEY.
    """
    given = {k: v for k, v in {"transport": transport, "host": host, "port": port}.items()
             if v is not None}
    settings, client_settings = _settings(data_dir, given)
    try:
        import mcp as _sdk  # noqa: F401 - the extra is present
        import grpc as _grpc  # noqa: F401
    except ImportError as exc:
        err.print(f"[red]memstrata mcp needs the mcp and grpc extras ({escape(str(exc))}): "
                  "pip install 'memstrata[mcp,grpc]'[/red]", soft_wrap=True)
        raise typer.Exit(Exit.USAGE) from None
    address = Where(data_dir, remote).address
    if not address:
        err.print("[red]no memstrata service to serve from: set MEMSTRATA_API_ADDRESS or "
                  "--remote HOST:PORT, or run `memstrata serve` over this data dir[/red]",
                  soft_wrap=True)
        raise typer.Exit(Exit.USAGE)
    from memstrata.cli import setup_logging

    setup_logging(logging.WARNING, ours=logging.INFO)
    if settings.transport == "stdio":
        _run_stdio(settings, client_settings, address)
    else:
        _run_http(settings, client_settings, address)


def _run_stdio(settings: Any, client_settings: Any, address: str) -> None:
    """Standard output is the protocol: everything else goes to standard error."""
    import anyio
    import grpc

    from memstrata.client.errors import RemoteError
    from memstrata.mcp.access import ToolRefused
    from memstrata.mcp.server import build, stdio_caller

    async def main() -> None:
        try:
            caller = await stdio_caller(address, client_settings)
        except (ToolRefused, RemoteError) as exc:
            err.print(f"[red]cannot start the MCP server: {escape(str(exc))}[/red]",
                      soft_wrap=True)
            down = getattr(exc, "code", None) in (grpc.StatusCode.UNAVAILABLE,
                                                  grpc.StatusCode.DEADLINE_EXCEEDED)
            raise typer.Exit(Exit.UNREACHABLE if down else Exit.USAGE) from None
        served = build(settings, address, client_settings, caller=caller)
        logging.getLogger("memstrata.mcp").info(
            "memstrata MCP server on stdio for tenant %s via %s", caller.tenant, address)
        try:
            await served.server.run_stdio_async()
        finally:
            await caller.client.close()
            await served.pool.close()

    anyio.run(main)


def _run_http(settings: Any, client_settings: Any, address: str) -> None:
    import asyncio

    import uvicorn

    from memstrata.mcp.server import MCP_PATH, build, http_app

    if why := _bind_problem(settings.host, settings.port):
        err.print(f"[red]cannot listen on {settings.host}:{settings.port}: {escape(why)}; "
                  "choose another with --port or MEMSTRATA_MCP_PORT[/red]", soft_wrap=True)
        raise typer.Exit(Exit.UNREACHABLE)
    log = logging.getLogger("memstrata.mcp")
    if settings.host not in ("127.0.0.1", "localhost", "::1") and not settings.allowed_hosts:
        log.warning("listening on %s but MEMSTRATA_MCP_ALLOWED_HOSTS is empty: only requests "
                    "whose Host header is loopback are accepted (others get 421)", settings.host)

    async def main() -> None:
        try:
            served = build(settings, address, client_settings)
        except ValueError as exc:  # JWTs on without a platform key
            err.print(f"[red]cannot start the MCP server: {escape(str(exc))}[/red]",
                      soft_wrap=True)
            raise typer.Exit(Exit.USAGE) from None
        config = uvicorn.Config(http_app(served, settings), host=settings.host,
                                port=settings.port, log_level="warning", access_log=False,
                                lifespan="on")
        server = uvicorn.Server(config)
        log.info("serving MCP (streamable HTTP, stateless) on http://%s:%d%s via %s; "
                 "deletes %s%s", settings.host, settings.port, MCP_PATH, address,
                 "allowed" if settings.allow_delete else "refused",
                 f"; bound to user {settings.user}" if settings.user else "")
        if settings.jwt_enabled:
            log.info("bearer JWTs accepted beside API keys: issuer %s, audience %s, %s",
                     settings.jwt_issuer, settings.jwt_audience,
                     ", ".join(settings.jwt_algorithms))
        try:
            await server.serve()
        finally:
            await served.pool.close()

    asyncio.run(main())
