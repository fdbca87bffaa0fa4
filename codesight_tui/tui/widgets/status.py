"""The status bar: index size, vector progress with ETA, staleness, freshness, model and mode."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from textual.widgets import Static


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
    return base[4:] if base.startswith("all-") else base


@dataclass
class IndexState:
    """What the status bar shows; the app updates it from worker messages."""

    files: int = 0
    chunks: int = 0
    vectors: int = 0
    phase: str = "starting"  # starting, scan, lexical, embed, idle, failed
    phase_done: int = 0
    phase_total: int = 0
    phase_started: float = 0.0
    phase_started_done: int = 0
    last_indexed: float | None = None
    stale: set = field(default_factory=set)
    model: str = ""
    model_state: str = "loading"  # loading, ready, failed
    mode: str = "hybrid"
    filters: str = ""

    def phase_eta(self, now: float) -> float | None:
        done = self.phase_done - self.phase_started_done
        elapsed = now - self.phase_started
        if done <= 0 or elapsed <= 0.5:
            return None
        return (self.phase_total - self.phase_done) / (done / elapsed)


class StatusBar(Static):
    """``1,204 files · 8,311 chunks · vectors 62% (ETA 3m) · 3 stale · indexed 12s ago · MiniLM-L6-v2 · hybrid``"""

    DEFAULT_CSS = "StatusBar { height: 1; background: $panel; color: $text; padding: 0 1; }"

    def render_state(self, st: IndexState, now: float | None = None) -> str:
        now = time.time() if now is None else now
        parts = [f"{st.files:,} files", f"{st.chunks:,} chunks"]
        if st.phase in ("starting", "scan"):
            parts.append("scanning…")
        elif st.phase == "lexical":
            parts.append(f"indexing {st.phase_done:,}/{st.phase_total:,} files (ETA {eta(st.phase_eta(now))})")
        elif st.phase == "embed":
            pct = int(100 * st.phase_done / st.phase_total) if st.phase_total else 100
            parts.append(f"vectors {pct}% (ETA {eta(st.phase_eta(now))})")
        elif st.chunks:
            pct = int(100 * st.vectors / st.chunks)
            parts.append("vectors 100%" if pct == 100 else f"vectors {pct}%")
        if st.stale:
            parts.append(f"[b]{len(st.stale)} stale[/b]")
        if st.phase == "failed":
            parts.append("[b red]index failed[/]")
        elif st.last_indexed:
            parts.append(f"indexed {ago(now - st.last_indexed)}")
        parts.append(f"[b]{st.mode}[/b]" + (f" {st.filters}" if st.filters else ""))
        if st.model_state == "failed":
            parts.append("[b yellow]model unavailable: lexical only[/]")
        else:
            parts.append(short_model(st.model) + (" (loading)" if st.model_state == "loading" else ""))
        text = " · ".join(parts)
        self.update(text)
        return text
