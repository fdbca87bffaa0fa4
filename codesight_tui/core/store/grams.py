"""The trigram index exact search narrows with (``core.search.grep``): SQLite FTS5's ``trigram``
tokenizer over the chunks' text, an external-content table (no text is stored twice), kept by
triggers and ``Store.write_files`` in the same transactions as the chunks it indexes.

The index only narrows, and every line must be whole somewhere in it. A line too long for one
chunk is cut in pieces, and a match may span a cut: such a line is kept whole in ``grams_lines``
(with its own trigram table, ``lines_grams``). Where the pieces' order cannot be known (an index
built before these tables, whose pieces were partly rewritten), the file is named in
``grams_whole`` and exact search reads it whatever the trigrams say. Masked secrets are not in the
index at all: exact search checks a masked file's masked lines on disk (``core.search.grep``).
Measured against a list of posting bitmaps of our own, FTS5 keeps the index in the transactions,
damage checks and repairs everything else has (benchmarks/README.md, "Exact search")."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence

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
CREATE TABLE IF NOT EXISTS grams_lines (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, line INTEGER NOT NULL, content TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS grams_lines_path ON grams_lines(path);
CREATE VIRTUAL TABLE IF NOT EXISTS lines_grams USING fts5(
    content, content='grams_lines', content_rowid='id', tokenize='trigram', detail='none'
);
CREATE TRIGGER IF NOT EXISTS grams_lines_ad AFTER DELETE ON grams_lines BEGIN
    INSERT INTO lines_grams(lines_grams, rowid, content) VALUES ('delete', old.id, old.content);
END;
"""
# The meta keys saying the tables hold every chunk (built with the index, or backfilled): "grams" for
# chunks_grams, which an older codesight keeps too (with grams_whole naming every file with a masked
# secret or a cut line: read whole, so its writes stay correct for this one); "grams_lines" for the
# cut lines kept whole, which only this one keeps.
READY = "grams"
LINES = "grams_lines"
FTS_TABLES = ("chunks_grams", "lines_grams")
# FTS5 merges a level's segments once it holds this many (its default: 4). On Django's 70,872 chunks,
# written in the indexer's batches: 2.68 s -> 2.21 s, a query 0.79 -> 0.86 ms (0 merged never: 2.13 s,
# 1.00 ms a query).
AUTOMERGE = 16


def ready(conn: sqlite3.Connection) -> bool:
    """Whether the trigram tables hold every chunk of this index."""
    return _said(conn, READY) and _said(conn, LINES)


def _said(conn: sqlite3.Connection, key: str) -> bool:
    try:
        row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    except sqlite3.Error:
        return False
    return row is not None and row[0] == "1"


def build(conn: sqlite3.Connection) -> None:
    """Make the trigram tables and fill them from the chunks there are (inside a transaction): a
    new index, or one made before exact search (or before cut lines were kept whole)."""
    had_chunks = _said(conn, READY)
    for statement in _statements(SCHEMA):  # not executescript: it would commit the transaction
        conn.execute(statement)
    for fts in FTS_TABLES:  # merge segments 16 at a time, not 4: a fifth less time writing, as fast to query
        conn.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('automerge', {AUTOMERGE})")
    if not had_chunks:
        conn.execute("INSERT INTO chunks_grams(chunks_grams) VALUES ('rebuild')")
    conn.execute("DELETE FROM grams_whole")  # an older codesight's names are read again below
    conn.execute("DELETE FROM grams_lines")
    pieces: dict[tuple[str, int], list[tuple[int, str]]] = {}
    for path, line, cid, content in conn.execute(
        "SELECT c.path, c.start_line, c.id, c.content FROM chunks c JOIN ("
        " SELECT path, start_line FROM chunks WHERE start_line = end_line"
        " GROUP BY path, start_line HAVING count(*) > 1) k USING (path, start_line)"
        " WHERE c.start_line = c.end_line ORDER BY c.id"
    ):
        pieces.setdefault((path, line), []).append((cid, content))
    whole: set[str] = set()
    rows: list[tuple[str, int, str]] = []
    for (path, line), parts in pieces.items():
        ids = [cid for cid, _ in parts]
        if ids[-1] - ids[0] + 1 != len(ids):  # not written together: their order is not known
            whole.add(path)
        else:
            rows.append((path, line, "".join(content for _, content in parts)))
    _insert_lines(conn, [r for r in rows if r[0] not in whole])
    conn.executemany("INSERT OR IGNORE INTO grams_whole VALUES (?)", [(p,) for p in sorted(whole)])
    conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, '1')", [(READY,), (LINES,)])


