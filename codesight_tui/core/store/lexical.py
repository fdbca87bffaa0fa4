"""BM25 from memory, as SQLite FTS5 computes it: for a long-lived process (the warm service).

FTS5's ``bm25()`` scores every row that matches any word of a question, 3-9 ms a query on
Django's 25,000-37,000 chunks: most of a served search. ``ResidentBM25`` reads the FTS index once
(every token's occurrences from ``fts5vocab``, each row's size and the table's totals) into numpy
arrays and then answers a query in a fraction of a millisecond, with FTS5's own formula: the same
IDF (its floor of 1e-6 included), the same column weights, the same document lengths, and phrases
(a quoted term that FTS5 reads as several tokens, ``get_or_create``) matched as FTS5 matches them,
by consecutive offsets in one column. So the ranking is FTS5's (``tests/unit/test_lexical.py`` checks
it row for row).

It answers only what it can answer exactly, and returns None for the rest, which FTS5 answers as
before:
- while its copy is older than the FTS index (FTS5's structure record, read per query for ~20 us,
  changes with every write). A query that finds no copy starts a read in a background thread; one
  that finds it stale does once the index has been quiet for ``QUIET`` seconds (two queries that
  long apart saw the same record), so that a run of writes (an index run's batches, a branch
  switch under the watcher) costs one read, not one per query;
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
MAX_ROWS = 150_000  # chunks: a larger index stays with FTS5 (Django's 25,225 take 2 s and ~35 MB)
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
    spans: dict[str, tuple[int, int, int, int]]  # token -> its slices of rows/freqs and of places
    rows: np.ndarray  # positions in ids, token by token
    freqs: np.ndarray  # the column-weighted count of the token in that row
    places: np.ndarray  # each occurrence, token by token, ascending: row << 32 | column << 28 | offset
    weights: np.ndarray  # per column

    def phrase(self, tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, freqs)`` of a token or a phrase of several (consecutive offsets in one column,
        as FTS5 matches a quoted string that tokenizes to several tokens)."""
        spans = [self.spans.get(t) for t in tokens]
        if not spans or any(sp is None for sp in spans):
            return np.empty(0, np.int32), np.empty(0, np.float64)
        if len(spans) == 1:
            r0, r1, _, _ = spans[0]  # type: ignore[misc]
            return self.rows[r0:r1], self.freqs[r0:r1].astype(np.float64)
        _, _, p0, p1 = spans[0]  # type: ignore[misc]
        starts = self.places[p0:p1]
        for i, sp in enumerate(spans[1:], 1):
            _, _, q0, q1 = sp  # type: ignore[misc]
            nxt = self.places[q0:q1]
            at = np.searchsorted(nxt, starts + i)
            starts = starts[(at < len(nxt)) & (nxt[np.minimum(at, len(nxt) - 1)] == starts + i)]
            if not len(starts):
                break
        rows = (starts >> 32).astype(np.int32)
        w = self.weights[(starts >> 28) & 0xF]
        uniq, first = np.unique(rows, return_index=True)
        return uniq, np.add.reduceat(w, first) if len(first) else np.empty(0, np.float64)

    def top(self, phrases: Sequence[Sequence[str]], limit: int) -> list[int]:
        score = np.zeros(len(self.ids))
        for tokens in phrases:
            rows, f = self.phrase(tokens)
            if not len(rows):
                continue
            hits = len(rows)
            idf = math.log((self.n_rows - hits + 0.5) / (hits + 0.5))
            score[rows] += (idf if idf > 0.0 else 1e-6) * ((f * (K1 + 1.0)) / (f + self.norm[rows]))
        # Scores to 9 decimals, ties broken by id, as Store.bm25 orders FTS5's: the two sum in
        # another order, and a tie at the cut must not keep one row here and another there.
        found = np.flatnonzero(score)
        got = np.round(score[found], 9)
        if len(found) > limit:
            kth = -np.partition(-got, limit - 1)[limit - 1]  # the limit-th best score
            keep = np.flatnonzero(got > kth)
            tied = np.flatnonzero(got == kth)
            tied = tied[np.argsort(self.ids[found[tied]], kind="stable")][: limit - len(keep)]
            keep = np.concatenate([keep, tied])
            found, got = found[keep], got[keep]
        order = np.lexsort((self.ids[found], -got))
        return [int(i) for i in self.ids[found[order]][:limit]]


