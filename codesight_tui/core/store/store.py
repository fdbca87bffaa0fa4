"""The SQLite side of an index: files, chunks, an FTS5 table kept in sync with them, and metadata.

SQLite is the source of truth. The LanceDB table only holds vectors for chunk ids that SQLite
marks ``embedded = 1``; anything else found there is an orphan and is removed on the next run.
WAL mode lets any number of readers search while one writer indexes.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import pathspec

from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.ingest.chunker import Chunk, embed_text
from codesight_tui.core.languages import DOCUMENT_EXTENSIONS
from codesight_tui.core.store import grams, symbols
from codesight_tui.core.text import content_hash, expansion_terms, fts_match, fts_terms

T = TypeVar("T")

if TYPE_CHECKING:
    import numpy as np

    from codesight_tui.core.ingest.symbols import FileSymbols
    from codesight_tui.core.store.lexical import ResidentBM25

SCHEMA_VERSION = "14"  # bumped when the stored rows change meaning (v3: TS signatures are scopes; v4: doc views;
# v5: compound names in the embedded scope header are followed by their words; v6: grammars for C#, Kotlin,
# Scala, Swift, Lua, shell, Haskell, Elixir and Zig, and attributes attached to definitions; v7: secrets
# are masked before chunking and secret files are not indexed, so an older index, which may hold
# them, is rebuilt; v8: a .h file with C++ in it is parsed as C++; Lua and JS functions bound by
# assignment, Lua's in a table, JS/TS class fields holding a function, C's function-like macros and
# typedef'd structs, and Rust items in a macro call's braces are definitions; identifier expansions
# in a fixed order, not one that changed with each process's hash seed; v9: definitions and references,
# core.store.symbols; v10: the symbol tables keyed by the names themselves; v11: refs a rowid table
# with an index by name; v12: more definitions (named function expressions, objects bound to names,
# C++ operators, record fields, ...), files the grammar loses parsed by declaration, Kotlin's and
# Ruby's calls told as calls, shell scripts' names; v13: each file's uses in its sym_files row, and
# which files use a name in the contentless FTS5 table sym_names, in place of a row per name and file;
# v14: a Go interface's methods are definitions)

FTS_AUTOMERGE = 8

# BM25 column weights: path, scope, content, identifier expansions.
BM25_WEIGHTS = (2.0, 2.0, 1.0, 1.0)
FTS_COLUMNS = ("path", "scope", "content", "terms")
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"

_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
    language TEXT, n_chunks INTEGER NOT NULL DEFAULT 0, indexed_at REAL,
    skipped TEXT,  -- why a walked file has no chunks (binary); NULL for indexed files
    masked INTEGER NOT NULL DEFAULT 0  -- secrets masked in its text (core.redact)
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: a stale vector can't alias new text
    path TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
    language TEXT, scope TEXT, content TEXT NOT NULL, terms TEXT,
    hash TEXT NOT NULL, embed_key TEXT NOT NULL,
    embedded INTEGER NOT NULL DEFAULT 0, priority INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
CREATE INDEX IF NOT EXISTS chunks_pending ON chunks(priority, id) WHERE embedded = 0;
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    path, scope, content, terms,
    content='chunks', content_rowid='id', tokenize='"""
    + FTS_TOKENIZE
    + """'
);
-- New rows reach the FTS table in one INSERT ... SELECT per batch (write_files), not through a
-- per-row trigger: 2.3 s instead of 5.3 s per 100,000 chunks. Indexes made before drop it.
DROP TRIGGER IF EXISTS chunks_ai;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, path, scope, content, terms)
    VALUES ('delete', old.id, old.path, old.scope, old.content, old.terms);
END;
-- Documents (PDF, DOCX, PPTX; core.ingest.extract): the extracted text the preview shows, zlib-compressed,
-- and where each page or slide starts in it (JSON [[line, kind, number], ...]).
CREATE TABLE IF NOT EXISTS documents (path TEXT PRIMARY KEY, text BLOB NOT NULL, locators TEXT NOT NULL);
-- Static-tier vectors (core.index.static), one float16 row per chunk; they go with their chunk.
CREATE TABLE IF NOT EXISTS static_vectors (id INTEGER PRIMARY KEY, vector BLOB NOT NULL);
CREATE TRIGGER IF NOT EXISTS chunks_ad_static AFTER DELETE ON chunks BEGIN
    DELETE FROM static_vectors WHERE id = old.id;
END;
-- The static vector of a code chunk's doc view (chunker.doc_view), for those that have one; written
-- with the chunk's own and searched beside it (the nearer of the two counts).
CREATE TABLE IF NOT EXISTS static_docs (id INTEGER PRIMARY KEY, vector BLOB NOT NULL);
CREATE TRIGGER IF NOT EXISTS chunks_ad_static_docs AFTER DELETE ON chunks BEGIN
    DELETE FROM static_docs WHERE id = old.id;
END;
CREATE TRIGGER IF NOT EXISTS chunks_au AFTER UPDATE OF path, scope, content, terms ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, path, scope, content, terms)
    VALUES ('delete', old.id, old.path, old.scope, old.content, old.terms);
    INSERT INTO chunks_fts(rowid, path, scope, content, terms)
    VALUES (new.id, new.path, new.scope, new.content, new.terms);
END;
"""
    + symbols.SCHEMA
)


