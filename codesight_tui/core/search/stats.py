"""What codesight saved an agent: per repository, the searches served over MCP, the tokens their
answers held, and the tokens of the files those hits came from (what the agent would have read
instead). Kept on this machine only, in ``stats.db`` (0600) in the data directory.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from codesight_tui.core.private import private_dir, private_file

if TYPE_CHECKING:
    from codesight_tui.core.store.store import Store

_SCHEMA = """
CREATE TABLE IF NOT EXISTS served (
    time REAL NOT NULL,
    repo TEXT NOT NULL,
    kind TEXT NOT NULL,          -- search, find_related
    results INTEGER NOT NULL,
    tokens INTEGER NOT NULL,     -- the answer as the agent received it
    file_tokens INTEGER NOT NULL -- the whole files its hits came from
);
"""


@dataclass(frozen=True)
class RepoUsage:
    """One repository's line of ``codesight stats``."""

    repo: str
    searches: int
    results: int
    tokens: int
    file_tokens: int
    first: float
    last: float

    @property
    def saved(self) -> float:
        """The share of the files' tokens the answers spared (0 where nothing was served)."""
        return 1.0 - self.tokens / self.file_tokens if self.file_tokens else 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "repo": self.repo,
            "searches": self.searches,
            "results": self.results,
            "tokens": self.tokens,
            "file_tokens": self.file_tokens,
            "saved": round(self.saved, 4),
            "first": self.first,
            "last": self.last,
        }


def _path(data_dir: Path) -> Path:
    return Path(data_dir).expanduser() / "stats.db"


def _connect(data_dir: Path) -> sqlite3.Connection:
    private_dir(Path(data_dir).expanduser())
    path = private_file(_path(data_dir))
    conn = sqlite3.connect(path, timeout=5)
    conn.executescript(_SCHEMA)
    return conn


def record(data_dir: Path, repo: str, kind: str, results: int, tokens: int, file_tokens: int) -> None:
    """Add one served answer. Never raises: a full disk or a locked file costs the count, not the answer."""
    try:
        with _connect(data_dir) as conn:
            conn.execute(
                "INSERT INTO served VALUES (?,?,?,?,?,?)", (time.time(), repo, kind, results, tokens, file_tokens)
            )
        conn.close()
    except (sqlite3.Error, OSError):
        pass


def usage(data_dir: Path) -> list[RepoUsage]:
    """Every repository's totals, most searched first (none where nothing was recorded)."""
    if not _path(data_dir).exists():
        return []
    conn = _connect(data_dir)
    try:
        rows = conn.execute(
            "SELECT repo, count(*), sum(results), sum(tokens), sum(file_tokens), min(time), max(time)"
            " FROM served GROUP BY repo ORDER BY count(*) DESC, repo"
        ).fetchall()
    finally:
        conn.close()
    return [RepoUsage(*r) for r in rows]


def file_tokens(store: Store, count: Callable[[str], int], paths: list[str]) -> int:
    """Tokens of these indexed files, whole (the sum of their chunks' ``count``): what reading
    them would have cost an agent."""
    total = 0
    for k in range(0, len(paths), 500):
        part = paths[k : k + 500]
        rows = store.conn.execute(f"SELECT content FROM chunks WHERE path IN ({','.join('?' * len(part))})", part)
        total += sum(count(content) for (content,) in rows)
    return total
