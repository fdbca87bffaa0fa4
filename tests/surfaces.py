"""Driving the surfaces from tests, shared by every tier: the TUI under Pilot (``make_app``,
``settle``, ``search``, an engine whose model cannot load), the MCP server over stdio (``server``),
and the LLM back ends' environment pointed at a stub (``llm_env``)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import HashEmbedder
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import CallToolResult, TextContent, Tool
from textual.pilot import Pilot
from textual.widgets import Input

from codesight_tui import CodeSight
from codesight_tui.core.config import Settings
from codesight_tui.tui.app import CodeSightApp

KEY = "sk-test-0123456789abcdef-secret"


def make_app(repo: Path, settings: Settings, embedder: Any = None, **kw: Any) -> CodeSightApp:
    engine = CodeSight(repo, settings=settings, embedder=embedder or HashEmbedder())
    kw.setdefault("watch", False)
    return CodeSightApp(repo, engine=engine, **kw)


async def settle(app: CodeSightApp, pilot: Pilot[int], timeout: float = 20.0) -> None:
    """Wait until no index run or search is pending."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        if app.index_idle.is_set() and not app._indexing and not app.search_busy:
            await app.workers.wait_for_complete()
            await pilot.pause(0.05)
            if app.index_idle.is_set() and not app.search_busy:
                return
    raise AssertionError("app did not settle")


async def search(app: CodeSightApp, pilot: Pilot[int], text: str) -> None:
    app.query_one("#query", Input).value = ""
    await pilot.click("#query")
    await pilot.press(*text)
    await settle(app, pilot)


class BrokenModelEngine(CodeSight):
    """A CodeSight whose model cannot load, as when the weights are missing."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.models.error = "cannot load embedding model 'missing-model': not found"


@asynccontextmanager
async def server(*roots: Path, extra: tuple[str, ...] = ()) -> AsyncIterator[Client]:
    args = ["-m", "codesight_tui", "mcp", *[a for r in roots for a in ("--root", str(r))], *extra]
    params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ), cwd=str(roots[0]))
    async with Client(params, read_timeout_seconds=120) as client:
        yield client


def text_of(result: CallToolResult) -> str:
    """An MCP tool result's first text, which every tool of ours gives."""
    first = result.content[0]
    assert isinstance(first, TextContent), first
    return first.text


def read_only(tool: Tool) -> bool:
    """Whether an MCP tool says it changes nothing."""
    return bool(tool.annotations and tool.annotations.read_only_hint)


def schema_of(tool: Tool) -> dict[str, Any]:
    """An MCP tool's output schema, which every tool of ours has."""
    assert tool.output_schema is not None, tool.name
    return tool.output_schema


def llm_env(monkeypatch: pytest.MonkeyPatch, backend: str, url: str, model: str = "stub-model", key: str = KEY) -> None:
    for var in (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_BASE_URL",
        "AZURE_OPENAI_ENDPOINT",
        "OPENAI_API_VERSION",
        "OLLAMA_HOST",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CODESIGHT_LLM_BACKEND", backend)
    monkeypatch.setenv("CODESIGHT_LLM_MODEL", model)
    monkeypatch.setenv("CODESIGHT_LLM_TIMEOUT", "2")
    if backend == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", key)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    elif backend == "openai":
        monkeypatch.setenv("OPENAI_API_KEY", key)
        monkeypatch.setenv("OPENAI_BASE_URL", url + "/v1")
    elif backend == "azure":
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", key)
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", url)
        monkeypatch.setenv("OPENAI_API_VERSION", "2024-10-21")
    else:
        monkeypatch.setenv("OLLAMA_HOST", url)
