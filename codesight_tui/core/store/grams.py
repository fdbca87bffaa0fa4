"""The trigram index exact search narrows with (``core.search.grep``): SQLite FTS5's ``trigram``
tokenizer over the chunks' text, an external-content table (no text is stored twice), kept by
triggers and ``Store.write_files`` in the same transactions as the chunks it indexes.

The index only narrows. ``grams_whole`` names the files whose chunks do not hold every line as it is
on disk (secrets masked, a line too long for one chunk cut in pieces): exact search reads those
whatever the trigrams say. Measured against a list of posting bitmaps of our own, FTS5 keeps the
index in the transactions, damage checks and repairs everything else has (benchmarks/README.md,
"Exact search")."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_grams USING fts5(
    content, content='chunks', content_rowid='id', tokenize='trigram', detail='none'
);
CREATE TRIGGER IF NOT EXISTS chunks_ad_grams AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_grams(chunks_grams, rowid, content) VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER IF NOT EXISTS chunks_au_grams AFTER UPDATE OF content ON chunks BEGIN
    INSERT INTO chunks_grams(chunks_grams, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO chunks_grams(rowid, content) VALUES (new.id, new.content);
END;
CREATE TABLE IF NOT EXISTS grams_whole (path TEXT PRIMARY KEY);
"""
READY = "grams"  # the meta key saying the table holds every chunk (built with the index, or backfilled)

# Files whose lines are not all whole in their chunks: masked secrets, or a line cut in pieces
# (two chunks of one file starting on the same line).
_WHOLE = """
SELECT path FROM files WHERE masked > 0 AND {where}
UNION
SELECT path FROM chunks WHERE start_line = end_line AND {where} GROUP BY path, start_line HAVING count(*) > 1
"""


def ready(conn: sqlite3.Connection) -> bool:
    """Whether the trigram table holds every chunk of this index."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key=?", (READY,)).fetchone()
    except sqlite3.Error:
        return False
    return row is not None and row[0] == "1"


def build(conn: sqlite3.Connection) -> None:
    """Make the trigram table and fill it from the chunks there are (inside a transaction): a new
    index, or one made before exact search."""
    for statement in _statements(SCHEMA):  # not executescript: it would commit the transaction
        conn.execute(statement)
    conn.execute("INSERT INTO chunks_grams(chunks_grams) VALUES ('rebuild')")
    conn.execute("DELETE FROM grams_whole")
    conn.execute("INSERT OR IGNORE INTO grams_whole " + _WHOLE.format(where="1"))
    conn.execute("INSERT OR REPLACE INTO meta VALUES (?, '1')", (READY,))


def _statements(script: str) -> list[str]:
    """The statements of ``script`` (a trigger's body holds semicolons: split on complete ones)."""
    out, part = [], ""
    for line in script.splitlines(keepends=True):
        part += line
        if sqlite3.complete_statement(part):
            out.append(part.strip())
            part = ""
    return [s for s in out if s]


def added(conn: sqlite3.Connection, after: int | None, paths: Iterable[str]) -> None:
    """The chunks above id ``after`` (None: none were added) into the trigram table, and which of
    ``paths`` (the files just written) must be read whole (inside the transaction that wrote them)."""
    if after is not None:
        conn.execute("INSERT INTO chunks_grams(rowid, content) SELECT id, content FROM chunks WHERE id > ?", (after,))
    paths = list(paths)
    for k in range(0, len(paths), 500):
        part = paths[k : k + 500]
        marks = ",".join("?" * len(part))
        conn.execute(f"DELETE FROM grams_whole WHERE path IN ({marks})", part)
        conn.execute("INSERT OR IGNORE INTO grams_whole " + _WHOLE.format(where=f"path IN ({marks})"), part + part)


def removed(conn: sqlite3.Connection, path: str) -> None:
    """A file taken out of the index (its chunks' triggers took them out of the trigram table)."""
    if ready(conn):
        conn.execute("DELETE FROM grams_whole WHERE path=?", (path,))
