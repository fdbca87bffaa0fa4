"""The index's symbol tables (issue 51): each code file's definitions and references
(``ingest.symbols``), written and deleted with the file's chunks in the same transaction, in the
same SQLite database.

``sym_files`` holds each file once, in one row: the names it uses and all their uses, packed as
the indexer's workers made them, and its calls. ``sym_names`` says which files use a name: a
contentless FTS5 table, one document a file (its names), which keeps one short list of files per
name. "Every use of NAME" reads those files' rows; a file written costs one row and one document,
where a row per name and file (4.1 million on the 10,000-file tree) and its index by name cost the
writer three times as long (benchmarks/README.md). ``defs`` is a WITHOUT ROWID table keyed by
the name itself.
"""

from __future__ import annotations

import re
import sqlite3
from array import array
from dataclasses import dataclass

from codesight_tui.core.ingest.symbols import REF_KINDS, FileSymbols

SCHEMA = """
-- names: the names a file uses, one a line, then those it only defines; ends: where each used
-- name's uses end in uses (int32, in ints); uses: (line, kind, within) int32 triples, name after
-- name (kind: the index in ingest.symbols.REF_KINDS; within: the line of the innermost definition
-- around it, 0 for none); calls: (position in names, line, within) triples; imports: the positions
-- of the names it imports.
CREATE TABLE IF NOT EXISTS sym_files (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, names TEXT NOT NULL,
                                      ends BLOB NOT NULL, uses BLOB NOT NULL, calls BLOB NOT NULL,
                                      imports BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS defs (
    name TEXT NOT NULL, file_id INTEGER NOT NULL, line INTEGER NOT NULL,
    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, kind TEXT NOT NULL, scope TEXT NOT NULL,
    PRIMARY KEY (name, file_id, line)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS defs_file ON defs(file_id, line);
-- Which files use a name: one document a file (rowid: its sym_files id), its names as tokens
-- (``_tokens``). Contentless and detail=none: no text is kept, only each token's list of files.
CREATE VIRTUAL TABLE IF NOT EXISTS sym_names USING fts5(names, content='', detail=none, columnsize=0,
                                                         tokenize="unicode61 remove_diacritics 0 tokenchars '_$'");
"""

_PLAIN = re.compile(r"[A-Za-z0-9_$\n]*")  # names that are tokens as they are


def _tokens(names: str) -> str:
    """A file's names as ``sym_names`` tokenizes them: a name of letters, digits, ``_`` and ``$`` is
    its own token; any other (``valid?``, ``operator==``, ``+``) is ``x`` and its UTF-8 in hex. The
    table narrows the files to read; which of them use the very name, the rows themselves say."""
    if _PLAIN.fullmatch(names):
        return names
    return "\n".join(_token(n) for n in names.split("\n"))


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_$]+")  # one name: a newline in it (``refs $'a\nb'``) made two tokens


def _token(name: str) -> str:
    return name if _PLAIN_NAME.fullmatch(name) else "x" + name.encode("utf-8", errors="surrogateescape").hex()


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
        for file_id, names in conn.execute(
            f"SELECT id, names FROM sym_files WHERE path IN ({_in(part)})", part
        ).fetchall():
            # A contentless table forgets a document by being told its tokens again.
            conn.execute(
                "INSERT INTO sym_names(sym_names, rowid, names) VALUES ('delete', ?, ?)", (file_id, _tokens(names))
            )
            conn.execute("DELETE FROM defs WHERE file_id=?", (file_id,))
            conn.execute("DELETE FROM sym_files WHERE id=?", (file_id,))


