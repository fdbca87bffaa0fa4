"""The search modes and the tiers of an answer, defined once for every surface (the CLI's choices,
the TUI's Tab cycle, the settings' default_mode, the engine's check, ``codesight eval``)."""

from __future__ import annotations

from enum import Enum
from typing import Literal, cast, get_args

from codesight_tui.core.errors import UsageError

Mode = Literal["hybrid", "bm25", "vector"]
MODES: tuple[str, ...] = get_args(Mode)  # in the TUI's Tab order


def checked_mode(mode: str) -> Mode:
    """``mode`` as a ``Mode``, or a ``UsageError`` naming the modes: the one check of every layer."""
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    return cast("Mode", mode)


class Vectors(str, Enum):
    """Which vector lists a search may fuse beside BM25: the tiers of an answer.

    ``STATIC``: the static tier only, never the full model (a fresh CLI process: no torch, well
    under a second). Where a root has no static vectors, or the mode is not hybrid, this comes
    to ``LOAD``. ``LOADED``: the full model's too if it is loaded already, never waiting for it
    (the TUI, MCP). ``LOAD``: the full model's, loading it first (``--full``, the Python API)."""

    STATIC = "static"
    LOADED = "loaded"
    LOAD = "load"


# "fast", the answer a fresh CLI process, the service and MCP give: hybrid over BM25 and the static
# tier alone. Not a fourth retrieval mode but a tier of hybrid: ``codesight eval --mode fast``.
FAST = "fast"
ANSWERS: dict[str, tuple[Mode, Vectors]] = {
    "hybrid": ("hybrid", Vectors.LOAD),
    "bm25": ("bm25", Vectors.LOAD),
    "vector": ("vector", Vectors.LOAD),
    FAST: ("hybrid", Vectors.STATIC),
}


def answer(name: str) -> tuple[Mode, Vectors]:
    """The mode and the tier a named answer (``hybrid``, ``bm25``, ``vector`` or ``fast``) is."""
    return ANSWERS[name]
