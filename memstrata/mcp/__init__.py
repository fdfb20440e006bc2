"""``memstrata mcp``: memory as an MCP server (the ``mcp`` extra), over the client.

:mod:`memstrata.mcp.settings` (``MEMSTRATA_MCP_*``) imports only pydantic and
is loaded at every start-up; :mod:`memstrata.mcp.server` builds the server on
the official SDK. The package speaks to the query service only through
:mod:`memstrata.client`, so it loads no engine and no service package (an
import-linter contract holds it to that).
"""