def _statements(script: str) -> list[str]:
    """The statements of ``script`` (a trigger's body holds semicolons: split on complete ones)."""
    out, part = [], ""
    for line in script.splitlines(keepends=True):
        part += line
        if sqlite3.complete_statement(part):
            out.append(part.strip())
            part = ""
    return [s for s in out if s]


def cut_lines(path: str, rows: Sequence[tuple[int, int, str, str, str, str, str]]) -> list[tuple[str, int, str]]:
    """The lines of one file's chunk rows (``store.chunk_fields``, in the chunker's order) that
    were cut in pieces, each whole again: ``(path, line, text)``."""
    pieces: dict[int, list[str]] = {}
    for start, end, _scope, content, *_ in rows:
        if start == end:
            pieces.setdefault(start, []).append(content)
    return [(path, line, "".join(parts)) for line, parts in pieces.items() if len(parts) > 1]


def _insert_lines(conn: sqlite3.Connection, rows: list[tuple[str, int, str]]) -> None:
    if not rows:
        return
    last = conn.execute("SELECT coalesce(max(id), 0) FROM grams_lines").fetchone()[0]
    conn.executemany("INSERT INTO grams_lines (path, line, content) VALUES (?,?,?)", rows)
    conn.execute("INSERT INTO lines_grams(rowid, content) SELECT id, content FROM grams_lines WHERE id > ?", (last,))


def added(conn: sqlite3.Connection, after: int | None, paths: Iterable[str], lines: list[tuple[str, int, str]]) -> None:
    """The chunks above id ``after`` (None: none were added) into the trigram table, and the cut
    ``lines`` of ``paths`` (the files just written) in place of theirs (inside the transaction
    that wrote them)."""
    if after is not None:
        conn.execute("INSERT INTO chunks_grams(rowid, content) SELECT id, content FROM chunks WHERE id > ?", (after,))
    paths = list(paths)
    for k in range(0, len(paths), 500):
        part = paths[k : k + 500]
        marks = ",".join("?" * len(part))
        conn.execute(f"DELETE FROM grams_whole WHERE path IN ({marks})", part)
        conn.execute(f"DELETE FROM grams_lines WHERE path IN ({marks})", part)
    _insert_lines(conn, lines)


def removed(conn: sqlite3.Connection, path: str) -> None:
    """A file taken out of the index (its chunks' triggers took them out of the trigram table)."""
    if ready(conn):
        conn.execute("DELETE FROM grams_whole WHERE path=?", (path,))
        conn.execute("DELETE FROM grams_lines WHERE path=?", (path,))


def named(conn: sqlite3.Connection, fts: str, holds: Callable[[str], bool] | None = None) -> set[str]:
    """The files with a chunk or a cut line that holds what the FTS5 query ``fts`` asks (and, where
    ``holds`` is given, whose text it says holds what the search requires: its literals, in the
    case asked), and those to read whole whatever it asks."""
    found: set[str] = set()
    for table, fts_table in (("chunks", "chunks_grams"), ("grams_lines", "lines_grams")):
        where = f"id IN (SELECT rowid FROM {fts_table} WHERE {fts_table} MATCH ?)"
        if holds is None:
            found.update(p for (p,) in conn.execute(f"SELECT DISTINCT path FROM {table} WHERE {where}", (fts,)))
            continue
        for path, text in conn.execute(f"SELECT path, content FROM {table} WHERE {where}", (fts,)):
            if path not in found and holds(text):
                found.add(path)
    found.update(p for (p,) in conn.execute("SELECT path FROM grams_whole"))
    return found