# SQL: the file is a document (PDF, DOCX, PPTX).
_DOCUMENT_PATHS = " OR ".join(f"lower(path) LIKE '%{ext}'" for ext in DOCUMENT_EXTENSIONS)


@dataclass(slots=True)
class ChunkRow:
    """A stored chunk."""

    id: int
    path: str
    start_line: int
    end_line: int
    language: str
    scope: str
    content: str
    embed_key: str = ""


@lru_cache(maxsize=64)
def _glob_spec(pattern: str) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines([pattern])


def path_matches(path: str, pattern: str) -> bool:
    """gitignore-style glob match: ``*.py``, ``src/``, ``src/**/test_*.py``, ``lib/command.js``."""
    return _glob_spec(pattern).match_file(path)


def embed_key(path: str, scope: str, content: str) -> str:
    """Cache key of a chunk's embedding text (model-independent; the cache is per model)."""
    return content_hash(embed_text(path, scope, content))


# What ``Store.write_files`` stores of a chunk: (start_line, end_line, scope, content, embed_key,
# identifier expansion terms, content hash).
ChunkFields = tuple[int, int, str, str, str, str, str]


def chunk_fields(path: str, chunks: list[Chunk]) -> list[ChunkFields]:
    """Each chunk as the row ``write_files`` stores, derived columns included. The indexer's workers
    compute these off the writer's thread, and plain tuples cross the process boundary about four
    times cheaper than ``Chunk`` objects (pickled both ways)."""
    return [
        (
            c.start_line,
            c.end_line,
            c.scope,
            c.content,
            embed_key(path, c.scope, c.content),
            expansion_terms(c.content + " " + c.scope),
            c.hash,
        )
        for c in chunks
    ]


