"""Serving tansaku to agents and editors: MCP over stdio and Streamable HTTP, a JSON HTTP API and a
background daemon.

A transport only. Requests are checked and mapped onto ``tansaku.api.Tansaku`` in one place
(requests.py) that both MCP and HTTP use, and answers are what ``render`` makes of the results:
no ranking, limit or output rule lives here. Nothing in this package is imported by the other
commands: ``mcp``, ``starlette`` and ``uvicorn`` load only when a server starts.
"""
