"""The status bar: mode and filter, index freshness and progress, staleness, size, model.

Laid out by priority: at 80 columns the mode, the filter and the freshness always show; the model
name goes first, then the sizes."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from rich.text import Text
from textual.widgets import Static

ETA_WINDOW_S = 60.0  # the rate behind an ETA: the batches of the last minute, not the whole phase


def ago(seconds: float) -> str:
    s = int(max(0, seconds))
    if s < 60:
        return f"{s}s ago"
    if s < 3600:
        return f"{s // 60}m ago"
    if s < 86400:
        return f"{s // 3600}h ago"
    return f"{s // 86400}d ago"


def eta(seconds: float | None) -> str:
    if seconds is None:
        return "…"
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def short_model(name: str) -> str:
    """``sentence-transformers/all-MiniLM-L6-v2`` -> ``MiniLM-L6-v2``."""
    base = name.rstrip("/").split("/")[-1]
    return base.removeprefix("all-")


@dataclass
class IndexState:
    """What the status bar shows; the app updates it from worker messages."""

    files: int = 0
    chunks: int = 0
    vectors: int = 0
    phase: str = "starting"  # starting, scan, lexical, embed, idle, failed
    phase_done: int = 0
    phase_total: int = 0
    last_indexed: float | None = None
    stale: set[str] = field(default_factory=set)
    model: str = ""
    model_state: str = "loading"  # loading, ready, failed, off (full_model: the static tier answers)
    mode: str = "hybrid"
    retrievers: tuple[str, ...] = ()  # the lists the last answer fused (bm25, static, vector)
    filters: str = ""
    samples: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=512))  # (time, done) of this phase

    def start_phase(self, phase: str, now: float, done: int) -> None:
        self.phase = phase
        self.samples.clear()
        self.samples.append((now, done))

    def progress(self, done: int, total: int, now: float) -> None:
        self.phase_done, self.phase_total = done, total
        self.samples.append((now, done))

    def phase_eta(self, now: float) -> float | None:
        """Seconds left in this phase, at the rate of the last ``ETA_WINDOW_S`` seconds of
        batches: a slow start (the model loading, long chunks first) does not inflate it later."""
        recent = [s for s in self.samples if s[0] >= now - ETA_WINDOW_S]
        if len(recent) < 2:
            recent = list(self.samples)[-2:]
        if len(recent) < 2:
            return None
        (t0, d0), (t1, d1) = recent[0], recent[-1]
        if d1 <= d0 or t1 - t0 <= 0.5:
            return None
        return float((self.phase_total - self.phase_done) / ((d1 - d0) / (t1 - t0)))

    def freshness(self, now: float) -> str:
        """One phrase that never contradicts itself: what is searchable now, what is still coming."""
        if self.phase in ("starting", "scan"):
            return "scanning…"
        if self.phase == "lexical":
            return f"indexing {self.phase_done:,}/{self.phase_total:,} files (ETA {eta(self.phase_eta(now))})"
        if self.phase == "distill":
            return "lexical ready · distilling the static model (once per machine)"
        if self.phase == "static":
            pct = int(100 * self.phase_done / self.phase_total) if self.phase_total else 100
            return f"lexical ready · static vectors {pct}%"
        if self.phase == "embed":  # of every chunk, as `codesight status` counts them, not of this run's
            pct = (
                int(100 * self.vectors / self.chunks)
                if self.chunks
                else int(100 * self.phase_done / self.phase_total)
                if self.phase_total
                else 100
            )
            return f"lexical ready · vectors {pct}% (ETA {eta(self.phase_eta(now))})"
        if self.phase == "failed":
            return "[b red]index failed[/]"
        when = f"indexed {ago(now - self.last_indexed)}" if self.last_indexed else "not indexed"
        if self.chunks and self.vectors < self.chunks and not (self.model_state == "off" and not self.vectors):
            # on a CPU the rest comes only when asked for: say how (issue 66)
            how = " (index --full)" if self.model_state == "off" else ""
            return f"lexical {when} · vectors {int(100 * self.vectors / self.chunks)}%{how}"
        return when


class StatusBar(Static):
    """``1,204 files · 8,311 chunks · lexical ready · vectors 62% (ETA 3m) · 3 stale · hybrid · MiniLM-L6-v2``"""

    DEFAULT_CSS = "StatusBar { height: 1; background: $panel; color: $text; padding: 0 1; }"

    def render_state(self, st: IndexState, now: float | None = None, width: int | None = None) -> str:
        now = time.time() if now is None else now
        width = width or (self.size.width - 2 if self.size.width else 0) or 10_000
        counting = st.phase in ("starting", "scan", "lexical") and not st.files
        # (priority, text): 0 always shows; higher numbers are dropped first when space is short.
        parts: list[tuple[int, str]] = []
        if not counting:
            parts += [(2, f"{st.files:,} files"), (3, f"{st.chunks:,} chunks")]
        parts.append((0, st.freshness(now)))
        if st.stale:
            parts.append((1, f"[b]{len(st.stale)} stale[/b]"))
        # Which tiers answered, where it was not the usual pair: "hybrid: bm25" while the static
        # model distils (every hit BM25's), "hybrid: bm25+static" while the full model loads or
        # embeds, "bm25+static+vector" part-way through it.
        tiers = (
            f": {'+'.join(st.retrievers)}"
            if st.mode == "hybrid" and st.retrievers and ("static" in st.retrievers or "vector" not in st.retrievers)
            else ""
        )
        parts.append((0, f"[b]{st.mode}[/b]{tiers}" + (f" {st.filters}" if st.filters else "")))
        if st.model_state == "failed":
            parts.append(
                (
                    1,
                    "[b yellow]"
                    + ("full model unavailable" if "static" in st.retrievers else "lexical only: model unavailable")
                    + "[/]",
                )
            )
        elif st.model_state == "off":  # no full pass on this machine (full_model): nothing is loading
            parts.append((4, "static tier"))
        else:
            parts.append((4, short_model(st.model) + (" (loading)" if st.model_state == "loading" else "")))
        for drop in (4, 3, 2, 1):
            text = " · ".join(t for _, t in parts)
            if Text.from_markup(text).cell_len <= width:
                break
            parts = [(p, t) for p, t in parts if p < drop]
        text = " · ".join(t for _, t in parts)
        self.update(text)
        return text