class ResidentBM25:
    """An in-memory copy of one index's FTS5 postings (see the module). ``search`` answers as
    ``ORDER BY bm25(chunks_fts, *weights) LIMIT n`` would, or returns None."""

    def __init__(
        self,
        db_path: Path,
        table: str,
        columns: Sequence[str],
        weights: Sequence[float],
        tokenize: str,
        max_rows: int = MAX_ROWS,
    ) -> None:
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

    def bm25(self, conn: sqlite3.Connection, terms: Sequence[str], limit: int) -> list[int] | None:
        """The ids FTS5 would rank first for the OR of ``terms`` (each a quoted FTS5 string), or
        None where this copy can't say (stale, still building, too big)."""
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
                    self.refresh(key)
            return None
        return postings.top(self.tokens(terms), limit)

    def tokens(self, terms: Sequence[str]) -> list[tuple[str, ...]]:
        """Each term as FTS5 reads it: its tokens (none, one, or a phrase of several)."""
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
            return [self._tokens[term] for term in terms]

    # --- reading the index ----------------------------------------------------------------------
    def refresh(self, seen: bytes | None = None) -> None:
        """Start reading the index afresh in a background thread (unless a read is under way).
        ``seen``: the structure record the caller saw, not tried again if this read fails."""
        with self._lock:
            if self._building is not None and self._building.is_alive():
                return
            self._building = threading.Thread(
                target=self._build_quietly, args=(seen,), name="codesight-bm25", daemon=True
            )
            self._building.start()

    def wait(self, timeout: float | None = None) -> None:
        """Wait for a read under way (tests, benchmarks)."""
        t = self._building
        if t is not None:
            t.join(timeout)

    def _build_quietly(self, seen: bytes | None) -> None:
        try:
            self.build()
        except (sqlite3.Error, ValueError, MemoryError):
            # FTS5 goes on answering; failed_key keeps it from trying again until the next write
            # (a database this process cannot open read-only fails before it reads a record)
            self.failed_key = self.failed_key or seen

    def _instances(self, conn: sqlite3.Connection, total: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every occurrence of every token, as (row id, column, offset) arrays in the vocabulary's
        (token, row, column, offset) order: ``total`` of them, or a ``ValueError``."""
        column = " ".join(f"WHEN {_quote(c)} THEN {i}" for i, c in enumerate(self.columns))
        cur = conn.execute(
            f"SELECT doc, CASE col {column} ELSE {len(self.columns)} END, offset FROM temp.cs_vocab"
        )  # in (term, doc, col, offset) order: checked by the caller
        docs = np.empty(total, np.int64)
        cols = np.empty(total, np.int64)
        offsets = np.empty(total, np.int64)
        at = 0
        while batch := cur.fetchmany(65536):
            n = len(batch)
            if at + n > total:
                raise ValueError("the FTS5 vocabulary changed while it was read")
            block = np.array(batch, dtype=np.int64)
            docs[at : at + n], cols[at : at + n], offsets[at : at + n] = block[:, 0], block[:, 1], block[:, 2]
            at += n
        if at != total or (total and (offsets.max() >= 1 << 28 or cols.max() >= len(self.columns))):
            raise ValueError("the FTS5 vocabulary does not add up")
        return docs, cols, offsets

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
            # per token: the rows that hold it and its occurrences, in the instance table's order
            vocab = conn.execute("SELECT term, doc, cnt FROM temp.cs_vocab_row ORDER BY term").fetchall()
            total = sum(n for _, _, n in vocab)
            docs, cols, offsets = self._instances(conn, total)
            rows = np.searchsorted(ids, docs)
            if total and (rows.max() >= len(ids) or not np.array_equal(ids[rows], docs)):
                raise ValueError("a posting names a row with no size")
            del docs
            places = (rows << 32) | (cols << 28) | offsets
            ends = np.cumsum([n for _, _, n in vocab], dtype=np.int64)
            if total > 1:
                rising = places[1:] > places[:-1]
                rising[ends[:-1] - 1] = True  # a new token starts afresh
                if not rising.all():
                    raise ValueError("the FTS5 vocabulary is not in token, row, column, offset order")
            first = np.zeros(total, bool)  # the first occurrence of a token in a row
            if total:
                first[0] = True
                first[1:] = rows[1:] != rows[:-1]
                first[ends[:-1]] = True
            starts = np.flatnonzero(first)
            weights = np.array(self.weights, np.float64)
            freqs = np.add.reduceat(weights[cols], starts).astype(np.float32) if total else np.empty(0, np.float32)
            del cols, offsets, first
            spans: dict[str, tuple[int, int, int, int]] = {}
            r0 = p0 = 0
            for (term, n_docs, _n), p1 in zip(vocab, ends.tolist(), strict=False):
                spans[term] = (r0, r0 + n_docs, p0, p1)
                r0, p0 = r0 + n_docs, p1
            if r0 != len(starts):
                raise ValueError("the FTS5 vocabulary's row counts do not add up")
            self.postings = _Postings(
                key, n_rows, ids, norm, spans, rows[starts].astype(np.int32), freqs, places, weights
            )
            self.failed_key = None
            self.builds += 1
        finally:
            try:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
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
