"""A minimal MCP server over stdio: one tool that counts words in a text file.

Run: python server.py   (needs `pip install mcp`)
"""

from pathlib import Path

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

mcp = FastMCP("wordcount")


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def count_words(path: str) -> str:
    """Count the words, lines and bytes of one UTF-8 text file.

    Use it for quick size checks instead of reading a whole file.
    Example: {"path": "README.md"}
    """
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"{path} is not a file; pass a path relative to the server's cwd")
    text = file.read_text(encoding="utf-8")
    return f"{len(text.split())} words, {text.count(chr(10))} lines, {len(text.encode())} bytes"


if __name__ == "__main__":
    mcp.run()  # stdio transport