class Store:
    """Thread-safe access to one index's SQLite database (one connection per thread)."""

    def __init__(self, db_path: Path, readonly: bool = False) -> None:
        self.db_path = db_path
        self.readonly = readonly
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self.resident: ResidentBM25 | None = None  # BM25 from memory (keep_resident), for a long-lived process
        _ = self.conn  # open now so that a corrupt or unwritable database fails here

    @property
    def conn(self) -> sqlite3.Connection:
        c = getattr(self._local, "conn", None)
        if c is None:
            c = self._connect()
            self._local.conn = c
            with self._lock:
                self._all.append(c)
        return c

    def _connect(self) -> sqlite3.Connection:
        if self.readonly:
            uri = Path(self.db_path).resolve().as_uri()
            c = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False, timeout=30, isolation_level=None)
            try:
                c.execute("SELECT 1 FROM meta LIMIT 1").fetchone()
            except sqlite3.OperationalError:
                # WAL needs its -shm file, which a read-only directory cannot hold: nothing can
                # write there anyway, so read the file as immutable (no locks, no WAL).
                c.close()
                c = sqlite3.connect(
                    f"{uri}?immutable=1", uri=True, check_same_thread=False, timeout=30, isolation_level=None
                )
        else:
            c = sqlite3.connect(self.db_path, check_same_thread=False, timeout=30, isolation_level=None)
            c.execute("PRAGMA journal_mode=WAL")
            c.execute("PRAGMA synchronous=NORMAL")
        c.execute("PRAGMA busy_timeout=30000")
        c.create_function("path_match", 2, path_matches, deterministic=True)
        if not self.readonly:
            self._create_schema(c)
        return c

    @staticmethod
    def _create_schema(c: sqlite3.Connection) -> None:
        """Create what is missing of the schema. A new database gets all of it in one transaction:
        a process killed while creating it leaves a database with no tables, which the next open
        fills, never one with some tables and not others. An existing one runs the idempotent
        script outside a transaction, which takes no write lock when nothing is missing."""
        if c.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone():
            c.executescript(_SCHEMA)
            if c.execute("SELECT 1 FROM meta WHERE key='schema_version'").fetchone() is not None:
                return
        try:
            c.executescript("BEGIN IMMEDIATE;\n" + _SCHEMA)  # the transaction stays open after the script
            if c.execute("SELECT 1 FROM meta WHERE key='schema_version'").fetchone() is None:
                c.execute("INSERT INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
                # FTS5 merges segments 8 at a time instead of 4: 13% less work to index 334k
                # chunks, and the same BM25 query time (benchmarks/results-lexical.txt).
                c.execute(f"INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('automerge', {FTS_AUTOMERGE})")
            c.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                c.execute("ROLLBACK")
            raise

    def close(self) -> None:
        if self.resident is not None:
            self.resident.close()
        with self._lock:
            for c in self._all:
                with contextlib.suppress(sqlite3.Error):
                    c.close()
            self._all.clear()
        self._local = threading.local()

    # --- metadata -------------------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, **values: object) -> None:
        with self.transaction():
            self.conn.executemany(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                [(k, None if v is None else str(v)) for k, v in values.items()],
            )

    def meta(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT key, value FROM meta").fetchall())

    # --- files and chunks -------------------------------------------------------------------
    def file_states(self) -> dict[str, tuple[int, int]]:
        """``{path: (mtime_ns, size)}`` for every indexed file."""
        return {p: (m, s) for p, m, s in self.conn.execute("SELECT path, mtime_ns, size FROM files")}

    def write_files(
        self,
        files: list[tuple[str, int, int, str, list[ChunkFields], int, int]],
        symbols_of: list[FileSymbols | None] | None = None,
    ) -> tuple[int, int]:
        """Replace the chunks of ``(path, mtime_ns, size, language, rows, priority, secrets masked)`` files,
        keeping rows (and so their vectors) whose text is unchanged, and their symbols with
        ``symbols_of`` (one per file, in order; None or left out: the file has none).

        ``rows`` are a file's ``chunk_fields``. Must run inside ``transaction()``. A whole batch
        goes in a few statements (one lookup, one insert, one FTS insert), not a few per file:
        1.5 s less for 10,000 files. Returns ``(added, removed)`` chunk counts.
        """
        c = self.conn
        old: dict[str, dict[str, list[tuple[int, int, int]]]] = {}
        paths = [f[0] for f in files]
        for k in range(0, len(paths), 500):
            part = paths[k : k + 500]
            for path, cid, key, s, e in c.execute(
                "SELECT path, id, embed_key, start_line, end_line FROM chunks"
                f" WHERE path IN ({','.join('?' * len(part))})",
                part,
            ):
                old.setdefault(path, {}).setdefault(key, []).append((cid, s, e))
        inserts = []
        stale: list[int] = []
        now = time.time()
        for path, _, _, language, rows, priority, _ in files:
            kept = old.get(path)
            for start, end, scope, content, key, terms, digest in rows:
                same = kept.get(key) if kept else None
                if same:
                    cid, s, e = same.pop()
                    if (s, e) != (start, end):  # moved, not changed: no FTS or vector work
                        c.execute("UPDATE chunks SET start_line=?, end_line=? WHERE id=?", (start, end, cid))
                    c.execute("UPDATE chunks SET priority=? WHERE id=? AND embedded=0", (priority, cid))
                    continue
                inserts.append((path, start, end, language, scope, content, terms, digest, key, priority))
            if kept:
                stale.extend(cid for rest in kept.values() for cid, _, _ in rest)
        if stale:
            c.executemany("DELETE FROM chunks WHERE id=?", [(i,) for i in stale])
        if inserts:
            # Ids only grow (AUTOINCREMENT), so the rows above the current maximum are the new ones.
            last = c.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0]
            c.executemany(
                "INSERT INTO chunks (path, start_line, end_line, language, scope, content, terms, hash,"
                " embed_key, priority) VALUES (?,?,?,?,?,?,?,?,?,?)",
                inserts,
            )
            c.execute(
                "INSERT INTO chunks_fts(rowid, path, scope, content, terms)"
                " SELECT id, path, scope, content, terms FROM chunks WHERE id > ?",
                (last,),
            )
        c.executemany(
            "INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,NULL,?)",
            [
                (path, mtime_ns, size, language, len(rows), now, masked)
                for path, mtime_ns, size, language, rows, _, masked in files
            ],
        )
        symbols.write(c, [(f[0], symbols_of[k] if symbols_of else None) for k, f in enumerate(files)])
        if grams.ready(c):  # exact search's trigrams, in the same transaction (core.store.grams)
            cut = [line for f in files for line in grams.cut_lines(f[0], f[4])]
            grams.added(c, last if inserts else None, paths, cut)
        return len(inserts), len(stale)

    def write_skipped(self, path: str, mtime_ns: int, size: int, reason: str) -> int:
        """Remember a file whose content can't be indexed (binary), so it isn't re-read until it
        changes; drops any chunks it had. Must run inside ``transaction()``."""
        n = self.conn.execute("DELETE FROM chunks WHERE path=?", (path,)).rowcount
        self.conn.execute(
            "INSERT OR REPLACE INTO files VALUES (?,?,?,NULL,0,?,?,0)", (path, mtime_ns, size, time.time(), reason)
        )
        self.conn.execute("DELETE FROM documents WHERE path=?", (path,))
        symbols.delete(self.conn, [path])
        grams.removed(self.conn, path)
        return n

    def delete_file(self, path: str) -> int:
        """Remove a file and its chunks (inside ``transaction()``); returns chunks removed."""
        n = self.conn.execute("DELETE FROM chunks WHERE path=?", (path,)).rowcount
        self.conn.execute("DELETE FROM files WHERE path=?", (path,))
        self.conn.execute("DELETE FROM documents WHERE path=?", (path,))
        symbols.delete(self.conn, [path])
        grams.removed(self.conn, path)
        return n

    def ensure_grams(self) -> bool:
        """Build exact search's trigram table where this index has none yet (a new index: at
        once; one made before exact search: from its chunks, once). True where it was built now."""
        if grams.ready(self.conn):
            return False
        with self.transaction():
            grams.build(self.conn)
        return True

    # --- documents ---------------------------------------------------------------------------
    def put_document(self, path: str, text: str, locators: list[tuple[int, str, int]]) -> None:
        """Keep a document's extracted text and locator map (inside ``transaction()``)."""
        self.conn.execute(
            "INSERT OR REPLACE INTO documents VALUES (?,?,?)",
            (path, zlib.compress(text.encode("utf-8", "surrogatepass"), 6), json.dumps([list(x) for x in locators])),
        )

    def document(self, path: str) -> tuple[str, list[tuple[int, str, int]]] | None:
        """A document's extracted text and its ``(first line, kind, number)`` locators, or None."""
        try:
            row = self.conn.execute("SELECT text, locators FROM documents WHERE path=?", (path,)).fetchone()
        except sqlite3.OperationalError:  # a read-only index made before documents were indexed
            return None
        if row is None:
            return None
        try:
            return zlib.decompress(row[0]).decode("utf-8", "replace"), [tuple(x) for x in json.loads(row[1])]
        except (zlib.error, ValueError):
            return None

    def locate(self, path: str, line: int) -> tuple[str, int] | None:
        """``("page", 12)`` or ``("slide", 4)``: where ``line`` of a document's extracted text is."""
        found = None
        try:
            row = self.conn.execute("SELECT locators FROM documents WHERE path=?", (path,)).fetchone()
            for first, kind, number in json.loads(row[0]) if row else ():
                if first > line:
                    break
                found = (kind, number)
        except (ValueError, TypeError, sqlite3.OperationalError):
            return None
        return found

    def document_status(self) -> dict[str, Any]:
        """Documents indexed, and each one skipped with its reason."""
        try:
            indexed = self.conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        except sqlite3.OperationalError:
            indexed = 0
        skipped = dict(
            self.conn.execute(
                f"SELECT path, skipped FROM files WHERE skipped IS NOT NULL AND ({_DOCUMENT_PATHS}) ORDER BY path"
                " LIMIT 1000"
            )
        )
        return {"indexed": indexed, "skipped": skipped}

    def retry_documents(self) -> None:
        """Once per index: forget the documents an older version remembered as binary, so that
        the extractors read them (an unchanged file is otherwise never read again)."""
        if self.get_meta("documents") == "1":
            return
        with self.transaction():
            self.conn.execute(f"DELETE FROM files WHERE skipped = 'binary' AND ({_DOCUMENT_PATHS})")
        self.set_meta(documents="1")

    def transaction(self) -> _Tx:
        """A write transaction: everything inside commits together or not at all."""
        return _Tx(self.conn)

    # --- embedding bookkeeping -----------------------------------------------------------
    def pending(self, limit: int) -> list[ChunkRow]:
        """Chunks still waiting for a vector, most valuable first."""
        rows = self.conn.execute(
            "SELECT id, path, start_line, end_line, language, scope, content, embed_key FROM chunks"
            " WHERE embedded=0 ORDER BY priority, id LIMIT ?",
            (limit,),
        ).fetchall()
        return [ChunkRow(*r) for r in rows]

    def pending_after(self, after: int, limit: int) -> list[ChunkRow]:
        """Chunks above id ``after`` still waiting for a vector, by id (a caller pages with the
        last id it saw, whatever it did with the rows)."""
        rows = self.conn.execute(
            "SELECT id, path, start_line, end_line, language, scope, content, embed_key FROM chunks"
            " WHERE embedded = 0 AND id > ? ORDER BY id LIMIT ?",
            (after, limit),
        ).fetchall()
        return [ChunkRow(*r) for r in rows]

    def mark_embedded(self, ids: list[int]) -> None:
        with self.transaction():
            self.conn.executemany("UPDATE chunks SET embedded=1 WHERE id=?", [(i,) for i in ids])

    def embedded_ids(self) -> set[int]:
        return {i for (i,) in self.conn.execute("SELECT id FROM chunks WHERE embedded=1")}

    def reset_embedded(self) -> None:
        with self.transaction():
            self.conn.execute("UPDATE chunks SET embedded=0 WHERE embedded=1")

    def vector_coverage(self) -> float:
        """The share of chunks that have a vector; nothing pending (the usual case) is one lookup
        in the partial index of pending chunks, without counting every chunk."""
        pending = int(self.conn.execute("SELECT count(*) FROM chunks WHERE embedded = 0").fetchone()[0])
        if not pending:
            return 1.0
        return 1.0 - pending / max(1, int(self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]))

    def counts(self) -> dict[str, int]:
        """Files, chunks, chunks with the full model's vectors, and pending ones. Every search's
        answer says them (``RepoState``), counted again only once the database has changed
        (``per_version``)."""
        return dict(self.per_version("counts", self._count))

    def _count(self) -> dict[str, int]:
        c = self.conn
        files = c.execute("SELECT count(*) FROM files WHERE skipped IS NULL").fetchone()[0]
        # Two index-only counts (chunks_path, and the partial index of pending chunks), not a scan
        # of every row's content: 15 ms instead of 120 ms at 334,000 chunks.
        chunks = c.execute("SELECT count(*) FROM chunks").fetchone()[0]
        pending = c.execute("SELECT count(*) FROM chunks WHERE embedded = 0").fetchone()[0]
        return {"files": files, "chunks": chunks, "vectors": chunks - pending, "pending": pending}

    def per_version(self, name: str, compute: Callable[[], T]) -> T:
        """``compute()``, worked out again only once the database has changed (``PRAGMA
        data_version`` for other connections' commits, ``total_changes`` for this one's), per
        thread, as the connection is. The caller must not change what it gets."""
        c = self.conn
        version = (c.execute("PRAGMA data_version").fetchone()[0], c.total_changes)
        kept: dict[str, tuple[tuple[int, int], Any]] = self._local.__dict__.setdefault("versioned", {})
        if name in kept and kept[name][0] == version:
            return cast(T, kept[name][1])
        value = compute()
        kept[name] = (version, value)
        return value

    # --- static tier -------------------------------------------------------------------
    def static_pending(self, after: int, limit: int, have: bool = False) -> list[ChunkRow]:
        """Chunks above id ``after`` without a static vector (``have``: with one), by id (new
        chunks get higher ids, so a caller pages with the last id it saw)."""
        rows = self.conn.execute(
            "SELECT id, path, start_line, end_line, language, scope, content, embed_key FROM chunks c WHERE id > ?"
            f" AND {'' if have else 'NOT '}EXISTS (SELECT 1 FROM static_vectors s WHERE s.id = c.id) ORDER BY id LIMIT ?",
            (after, limit),
        ).fetchall()
        return [ChunkRow(*r) for r in rows]

    def put_static(
        self,
        ids: list[int],
        vectors: np.ndarray | None,
        doc_ids: list[int] | None = None,
        doc_vectors: np.ndarray | None = None,
    ) -> None:
        """Store static vectors (float16) of chunk ids, and of the doc views of ``doc_ids``, in
        one transaction; a chunk deleted in the meantime gets none."""
        import numpy as np

        with self.transaction():
            for table, keys, vecs in (("static_vectors", ids, vectors), ("static_docs", doc_ids, doc_vectors)):
                if keys:
                    blobs = np.asarray(vecs, dtype=np.float16)
                    self.conn.executemany(
                        f"INSERT OR REPLACE INTO {table} SELECT id, ? FROM chunks WHERE id = ?",
                        [(blobs[k].tobytes(), cid) for k, cid in enumerate(keys)],
                    )
            self._bump_static()

    def clear_static(self) -> None:
        with self.transaction():
            self.conn.execute("DELETE FROM static_vectors")
            self.conn.execute("DELETE FROM static_docs")
            self._bump_static()

    def _bump_static(self) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('static_version', ?)", (str(time.time_ns()),))

    def static_count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM static_vectors").fetchone()[0])

    def static_matrix(self, dim: int, docs: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, vectors)``: every static vector (``docs``: every doc view's) as one float32
        matrix (rows L2-normalised when stored), with the chunk id of each row."""
        import numpy as np

        table = "static_docs" if docs else "static_vectors"
        try:
            rows = self.conn.execute(f"SELECT id, vector FROM {table} ORDER BY id").fetchall()
        except sqlite3.OperationalError:
            if not (docs and self.readonly):
                raise
            rows = []  # an index from before doc views, opened read-only: its chunks' vectors serve

        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        blob = b"".join(r[1] for r in rows)
        if len(blob) != len(rows) * dim * 2:  # vectors of another size: a model change half done
            return np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
        return ids, np.frombuffer(blob, dtype=np.float16).reshape(len(rows), dim).astype(np.float32)

    # --- reads ---------------------------------------------------------------------------
    def probe(self) -> str | None:
        """None when every table a search reads opens and answers, else what failed: the schema,
        the FTS5 table (its constructor reads its config and structure), a term lookup in it, and
        the first and last rows of the chunk, file and static tables. Milliseconds at any size:
        what an index run checks every time, where ``quick_check`` reads every page."""
        c = self.conn
        try:
            c.execute("SELECT count(*) FROM sqlite_schema").fetchone()
            c.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'codesight' LIMIT 1").fetchall()
            c.execute("SELECT count(*) FROM chunks_fts_config").fetchone()
            for table in ("chunks", "static_vectors"):
                c.execute(
                    f"SELECT * FROM {table} WHERE id IN ((SELECT min(id) FROM {table}), (SELECT max(id) FROM {table}))"
                ).fetchall()
            c.execute("SELECT * FROM files ORDER BY path LIMIT 1").fetchall()
            c.execute("SELECT * FROM meta").fetchall()
            symbols.probe(c)
        except sqlite3.DatabaseError as exc:
            return str(exc).splitlines()[0][:200]
        return None

    def quick_check(self, deep: bool = False) -> str | None:
        """None when the file is sound, else what was found: SQLite's quick_check (the b-trees);
        ``deep``, then each full-text index's own check of its segments too (``integrity-check``
        with rank 0, no re-tokenizing; about a second for a 400 MB index): garbage inside a
        segment's blob passes quick_check, and only the query that reads it would fail."""
        try:
            rows = [r[0] for r in self.conn.execute("PRAGMA quick_check(3)").fetchall()]
            if rows != ["ok"]:
                return "; ".join(rows)[:200]
            if not deep:
                return None
            tables = {n for (n,) in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            for fts in ("chunks_fts", *grams.FTS_TABLES, "sym_names"):
                if fts in tables:
                    self.conn.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('integrity-check', 0)")
        except sqlite3.DatabaseError as exc:
            return str(exc)
        return None

    def maybe_vacuum(self, min_bytes: int = 8 << 20, free_share: float = 0.5) -> bool:
        """VACUUM when more than ``free_share`` of a file over ``min_bytes`` is free pages (after
        big deletions): the file shrinks back instead of keeping its high-water mark."""
        c = self.conn
        pages = c.execute("PRAGMA page_count").fetchone()[0]
        free = c.execute("PRAGMA freelist_count").fetchone()[0]
        size = c.execute("PRAGMA page_size").fetchone()[0]
        if pages * size < min_bytes or free < pages * free_share:
            return False
        c.execute("VACUUM")
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return True

    def skipped(self) -> dict[str, int]:
        """Files the last walk did not index, by reason (binary, too large, special files, names
        that are not UTF-8, links out of the tree, unreadable, ...)."""
        out: dict[str, int] = {}
        with contextlib.suppress(ValueError):
            out.update(json.loads(self.get_meta("skipped") or "{}"))
        for reason, n in self.conn.execute(
            "SELECT skipped, count(*) FROM files WHERE skipped IS NOT NULL GROUP BY skipped"
        ):
            out[reason] = out.get(reason, 0) + n
        return dict(sorted(out.items()))

    def masked(self) -> dict[str, int]:
        """Secrets masked in indexed text: ``{"files": n, "secrets": m}``."""
        try:
            files, secrets = self.conn.execute(
                "SELECT count(*), coalesce(sum(masked), 0) FROM files WHERE masked > 0"
            ).fetchone()
        except sqlite3.OperationalError:  # an index from before masking, opened read-only
            return {"files": 0, "secrets": 0}
        return {"files": files, "secrets": secrets}

    def get_chunks(self, ids: list[int]) -> dict[int, ChunkRow]:
        out: dict[int, ChunkRow] = {}
        for k in range(0, len(ids), 500):
            part = ids[k : k + 500]
            q = ",".join("?" * len(part))
            for r in self.conn.execute(
                f"SELECT id, path, start_line, end_line, language, scope, content, embed_key FROM chunks WHERE id IN ({q})",
                part,
            ):
                out[r[0]] = ChunkRow(*r)
        return out

    def file_head(self, path: str) -> ChunkRow | None:
        """A file's first chunk (where a hit for the whole file opens); None if it has none."""
        row = self.conn.execute(
            "SELECT id, path, start_line, end_line, language, scope, content, embed_key FROM chunks"
            " WHERE path = ? ORDER BY start_line, id LIMIT 1",
            (path,),
        ).fetchone()
        return None if row is None else ChunkRow(*row)

    def file_links(self, paths: list[str]) -> dict[str, symbols.FileLinks]:
        """The names each of ``paths`` defines and uses (``symbols.file_links``)."""
        return symbols.file_links(self.conn, paths)

    def scope_matches(self, name: str, limit: int = 400) -> list[tuple[int, str, int, str]]:
        """``(id, path, start_line, scope)`` of chunks whose scope mentions ``name`` (an FTS phrase
        on the scope column; the caller checks the exact definition)."""
        phrase = '"' + name.replace('"', '""') + '"'
        try:
            return self.conn.execute(
                "SELECT c.id, c.path, c.start_line, c.scope FROM chunks_fts f JOIN chunks c ON c.id = f.rowid"
                " WHERE chunks_fts MATCH ? LIMIT ?",
                (f"scope : {phrase}", limit),
            ).fetchall()
        except sqlite3.OperationalError:
            return []

    def keep_resident(self) -> None:
        """Answer unfiltered BM25 queries from memory from now on (``core.store.lexical``): for a process
        that answers many. The copy is read in the background, and FTS5 answers until it is ready."""
        if self.resident is None:
            from codesight_tui.core.store.lexical import ResidentBM25

            self.resident = ResidentBM25(self.db_path, "chunks_fts", FTS_COLUMNS, BM25_WEIGHTS, FTS_TOKENIZE)
            self.resident.refresh()

    def bm25(self, query: str, limit: int, language: str | None = None, glob: str | None = None) -> list[int]:
        """Chunk ids ranked by FTS5 BM25 for a free-text query (any string is safe)."""
        terms = fts_terms(query)
        if not terms:
            return []
        if self.resident is not None and not language and not glob:
            found = self.resident.bm25(self.conn, terms, limit)
            if found is not None:
                return found
        match = fts_match(terms)
        sql = (
            "SELECT f.rowid FROM chunks_fts f"
            + (" JOIN chunks c ON c.id = f.rowid" if language or glob else "")
            + " WHERE chunks_fts MATCH ?"
        )
        args: list[object] = [match]
        if language:
            sql += " AND c.language = ?"
            args.append(language)
        if glob:
            sql += " AND path_match(c.path, ?)"
            args.append(glob)
        w = ", ".join(str(x) for x in BM25_WEIGHTS)
        sql += f" ORDER BY round(bm25(chunks_fts, {w}), 9), f.rowid LIMIT ?"  # ties by id, as the resident copy's
        args.append(limit)
        try:
            return [r[0] for r in self.conn.execute(sql, args)]
        except sqlite3.OperationalError as exc:  # should not happen: every term is quoted
            raise CodeSightError(f"search failed: {exc}") from None

    def size_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(self.db_path) + suffix)
            if p.exists():
                total += p.stat().st_size
        return total


class _Tx:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> Literal[False]:
        if exc_type is None:
            self.conn.execute("COMMIT")
        elif self.conn.in_transaction:
            # SQLite may have rolled back already (a full disk does): the first error is the one
            # that says what happened, so a failed ROLLBACK must not replace it.
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")
        return False
