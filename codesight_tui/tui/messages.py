"""Messages that workers post to the UI; ``@on`` handlers own every state change."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from codesight_tui.core.index.indexer import IndexReport
    from codesight_tui.core.process.jobs import Ending
    from codesight_tui.core.search.contract import SearchResult


@dataclass
class IndexProgress(Message):
    """Progress of the background index: ``phase`` is scan, lexical or embed."""

    phase: str
    done: int
    total: int


@dataclass
class IndexFinished(Message):
    report: IndexReport | None
    counts: dict[str, int] = field(default_factory=dict)


@dataclass
class IndexFailed(Message):
    error: str
    busy: bool = False  # another process holds the writer lock: not a failure, it is indexing for us


@dataclass
class IndexIdle(Message):
    """A repository's ``IndexJob`` has nothing left to run; ``ending`` says how its last run ended."""

    ending: Ending


@dataclass
class SearchFinished(Message):
    key: tuple[str, str, str, str]  # (query, mode, glob, language) that was searched
    results: list[SearchResult]
    elapsed_ms: float
    notices: list[str] = field(default_factory=list)
    retrievers: list[str] = field(default_factory=list)  # the lists fused: bm25, static, vector
    cancelled: bool = False  # a newer keystroke cancelled it: nothing to show


@dataclass
class ModelReady(Message):
    name: str


class ModelOff(Message):
    """No full model on this machine's index runs (``full_model``): the static tier answers."""


@dataclass
class ModelFailed(Message):
    error: str


@dataclass
class FilesChanged(Message):
    paths: set[str]
    reindex: bool = True  # False when the index run itself reports them (it is already on it)
    root: Path | None = None  # the repository they are in (None: the first)