def write(conn: sqlite3.Connection, files: list[tuple[str, FileSymbols | None]]) -> None:
    """Replace the symbols of each ``(path, symbols)`` (None: the file has none, a document or a
    language without a grammar), inside the caller's transaction."""
    delete(conn, [p for p, _ in files])
    def_rows: list[tuple[str, int, int, int, int, str, str]] = []
    for path, found in files:
        if found is None or not (found[0] or found[1]):
            continue
        defs, names, ends, uses, calls, imports, _cut = found
        used = set(names.split("\n")) if names else set()
        only_defined = sorted({d[0] for d in defs} - used)
        held = "\n".join([names, *only_defined]) if names else "\n".join(only_defined)
        cur = conn.execute(
            "INSERT INTO sym_files(path, names, ends, uses, calls, imports) VALUES (?, ?, ?, ?, ?, ?)",
            (path, held, ends, uses, calls, imports),
        )
        file_id = cur.lastrowid
        assert file_id is not None
        conn.execute("INSERT INTO sym_names(rowid, names) VALUES (?, ?)", (file_id, _tokens(held)))
        def_rows.extend((n, file_id, line, s, e, kind, scope) for n, kind, scope, line, s, e in defs)
    def_rows.sort(key=lambda r: (r[0], r[1], r[2]))  # in key order: each lands beside the last
    conn.executemany("INSERT OR IGNORE INTO defs VALUES (?,?,?,?,?,?,?)", def_rows)


def _ints(blob: bytes) -> array[int]:
    a = array("i")
    a.frombytes(blob)
    return a


def _triples(a: array[int], lo: int = 0, hi: int | None = None) -> list[tuple[int, int, int]]:
    """The (line, kind, within) triples of ``a[lo:hi]``."""
    part = a[lo:hi]
    return list(zip(part[0::3], part[1::3], part[2::3], strict=True))


def _uses_of(name: str, names: str, ends: bytes, uses: bytes) -> list[tuple[int, int, int]]:
    """One file's uses of ``name``, from its row: none where the name is not among those it uses."""
    at = ("\n" + names + "\n").find("\n" + name + "\n")
    if at < 0:
        return []
    k = names.count("\n", 0, at)  # the name's position
    bounds = _ints(ends)
    if k >= len(bounds):
        return []  # a name the file only defines
    return _triples(_ints(uses), bounds[k - 1] if k else 0, bounds[k])


def probe(conn: sqlite3.Connection) -> None:
    """Read the first and last rows of each table (``Store.probe``): raises sqlite3.DatabaseError."""
    conn.execute(
        "SELECT * FROM sym_files WHERE id IN ((SELECT min(id) FROM sym_files), (SELECT max(id) FROM sym_files))"
    ).fetchall()
    conn.execute("SELECT * FROM defs ORDER BY name LIMIT 1").fetchall()
    conn.execute("SELECT * FROM defs ORDER BY name DESC LIMIT 1").fetchall()
    conn.execute("SELECT rowid FROM sym_names WHERE sym_names MATCH 'self' LIMIT 1").fetchall()
    conn.execute("SELECT count(*) FROM sym_names_config").fetchone()


_DEF = (
    "SELECT d.name, f.path, d.line, d.start_line, d.end_line, d.kind, d.scope FROM defs d"
    " JOIN sym_files f ON f.id = d.file_id"
)


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
    return [
        DefRecord(*r) for r in conn.execute(_DEF + " WHERE d.file_id=? ORDER BY d.start_line, d.end_line DESC", (fid,))
    ]


def references(conn: sqlite3.Connection, name: str, kind: str | None = None) -> list[RefRecord]:
    """Every reference to ``name`` (of ``kind`` only, where given), by path and line."""
    return [r for r, _ in _references(conn, name, kind, False)]


def references_within(
    conn: sqlite3.Connection, name: str, kind: str | None = None
) -> list[tuple[RefRecord, DefRecord | None]]:
    """``references``, each with the innermost definition around it (None: at a file's top level)."""
    return _references(conn, name, kind, True)


