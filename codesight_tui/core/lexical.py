"""BM25 from memory, as SQLite FTS5 computes it: for a long-lived process (the warm service).

FTS5's ``bm25()`` scores every row that matches any word of a question, 3-9 ms a query on
Django's 25,000-37,000 chunks: most of a served search. ``ResidentBM25`` reads the FTS index once
(its ``fts5vocab`` postings, each row's size and the table's totals) into numpy arrays and then
answers a query in a fraction of a millisecond, with FTS5's own formula: the same IDF (its
floor of 1e-6 included), the same column weights, the same document lengths, so the same ranking
(``tests/test_lexical.py`` checks it against FTS5 row for row).

It answers only what it can answer exactly, and returns None for the rest, which FTS5 answers as
before:
- while its copy is older than the FTS index (FTS5's structure record, read per query for ~20 us,
  changes with every write). A query that finds no copy starts a read in a background thread; one
  that finds it stale does once the index has been quiet for ``QUIET`` seconds (two queries that
  long apart saw the same record), so that a run of writes (an index run's batches, a branch
  switch under the watcher) costs one read, not one per query;
- a quoted term that FTS5 reads as a phrase of several tokens (``get_or_create``), which needs
  token positions;
- an index of more than ``MAX_ROWS`` chunks, where the copy would cost more memory than it saves.

Query terms are tokenized by SQLite itself (an in-memory FTS5 table with the index's tokenizer),
so that stemming and case folding are FTS5's exactly.
"""

from __future__ import annotations

import math
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

K1 = 1.2  # FTS5's bm25() constants (fts5_aux.c)
B = 0.75
QUIET = 2.0  # seconds an index must go unchanged before a stale copy is read again
MAX_ROWS = 300_000  # chunks: a larger index stays with FTS5 (its copy would take seconds and 100s of MB)
_STRUCTURE_ROWID = 10  # FTS5's %_data rows: the structure record (changes with every write) ...
_AVERAGES_ROWID = 1  # ... and the averages record (row count, then each column's token total)


def _varints(blob: bytes) -> list[int]:
    """SQLite's varints (big-endian groups of 7 bits; a 9th byte carries 8) as FTS5 stores them."""
    out: list[int] = []
    value = n = 0
    for byte in blob:
        if n == 8:
            out.append((value << 8) | byte)
            value = n = 0
            continue
        value = (value << 7) | (byte & 0x7F)
        n += 1
        if not byte & 0x80:
            out.append(value)
            value = n = 0
    return out


@dataclass
class _Postings:
    key: bytes  # the structure record it was read at
    n_rows: int
    ids: np.ndarray  # the rows' ids, ascending
    norm: np.ndarray  # per row: K1 * (1 - B + B * length / average length)
    spans: dict[str, tuple[int, int]]  # token -> its slice of rows/freqs
    rows: np.ndarray  # positions in ids, term by term
    freqs: np.ndarray  # the column-weighted count of the token in that row

    def top(self, phrases: Sequence[str | None], limit: int) -> list[int]:
        score = np.zeros(len(self.ids))
        for token in phrases:
            span = self.spans.get(token) if token is not None else None
            if span is None:
                continue
            start, end = span
            hits = end - start
            idf = math.log((self.n_rows - hits + 0.5) / (hits + 0.5))
            rows, f = self.rows[start:end], self.freqs[start:end].astype(np.float64)
            score[rows] += (idf if idf > 0.0 else 1e-6) * ((f * (K1 + 1.0)) / (f + self.norm[rows]))
        found = np.flatnonzero(score)
        if len(found) > limit:
            found = found[np.argpartition(-score[found], limit - 1)[:limit]]
        order = np.lexsort((self.ids[found], -score[found]))
        return [int(i) for i in self.ids[found[order]][:limit]]


