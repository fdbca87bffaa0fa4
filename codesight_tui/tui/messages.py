"""Messages that workers post to the UI; ``@on`` handlers own every state change."""

from __future__ import annotations

from dataclasses import dataclass, field

from textual.message import Message


@dataclass
class IndexProgress(Message):
    """Progress of the background index: ``phase`` is scan, lexical or embed."""

    phase: str
    done: int
    total: int


@dataclass
class IndexFinished(Message):
    report: object
    counts: dict = field(default_factory=dict)


@dataclass
class IndexFailed(Message):
    error: str
    busy: bool = False  # another process holds the writer lock: not a failure, it is indexing for us


@dataclass
class IndexIdle(Message):
    """A repository's ``IndexJob`` has nothing left to run; ``ending`` says how its last run ended."""

    ending: object


@dataclass
class SearchFinished(Message):
    key: tuple  # (query, mode, glob, language) that was searched
    results: list
    elapsed_ms: float
    notices: list = field(default_factory=list)
    retrievers: list = field(default_factory=list)  # the lists fused: bm25, static, vector


@dataclass
class ModelReady(Message):
    name: str


@dataclass
class ModelFailed(Message):
    error: str


@dataclass
class FilesChanged(Message):
    paths: set
    reindex: bool = True  # False when the index run itself reports them (it is already on it)
    root: object = None  # the repository they are in (None: the first)
