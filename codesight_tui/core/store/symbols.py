"""The index's symbol tables (issue 51): each code file's definitions and references
(``ingest.symbols``), written and deleted with the file's chunks in the same transaction, in the
same SQLite database.

``defs`` and ``refs`` are WITHOUT ROWID tables keyed by the name itself, first: "every use of NAME"
is one range read, and a write needs no lookup of ids for names (``refs`` keeps a name's uses in a
file as one packed row). ``sym_files`` holds each file once, with the names it holds, so that its
rows go by primary key when it changes, and its calls in one row, which ``callees`` reads.
"""

from __future__ import annotations

import sqlite3
from array import array
from dataclasses import dataclass

from codesight_tui.core.ingest.symbols import REF_KINDS, FileSymbols

SCHEMA = """
-- names: the names a file holds, one a line (those it uses first, in the order of calls' positions);
-- calls: its calls as int32 triples (position in names, line, within); imports: the positions of
-- the names it imports (int32).
CREATE TABLE IF NOT EXISTS sym_files (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, names TEXT NOT NULL,
                                      calls BLOB NOT NULL, imports BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS defs (
    name TEXT NOT NULL, file_id INTEGER NOT NULL, line INTEGER NOT NULL,
    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, kind TEXT NOT NULL, scope TEXT NOT NULL,
    PRIMARY KEY (name, file_id, line)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS defs_file ON defs(file_id, line);
-- One row per name and file: its uses there, packed as int32 triples (line, kind: the index in
-- ingest.symbols.REF_KINDS, within: the line of the innermost definition around it, 0 for none).
-- A fourth of the rows one per use would take on Django, and a fourth of the inserts. A rowid table
-- (rows appended in file order) with a small index by name: keyed by name itself, each insert
-- landed somewhere in a b-tree of every row's blobs (3.4 s of the writer's time on 10,000 files).
CREATE TABLE IF NOT EXISTS refs (name TEXT NOT NULL, file_id INTEGER NOT NULL, uses BLOB NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS refs_name ON refs(name, file_id);
"""


@dataclass(frozen=True, slots=True)
class DefRecord:
    name: str
    path: str
    line: int
    start_line: int
    end_line: int
    kind: str
    scope: str


@dataclass(frozen=True, slots=True)
class RefRecord:
    name: str
    path: str
    line: int
    kind: str  # call, type, import, other
    within: int  # the line of the enclosing definition's name; 0: none


def _in(values: list[str] | list[int]) -> str:
    return ",".join("?" * len(values))


def delete(conn: sqlite3.Connection, paths: list[str]) -> None:
    """Drop the symbols of ``paths`` (inside the caller's transaction)."""
    for k in range(0, len(paths), 500):
        part = paths[k : k + 500]
        for file_id, names in conn.execute(f"SELECT id, names FROM sym_files WHERE path IN ({_in(part)})",
                                           part).fetchall():
            keys = [(n, file_id) for n in names.split("\n") if n]
            conn.executemany("DELETE FROM refs WHERE name=? AND file_id=?", keys)
            conn.executemany("DELETE FROM defs WHERE name=? AND file_id=?", keys)
            conn.execute("DELETE FROM sym_files WHERE id=?", (file_id,))


def write(conn: sqlite3.Connection, files: list[tuple[str, FileSymbols | None]]) -> None:
    """Replace the symbols of each ``(path, symbols)`` (None: the file has none, a document or a
    language without a grammar), inside the caller's transaction."""
    delete(conn, [p for p, _ in files])
    def_rows: list[tuple[str, int, int, int, int, str, str]] = []
    ref_rows: list[tuple[str, int, bytes]] = []
    for path, found in files:
        if found is None or not (found[0] or found[1]):
            continue
        defs, uses, calls, imports = found
        used = [n for n, _ in uses]
        held = used + sorted({d[0] for d in defs} - set(used))
        cur = conn.execute("INSERT INTO sym_files(path, names, calls, imports) VALUES (?, ?, ?, ?)",
                           (path, "\n".join(held), calls, imports))
        file_id = cur.lastrowid
        assert file_id is not None
        def_rows.extend((n, file_id, line, s, e, kind, scope) for n, kind, scope, line, s, e in defs)
        ref_rows.extend((n, file_id, packed) for n, packed in uses)
    def_rows.sort(key=lambda r: (r[0], r[1], r[2]))  # in key order: each lands beside the last
    conn.executemany("INSERT OR IGNORE INTO defs VALUES (?,?,?,?,?,?,?)", def_rows)
    conn.executemany("INSERT OR REPLACE INTO refs VALUES (?,?,?)", ref_rows)


def _uses(blob: bytes) -> list[tuple[int, int, int]]:
    """A refs row's (line, kind, within) triples."""
    a = array("i")
    a.frombytes(blob)
    return list(zip(a[0::3], a[1::3], a[2::3], strict=True))


def probe(conn: sqlite3.Connection) -> None:
    """Read the first and last rows of each table (``Store.probe``): raises sqlite3.DatabaseError."""
    conn.execute("SELECT * FROM sym_files WHERE id IN ((SELECT min(id) FROM sym_files), (SELECT max(id) FROM sym_files))").fetchall()
    for table in ("defs", "refs"):
        conn.execute(f"SELECT * FROM {table} ORDER BY name LIMIT 1").fetchall()
        conn.execute(f"SELECT * FROM {table} ORDER BY name DESC LIMIT 1").fetchall()
    conn.execute("SELECT * FROM refs WHERE rowid IN ((SELECT min(rowid) FROM refs), (SELECT max(rowid) FROM refs))").fetchall()