class ResidentBM25:
    """An in-memory copy of one index's FTS5 postings (see the module). ``search`` answers as
    ``ORDER BY bm25(chunks_fts, *weights) LIMIT n`` would, or returns None."""

    def __init__(self, db_path: Path, table: str, columns: Sequence[str], weights: Sequence[float],
                 tokenize: str, max_rows: int = MAX_ROWS) -> None:
        self.db_path = db_path
        self.table = table
        self.columns = list(columns)
        self.weights = list(weights)
        self.tokenize = tokenize
        self.max_rows = max_rows
        self.postings: _Postings | None = None
        self.failed_key: bytes | None = None  # a build that failed at this key is not tried again
        self.builds = 0
        self._stale: tuple[bytes, float] | None = None  # a newer record, and when a query first saw it
        self._building: threading.Thread | None = None
        self._lock = threading.Lock()
        self._tokenizer: sqlite3.Connection | None = None
        self._tokens: dict[str, tuple[str, ...]] = {}

    # --- answering ------------------------------------------------------------------------------
    def key(self, conn: sqlite3.Connection) -> bytes | None:
        row = conn.execute(f"SELECT block FROM {self.table}_data WHERE id = ?", (_STRUCTURE_ROWID,)).fetchone()
        return bytes(row[0]) if row and row[0] is not None else None

    def search(self, conn: sqlite3.Connection, terms: Sequence[str], limit: int) -> list[int] | None:
        """The ids FTS5 would rank first for the OR of ``terms`` (each a quoted FTS5 string), or
        None where this copy can't say (stale, still building, too big, or a phrase)."""
        try:
            key = self.key(conn)
        except sqlite3.Error:
            return None
        postings = self.postings
        if key is None or postings is None or postings.key != key:
            if key is not None and key != self.failed_key:
                now = time.monotonic()
                if self._stale is None or self._stale[0] != key:
                    self._stale = (key, now)
                if postings is None or now - self._stale[1] >= QUIET:
                    self.refresh()
            return None
        tokens = self.tokens(terms)
        if tokens is None:
            return None
        return postings.top(tokens, limit)

    def tokens(self, terms: Sequence[str]) -> list[str | None] | None:
        """Each term as FTS5 reads it: its one token (None for a term with none), or None for the
        whole query where a term is a phrase of several."""
        with self._lock:
            missing = [t for t in dict.fromkeys(terms) if t not in self._tokens]
            if missing:
                if self._tokenizer is None:
                    c = sqlite3.connect(":memory:", check_same_thread=False)
                    c.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize={_quote(self.tokenize)})")
                    c.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
                    self._tokenizer = c
                c = self._tokenizer
                c.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", list(enumerate(missing, 1)))
                found: dict[int, list[str]] = {}
                for doc, token in c.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
                    found.setdefault(doc, []).append(token)
                c.execute("DELETE FROM t")
                if len(self._tokens) > 50_000:
                    self._tokens.clear()
                for i, term in enumerate(missing, 1):
                    self._tokens[term] = tuple(found.get(i, ()))
            out: list[str | None] = []
            for term in terms:
                toks = self._tokens[term]
                if len(toks) > 1:
                    return None
                out.append(toks[0] if toks else None)
            return out

    # --- reading the index ----------------------------------------------------------------------
    def refresh(self) -> None:
        """Start reading the index afresh in a background thread (unless a read is under way)."""
        with self._lock:
            if self._building is not None and self._building.is_alive():
                return
            self._building = threading.Thread(target=self._build_quietly, name="codesight-bm25", daemon=True)
            self._building.start()

    def wait(self, timeout: float | None = None) -> None:
        """Wait for a read under way (tests, benchmarks)."""
        t = self._building
        if t is not None:
            t.join(timeout)

    def _build_quietly(self) -> None:
        try:
            self.build()
        except (sqlite3.Error, ValueError, MemoryError):
            pass  # FTS5 goes on answering; failed_key keeps it from trying again until the next write

    def build(self) -> None:
        """Read the postings, in one read transaction (a writer may be at work meanwhile)."""
        uri = Path(self.db_path).resolve().as_uri()
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None)
        key: bytes | None = None
        try:
            conn.execute("BEGIN")
            key = self.key(conn)
            if key is None:
                return
            self.failed_key = key  # until this read succeeds
            row = conn.execute(f"SELECT block FROM {self.table}_data WHERE id = ?", (_AVERAGES_ROWID,)).fetchone()
            totals = _varints(bytes(row[0])) if row else []
            n_rows = totals[0] if totals else 0
            if n_rows == 0 or n_rows > self.max_rows or len(totals) != 1 + len(self.columns):
                return
            sizes = conn.execute(f"SELECT id, sz FROM {self.table}_docsize ORDER BY id").fetchall()
            ids = np.fromiter((r[0] for r in sizes), np.int64, len(sizes))
            length = np.fromiter((sum(_varints(bytes(r[1]))) for r in sizes), np.float64, len(sizes))
            if len(ids) != n_rows or int(length.sum()) != sum(totals[1:]):
                raise ValueError("the FTS5 table's sizes do not add up")
            norm = K1 * (1.0 - B + B * length / (sum(totals[1:]) / n_rows))
            conn.execute(f"CREATE VIRTUAL TABLE temp.cs_vocab_row USING fts5vocab(main, {self.table}, row)")
            conn.execute(f"CREATE VIRTUAL TABLE temp.cs_vocab USING fts5vocab(main, {self.table}, instance)")
            vocab = conn.execute("SELECT term, doc FROM temp.cs_vocab_row ORDER BY term").fetchall()
            weight = " ".join(f"WHEN {_quote(c)} THEN {float(w)!r}" for c, w in zip(self.columns, self.weights))
            cur = conn.execute(f"SELECT doc, sum(CASE col {weight} ELSE 1.0 END) FROM temp.cs_vocab"
                               " GROUP BY term, doc ORDER BY term, doc")
            total = sum(n for _, n in vocab)
            docs = np.empty(total, np.int64)
            freqs = np.empty(total, np.float32)
            at = 0
            while batch := cur.fetchmany(65536):
                n = len(batch)
                if at + n > total:
                    raise ValueError("the FTS5 vocabulary changed while it was read")
                docs[at:at + n] = np.fromiter((r[0] for r in batch), np.int64, n)
                freqs[at:at + n] = np.fromiter((r[1] for r in batch), np.float64, n)
                at += n
            if at != total:
                raise ValueError("the FTS5 vocabulary does not add up")
            rows = np.searchsorted(ids, docs)
            if total and (rows.max() >= len(ids) or not np.array_equal(ids[rows], docs)):
                raise ValueError("a posting names a row with no size")
            spans: dict[str, tuple[int, int]] = {}
            start = 0
            for term, n in vocab:
                spans[term] = (start, start + n)
                start += n
            self.postings = _Postings(key, n_rows, ids, norm, spans, rows.astype(np.int32), freqs)
            self.failed_key = None
            self.builds += 1
        finally:
            try:
                conn.execute("ROLLBACK") if conn.in_transaction else None
            finally:
                conn.close()

    def close(self) -> None:
        with self._lock:
            if self._tokenizer is not None:
                self._tokenizer.close()
                self._tokenizer = None
        self.postings = None


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
