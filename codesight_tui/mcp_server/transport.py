"""The stdio transport, guarded: lone surrogates made U+FFFD and frames nested too deep refused
with an error reply, before the SDK's parser sees either."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterable, AsyncIterator
from typing import TYPE_CHECKING, Any

import anyio

from codesight_tui.core.text import LONE_SURROGATE

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

# A frame nested deeper than this is refused: the SDK's parser recurses per level, and a frame of
# 100,000 brackets made it drop the request without a reply.
MAX_FRAME_DEPTH = 64
_FRAME_ID = re.compile(r'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


def _depth(obj: object, limit: int) -> int:
    """How deep ``obj`` nests (stops counting past ``limit``)."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        item, d = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, d)
            if deepest > limit:
                return deepest
            stack.extend((v, d + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def _clean_strings(obj: Any) -> Any:
    if isinstance(obj, str):
        return LONE_SURROGATE.sub("\ufffd", obj)
    if isinstance(obj, list):
        return [_clean_strings(v) for v in obj]
    if isinstance(obj, dict):
        return {_clean_strings(k): _clean_strings(v) for k, v in obj.items()}
    return obj


def guard_frame(line: str) -> str:
    """One line of the stdio transport, made safe for the SDK: lone surrogates (``"\\ud800"``,
    which the reply could never be encoded with) become U+FFFD, so the request is served; a frame
    nested past ``MAX_FRAME_DEPTH`` becomes a call of a method no server has, so its id still gets
    an error reply instead of silence. Anything else passes unchanged."""
    if "\\u" not in line and line.count("[") + line.count("{") <= MAX_FRAME_DEPTH:
        return line  # the usual frame: no escapes, shallow by construction
    try:
        obj = json.loads(line)
        deep = _depth(obj, MAX_FRAME_DEPTH) > MAX_FRAME_DEPTH
    except RecursionError:
        obj, deep = None, True
    except ValueError:
        return line  # not JSON: the SDK reports it
    if deep:
        found = _FRAME_ID.search(line[:4096])
        if found is None:
            return "\n"  # a notification: there is nobody to answer
        return (
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": json.loads(found.group(1)),
                    "method": f"codesight/rejected: frame nested deeper than {MAX_FRAME_DEPTH} levels",
                }
            )
            + "\n"
        )
    cleaned = _clean_strings(obj)
    return line if cleaned == obj else json.dumps(cleaned) + "\n"


class _GuardedLines:
    """The server's stdin, line by line through ``guard_frame``."""

    def __init__(self, source: AsyncIterable[str]) -> None:
        self.source = source

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self.source:
            yield guard_frame(line)


async def run_stdio(server: MCPServer) -> None:
    """``MCPServer.run_stdio_async`` with ``guard_frame`` between stdin and the SDK."""
    import io
    import sys

    from mcp.server.stdio import stdio_server

    stdin = anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    # The SDK only iterates its stdin (async for), which _GuardedLines does; it is typed as a file.
    async with stdio_server(stdin=_GuardedLines(stdin)) as (read_stream, write_stream):  # type: ignore[arg-type]
        low = server._lowlevel_server
        await low.run(read_stream, write_stream, low.create_initialization_options())
