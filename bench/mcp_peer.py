"""The peer of `make bench-mcp`: an ungoverned MCP server built with the official Python SDK
(PyPI `mcp`, `MCPServer`), serving one trivial tool over streamable HTTP. No authentication,
policy, budget or audit: the floor a governed call has to beat.

    python bench/mcp_peer.py PORT
"""

import sys

from mcp.server.mcpserver import MCPServer

app = MCPServer("peer", log_level="WARNING")


@app.tool()
def read(url: str) -> str:
    """Returns a fixed page for any URL."""
    return f"the page at {url}"


if __name__ == "__main__":
    app.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