_DEF = ("SELECT d.name, f.path, d.line, d.start_line, d.end_line, d.kind, d.scope FROM defs d"
        " JOIN sym_files f ON f.id = d.file_id")


def _file_id(conn: sqlite3.Connection, path: str) -> int | None:
    row = conn.execute("SELECT id FROM sym_files WHERE path=?", (path,)).fetchone()
    return int(row[0]) if row else None


def definitions(conn: sqlite3.Connection, name: str) -> list[DefRecord]:
    """Every definition named ``name``."""
    return [DefRecord(*r) for r in conn.execute(_DEF + " WHERE d.name=? ORDER BY f.path, d.line", (name,))]


def file_definitions(conn: sqlite3.Connection, path: str) -> list[DefRecord]:
    """The definitions of one file, in line order."""
    fid = _file_id(conn, path)
    if fid is None:
        return []
    return [DefRecord(*r) for r in conn.execute(_DEF + " WHERE d.file_id=? ORDER BY d.start_line, d.end_line DESC", (fid,))]


def references(conn: sqlite3.Connection, name: str, kind: str | None = None) -> list[RefRecord]:
    """Every reference to ``name`` (of ``kind`` only, where given), by path and line."""
    return [r for r, _ in _references(conn, name, kind, False)]


def references_within(conn: sqlite3.Connection, name: str,
                      kind: str | None = None) -> list[tuple[RefRecord, DefRecord | None]]:
    """``references``, each with the innermost definition around it (None: at a file's top level)."""
    return _references(conn, name, kind, True)


def _references(conn: sqlite3.Connection, name: str, kind: str | None,
                around: bool) -> list[tuple[RefRecord, DefRecord | None]]:
    code = REF_KINDS.index(kind) if kind is not None else None
    found: list[tuple[int, str, int, int, int]] = []  # (file id, path, line, kind, within)
    for fid, path, blob in conn.execute("SELECT r.file_id, f.path, r.uses FROM refs r JOIN sym_files f ON f.id = r.file_id"
                                        " WHERE r.name=?", (name,)):
        found.extend((fid, path, line, k, w) for line, k, w in _uses(blob) if code is None or k == code)
    found.sort(key=lambda r: (r[1], r[2], r[3]))
    defs: dict[tuple[int, int], DefRecord] = {}
    if around:
        files = sorted({r[0] for r in found if r[4]})
        for k in range(0, len(files), 500):
            part = files[k : k + 500]
            for fid, *row in conn.execute(
                    "SELECT d.file_id, d.name, f.path, d.line, d.start_line, d.end_line, d.kind, d.scope FROM defs d"
                    " JOIN sym_files f ON f.id = d.file_id"
                    f" WHERE d.file_id IN ({_in(part)}) ORDER BY d.start_line DESC", part):
                defs.setdefault((fid, row[2]), DefRecord(*row))  # two on one line: the innermost (latest start)
    return [(RefRecord(name, path, line, REF_KINDS[k], w), defs.get((fid, w)) if w else None)
            for fid, path, line, k, w in found]


def file_references(conn: sqlite3.Connection, path: str, within: list[int] | None = None,
                    kind: str | None = None) -> list[RefRecord]:
    """The references in one file (inside the definitions at the lines ``within`` only, and of
    ``kind`` only, where given), in line order: one primary-key read per name the file holds (its
    calls: one read)."""
    row = conn.execute("SELECT id, names, calls FROM sym_files WHERE path=?", (path,)).fetchone()
    if row is None:
        return []
    fid, text, calls = row
    names = text.split("\n")
    inside = set(within) if within is not None else None
    if kind == "call":
        return sorted((RefRecord(names[k], path, line, "call", w) for k, line, w in _uses(calls)
                       if inside is None or w in inside), key=lambda r: (r.line, r.name))
    code = REF_KINDS.index(kind) if kind is not None else None
    out: list[RefRecord] = []
    for k in range(0, len(names), 500):
        part = names[k : k + 500]
        for name, uses in conn.execute(f"SELECT name, uses FROM refs WHERE name IN ({_in(part)}) AND file_id=?",
                                       [*part, fid]):
            out.extend(RefRecord(name, path, line, REF_KINDS[c], w) for line, c, w in _uses(uses)
                       if (code is None or c == code) and (inside is None or w in inside))
    out.sort(key=lambda r: (r.line, r.name))
    return out


def imported_names(conn: sqlite3.Connection, path: str) -> set[str]:
    """The names a file's import statements hold (a module's parts, the names taken from it)."""
    row = conn.execute("SELECT names, imports FROM sym_files WHERE path=?", (path,)).fetchone()
    if row is None:
        return set()
    names = row[0].split("\n")
    at = array("i")
    at.frombytes(row[1])
    return {names[k] for k in at}


def counts(conn: sqlite3.Connection) -> dict[str, int]:
    try:
        return {"definitions": conn.execute("SELECT count(*) FROM defs").fetchone()[0],
                "references": conn.execute("SELECT coalesce(sum(length(uses)), 0) / 12 FROM refs").fetchone()[0]}
    except sqlite3.OperationalError:  # an index from before symbols, opened read-only
        return {"definitions": 0, "references": 0}