def _references(
    conn: sqlite3.Connection, name: str, kind: str | None, around: bool
) -> list[tuple[RefRecord, DefRecord | None]]:
    code = REF_KINDS.index(kind) if kind is not None else None
    found: list[tuple[int, str, int, int, int]] = []  # (file id, path, line, kind, within)
    for fid, path, names, ends, uses in conn.execute(
        "SELECT f.id, f.path, f.names, f.ends, f.uses FROM sym_names s JOIN sym_files f ON f.id = s.rowid"
        " WHERE sym_names MATCH ?",
        (f'"{_token(name)}"',),
    ):
        found.extend(
            (fid, path, line, k, w) for line, k, w in _uses_of(name, names, ends, uses) if code is None or k == code
        )
    found.sort(key=lambda r: (r[1], r[2], r[3]))
    defs: dict[tuple[int, int], DefRecord] = {}
    if around:
        files = sorted({r[0] for r in found if r[4]})
        for k in range(0, len(files), 500):
            part = files[k : k + 500]
            for fid, *row in conn.execute(
                "SELECT d.file_id, d.name, f.path, d.line, d.start_line, d.end_line, d.kind, d.scope FROM defs d"
                " JOIN sym_files f ON f.id = d.file_id"
                f" WHERE d.file_id IN ({_in(part)}) ORDER BY d.start_line DESC",
                part,
            ):
                defs.setdefault((fid, row[2]), DefRecord(*row))  # two on one line: the innermost (latest start)
    return [
        (RefRecord(name, path, line, REF_KINDS[k], w), defs.get((fid, w)) if w else None)
        for fid, path, line, k, w in found
    ]


def file_references(
    conn: sqlite3.Connection, path: str, within: list[int] | None = None, kind: str | None = None
) -> list[RefRecord]:
    """The references in one file (inside the definitions at the lines ``within`` only, and of
    ``kind`` only, where given), in line order: all from the file's one row."""
    row = conn.execute("SELECT names, ends, uses, calls FROM sym_files WHERE path=?", (path,)).fetchone()
    if row is None:
        return []
    text, ends, uses, calls = row
    names = text.split("\n")
    inside = set(within) if within is not None else None
    if kind == "call":
        return sorted(
            (
                RefRecord(names[k], path, line, "call", w)
                for k, line, w in _triples(_ints(calls))
                if inside is None or w in inside
            ),
            key=lambda r: (r.line, r.name),
        )
    code = REF_KINDS.index(kind) if kind is not None else None
    flat = _ints(uses)
    out: list[RefRecord] = []
    lo = 0
    for name, hi in zip(names, _ints(ends), strict=False):
        out.extend(
            RefRecord(name, path, line, REF_KINDS[c], w)
            for line, c, w in _triples(flat, lo, hi)
            if (code is None or c == code) and (inside is None or w in inside)
        )
        lo = hi
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


@dataclass(frozen=True, slots=True)
class FileLinks:
    """What ties a file to the others: the names it defines and the names it uses."""

    defines: frozenset[str]
    uses: frozenset[str]


def file_links(conn: sqlite3.Connection, paths: list[str]) -> dict[str, FileLinks]:
    """``FileLinks`` of each of ``paths`` (the first 500) that has symbols, by path: two reads however
    many files (the ranking asks for a question's first page, ``core.search.ranking`` step 8)."""
    paths = paths[:500]
    uses: dict[str, frozenset[str]] = {}
    ids: dict[int, str] = {}
    try:
        for fid, path, names, ends in conn.execute(
            f"SELECT id, path, names, ends FROM sym_files WHERE path IN ({_in(paths)})", paths
        ):
            ids[fid] = path
            uses[path] = frozenset(names.split("\n")[: len(ends) // 4])  # the used names come first
        defined: dict[str, set[str]] = {p: set() for p in uses}
        keys = list(ids)
        for fid, name in conn.execute(f"SELECT file_id, name FROM defs WHERE file_id IN ({_in(keys)})", keys):
            defined[ids[fid]].add(name)
    except sqlite3.OperationalError:  # an index from before symbols, opened read-only
        return {}
    return {p: FileLinks(frozenset(defined[p]), uses[p]) for p in uses}


def counts(conn: sqlite3.Connection) -> dict[str, int]:
    try:
        return {
            "definitions": conn.execute("SELECT count(*) FROM defs").fetchone()[0],
            "references": conn.execute("SELECT coalesce(sum(length(uses)), 0) / 12 FROM sym_files").fetchone()[0],
        }
    except sqlite3.OperationalError:  # an index from before symbols, opened read-only
        return {"definitions": 0, "references": 0}
