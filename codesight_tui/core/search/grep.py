"""Exact and regex search from the index: ``codesight grep``, the TUI's exact and regex modes, MCP's
``grep``. A pattern is planned into the trigrams every match must hold (``core.search.pattern``);
the index's trigram table (``core.store.grams``) names the files whose chunks hold them; each of
those files is then read as it is on disk now and checked line by line by RE2, a linear-time
engine: no pattern backtracks for minutes, and the answer is the disk's, never a stale index's.

The index only narrows. A file changed since it was indexed, a file with masked secrets or a line
cut in pieces (``grams_whole``), and every file for a pattern with no trigram (``.``, ``\\w+``) are
read whatever the trigrams say. Files are read in batches on a pool of threads (each batch's
reads in one call that lets go of the interpreter's lock, ``walker.read_many``), and a batch is
searched as one text where the pattern allows: one call of RE2 finds the batch's first match, so
a file that does not match costs no call of its own.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from bisect import bisect_right
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from codesight_tui.core.languages import DOCUMENT_LANGUAGES
from codesight_tui.core.search.contract import GrepOptions, SearchRequest, SearchResult, check
from codesight_tui.core.search.pattern import SEPARATOR, Compiled, Query, compile_pattern
from codesight_tui.core.store import grams

if TYPE_CHECKING:
    from codesight_tui.core.store.store import Store

linescan: ModuleType | None
try:  # the lines of a file in C (native/linescan.c); optional, as a build without a compiler has none
    from codesight_tui.core.search import linescan as _built

    linescan = _built
except ImportError:  # pragma: no cover - line_hits makes the same hits in Python
    linescan = None


# --- the files: candidates, fresh ones, and each read --------------------------------------------


@dataclass(frozen=True, slots=True)
class IndexedFile:
    path: str
    language: str
    mtime_ns: int
    size: int


def indexed_files(
    store: Store, glob: str | None, languages: tuple[str, ...], among: set[str] | None = None
) -> list[IndexedFile]:
    """The files grep reads: indexed text files (documents are not lines), filtered, in path
    order; ``among``: only those."""
    from codesight_tui.core.store.store import path_matches

    sql = "SELECT path, coalesce(language, ''), mtime_ns, size FROM files WHERE skipped IS NULL"
    if among is None:  # every file: the list is made once per change of the index (a scan reads them all)
        every = store.per_version(
            "grep.files",
            lambda: [IndexedFile(*row) for row in sorted(store.conn.execute(sql)) if row[1] not in DOCUMENT_LANGUAGES],
        )
        if not languages and not glob:
            return list(every)
        return [
            f for f in every if (not languages or f.language in languages) and (not glob or path_matches(f.path, glob))
        ]
    wanted, rows = sorted(among), []
    for k in range(0, len(wanted), 500):
        part = wanted[k : k + 500]
        rows += store.conn.execute(sql + f" AND path IN ({','.join('?' * len(part))})", part).fetchall()
    rows.sort()
    return [
        IndexedFile(p, lang, m, s)
        for p, lang, m, s in rows
        if lang not in DOCUMENT_LANGUAGES
        and (not languages or lang in languages)
        and (not glob or path_matches(p, glob))
    ]


def candidates(store: Store, query: Query, sensitive: bool | None = None) -> set[str] | None:
    """The files whose chunks (or cut lines) hold every trigram the plan asks for, and those the
    trigrams cannot vouch for; None where every file must be read (no trigram, or no trigram
    table). With ``sensitive`` (True: in the case given; False: in any), only those whose
    chunks' text holds the plan's literals too: the index's text is the files' as indexed,
    every line whole in a chunk or a cut line, so it narrows further (a case-sensitive name, a
    file that holds each trigram but never the whole). Files with masked secrets are not among
    them: ``masked`` names those."""
    fts = query.fts()
    if fts is None or not grams.ready(store.conn):
        return None
    if sensitive is None:
        holds = None
    elif sensitive:
        holds = lambda text: query.holds(text, False)  # noqa: E731
    else:
        holds = lambda text: query.holds(text.casefold(), True)  # noqa: E731
    try:
        return grams.named(store.conn, fts, holds)
    except sqlite3.OperationalError:  # a trigram the tokenizer refuses: read every file
        return None


def masked(store: Store) -> set[str]:
    """The files with secrets masked in the index: a match may overlap a secret, whose trigrams
    the index never holds, so each of their masked lines is checked on disk (``_masked_match``)."""
    return store.per_version(
        "grep.masked",
        lambda: {p for (p,) in store.conn.execute("SELECT path FROM files WHERE masked > 0 AND skipped IS NULL")},
    )


_MASKED_SPANS: dict[tuple[str, str, int, int], tuple[tuple[int, int], ...] | None] = {}


def masked_lines(store: Store, root: Path, f: IndexedFile, max_file_size: int) -> tuple[tuple[int, int], ...] | None:
    """The byte spans on disk of the lines of ``f`` that hold a masked secret, as indexed (its
    chunks' text holds the mark); None where they cannot be told apart (a byte-order mark, a
    changed file): the file is read whole. Kept per process for each indexed version of a file."""
    from codesight_tui.core.ingest.walker import read_bytes
    from codesight_tui.core.redact import MARK

    key = (str(root), f.path, f.mtime_ns, f.size)
    if key in _MASKED_SPANS:
        return _MASKED_SPANS[key]
    mark = MARK.split("{")[0]
    wanted: set[int] = set()
    for start, content in store.conn.execute(
        "SELECT start_line, content FROM chunks WHERE path=? AND instr(content, ?) > 0", (f.path, mark)
    ):
        wanted.update(start + k for k, text in enumerate(content.split("\n")) if mark in text)
    wanted.update(  # a mark cut in two with its line
        n
        for (n,) in store.conn.execute(
            "SELECT line FROM grams_lines WHERE path=? AND instr(content, ?) > 0", (f.path, mark)
        )
    )
    data, _why = read_bytes(str(root / f.path), max_file_size)
    spans: tuple[tuple[int, int], ...] | None = None
    if data is not None and len(data) == f.size and _text_bytes(data) is data and b"\r" not in data:
        found, line, pos = [], 1, 0
        for number in sorted(wanted):
            while line < number and pos <= len(data):
                nl = data.find(b"\n", pos)
                pos, line = (len(data) + 1 if nl < 0 else nl + 1), line + 1
            end = data.find(b"\n", pos)
            found.append((pos, len(data) if end < 0 else end))
        spans = tuple(found)
    if len(_MASKED_SPANS) > 4096:
        _MASKED_SPANS.clear()
    _MASKED_SPANS[key] = spans
    return spans


def _masked_match(
    store: Store, root: Path, compiled: Compiled, f: IndexedFile, max_file_size: int, watched: bool
) -> bool:
    """Whether a masked file must be read: it changed since it was indexed (as a running watcher
    knows, ``watched``, else as its size and time say), or one of its masked lines, read on its
    own, matches. Its other lines are whole in the index's trigrams."""
    from codesight_tui.core.ingest.walker import clamp_mtime

    path = str(root / f.path)
    if not watched:
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            return False
        if st.st_size != f.size or clamp_mtime(st.st_mtime_ns) != f.mtime_ns:
            return True
    spans = masked_lines(store, root, f, max_file_size)
    if spans is None:
        return True
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        for s, e in spans:
            line = os.pread(fd, e - s, s)
            if compiled.find(line, 0, len(line)) is not None:
                return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


def stale(root: Path, files: list[IndexedFile], among: set[str] | None) -> set[str]:
    """Files changed on disk since they were indexed (size or modification time), among those
    the trigrams left out: they are read as they are now."""
    from codesight_tui.core.ingest.walker import clamp_mtime

    out: set[str] = set()
    base = str(root) + os.sep
    for f in files:
        if among is not None and f.path in among:
            continue
        try:
            st = os.stat(base + f.path, follow_symlinks=False)
        except OSError:
            continue
        if st.st_size != f.size or clamp_mtime(st.st_mtime_ns) != f.mtime_ns:
            out.add(f.path)
    return out


def _text_bytes(data: bytes) -> bytes | None:
    """A file's bytes as ripgrep searches them: a UTF-8 byte-order mark dropped, UTF-16 with its
    mark transcoded to UTF-8; None for a binary file (a NUL byte)."""
    if data[:3] == b"\xef\xbb\xbf":
        return data[3:]
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            return data.decode("utf-16").encode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return None
    return None if b"\x00" in data else data


def line_hits(
    compiled: Compiled,
    path: str,
    language: str,
    data: bytes,
    limit: int | None,
    *,
    every_span: bool = True,
    before: int = 0,
    after: int = 0,
    first: tuple[int, int] | None = None,
) -> list[SearchResult]:
    """The lines of ``data`` (the text of ``path``) that match, in order, at most ``limit``, each
    as a hit: the line, its matches as character spans of it (``every_span``: all of them; else
    its first, which is what a plain printer shows, and the rest of the line is not searched),
    with ``before`` and ``after`` lines of context in its ``content``. ``first``: the first
    match, found already (``_firsts``). Tens of thousands of lines for a pattern such as
    ``\\w+\\(\\)``: without context lines the loop runs in C where it is built
    (``native/linescan.c``, the same hits), else here, making no object per line but the hit."""
    if linescan is not None and compiled.raw is not None and not (before or after):
        call, anchor, group = compiled.raw
        limit = -1 if limit is None else limit
        made: list[SearchResult] = linescan.scan(
            call, anchor, group, data, limit, every_span, first, SearchResult, path, language
        )
        return made
    find = compiled.find
    size = len(data)
    hits: list[SearchResult] = []
    numbered = _Lines(data, bool(before or after))
    line_no, counted_to, pos = 1, 0, 0
    rfind, nl_find, count = data.rfind, data.find, data.count
    no_last = not data or data.endswith(b"\n")  # the empty "line" after the last newline, as ripgrep counts
    while pos <= size and (limit is None or len(hits) < limit):
        span, first = (first, None) if first is not None else (find(data, pos, size), None)
        if span is None:
            break
        s, e = span
        if s == size and no_last:
            break
        start = rfind(b"\n", 0, s) + 1
        end = nl_find(b"\n", s)
        end = size if end < 0 else end
        line_no += count(b"\n", counted_to, start)
        counted_to = start
        spans = [(s, e)]
        at = e if e > s else e + 1
        while every_span and at <= end:
            more = find(data, at, end)
            if more is None:
                break
            spans.append(more)
            at = more[1] if more[1] > more[0] else more[1] + 1
        raw = data[start:end]
        if raw.isascii():  # a byte is a character: the spans are the offsets as they are
            text = raw.decode("ascii")
            if len(spans) == 1:  # most lines: no generator made for one span
                chars: tuple[tuple[int, int], ...] = ((s - start, (e if e < end else end) - start),)
            else:
                chars = tuple((a - start, min(b, end) - start) for a, b in spans)
        else:
            text = raw.decode("utf-8", "replace")
            chars = tuple((_chars(raw, a - start), _chars(raw, min(b, end) - start)) for a, b in spans)
        if before or after:
            top = max(1, line_no - before)
            context = numbered.text(top, line_no - 1) + [text] + numbered.text(line_no + 1, line_no + after)
            content, bottom = "\n".join(context), top + len(context) - 1
        else:
            content, top, bottom = text, line_no, line_no
        hits.append(
            SearchResult(path, top, bottom, "", language, 0.0, None, None, content, 0, line=line_no, spans=chars)
        )
        pos = end + 1
    return hits


def _chars(raw: bytes, at: int) -> int:
    """The characters of ``raw`` (UTF-8, bad bytes one each) before byte ``at``."""
    return len(raw[:at].decode("utf-8", "replace"))


class _Lines:
    """A file's lines by number, split once where context is asked for."""

    def __init__(self, data: bytes, wanted: bool) -> None:
        self.lines = data.decode("utf-8", "replace").split("\n") if wanted else []
        if self.lines and self.lines[-1] == "":
            self.lines.pop()

    def text(self, first: int, last: int) -> list[str]:
        return self.lines[max(0, first - 1) : max(0, last)]


def _scopes(store: Store, found: list[list[SearchResult]]) -> None:
    """Each hit's enclosing definition, ``Client.send``: the innermost of its file's definitions
    (``core.store.symbols``) around its line; else the scope of the smallest of its chunks around
    it (a document's heading). ``found``: the hits of a batch of files, a list per file, whose
    definitions and chunks are asked for in one query each (a query per file cost more than the
    search), then gone through once per file: thousands of matching lines and definitions are
    not their product."""
    paths = [hits[0].path for hits in found]
    defs: dict[str, list[tuple[int, int, str, str]]] = {p: [] for p in paths}
    for path, start, end, name, scope in _rows(
        store,
        "SELECT f.path, d.start_line, d.end_line, d.name, d.scope FROM defs d JOIN sym_files f ON d.file_id = f.id"
        " WHERE f.path IN ({}) ORDER BY f.path, d.start_line, d.end_line DESC",
        paths,
    ):
        defs[path].append((start, end, name, scope))
    left = {hits[0].path: _innermost(defs[hits[0].path], hits) for hits in found}
    chunks: dict[str, list[tuple[int, int, str]]] = {p: [] for p, rest in left.items() if rest}
    for path, start, end, scope in _rows(
        store,
        "SELECT path, start_line, end_line, scope FROM chunks WHERE path IN ({}) AND scope != ''"
        " ORDER BY path, end_line - start_line",
        list(chunks),
    ):
        chunks[path].append((start, end, scope))
    for path, rows in chunks.items():
        _smallest(rows, left[path])


def _rows(store: Store, sql: str, paths: list[str]) -> list[Any]:
    """``sql``'s rows for ``paths`` (its ``{}`` the placeholders), a few hundred paths a query."""
    rows: list[Any] = []
    for k in range(0, len(paths), 500):
        part = paths[k : k + 500]
        rows += store.conn.execute(sql.format(",".join("?" * len(part))), part).fetchall()
    return rows


def _innermost(defs: list[tuple[int, int, str, str]], hits: list[SearchResult]) -> list[SearchResult]:
    """Each hit's innermost definition (``defs`` by start, the longest first); the hits that have
    none, in line order."""
    left: list[SearchResult] = []
    opened: list[tuple[int, str, str]] = []  # definitions begun above the line, the innermost last
    at = 0
    for hit in sorted(hits, key=lambda h: h.line):
        while at < len(defs) and defs[at][0] <= hit.line:
            opened.append(defs[at][1:])
            at += 1
        while opened and opened[-1][0] < hit.line:  # ended above it: above every later line too
            opened.pop()
        if opened:
            _end, name, scope = opened[-1]
            hit.scope = f"{scope}.{name}" if scope else name
        else:
            left.append(hit)
    return left


def _smallest(chunks: list[tuple[int, int, str]], left: list[SearchResult]) -> None:
    """Each hit of ``left`` (in line order) takes the scope of the smallest of ``chunks`` (smallest
    first) around its line."""
    from codesight_tui.core.search.contract import short_scope

    lines = [h.line for h in left]
    skip = list(range(len(left) + 1))  # the next hit at or after k with no chunk yet

    def unset(k: int) -> int:
        while skip[k] != k:
            skip[k] = skip[skip[k]]
            k = skip[k]
        return k

    for s, e, scope in chunks:
        k = unset(bisect_right(lines, s - 1))
        while k < len(left) and lines[k] <= e:
            left[k].scope = short_scope(scope)
            skip[k] = k + 1
            k = unset(k + 1)


def _to_read(
    store: Store,
    root: Path,
    named: set[str] | None,
    unindexed: set[str] | None,
    glob: str | None,
    languages: tuple[str, ...],
) -> list[IndexedFile]:
    """The files to read, in path order: every indexed one where the plan names none (``named``
    None); else those it names and those changed since they were indexed. What changed is what
    a running watcher has seen and not indexed yet (``unindexed``), else what a stat of every
    indexed file says (size or modification time)."""
    if named is None:
        return indexed_files(store, glob, languages)
    if unindexed is None:
        every = indexed_files(store, glob, languages)
        changed = stale(root, every, named)
        return [f for f in every if f.path in named or f.path in changed]
    from codesight_tui.core.languages import detect_language
    from codesight_tui.core.store.store import path_matches

    files = indexed_files(store, glob, languages, named | unindexed)
    new = unindexed - {f.path for f in files}  # created since the last batch: not in the index yet
    for path in new:
        language = detect_language(path) or ""
        if (not languages or language in languages) and (not glob or path_matches(path, glob)):
            files.append(IndexedFile(path, language, 0, -1))
    return sorted(files, key=lambda f: f.path)


def text_hits(
    compiled: Compiled, options: GrepOptions, path: str, language: str, text: str, first_line: int, limit: int
) -> list[SearchResult]:
    """The matching lines of ``text`` (a chunk's, whose first line is ``first_line`` of its file),
    at most ``limit``, numbered as lines of the file: exact search over a store that keeps text,
    not files (a fleet store)."""
    data = text.encode("utf-8", "surrogatepass")
    cap = limit if options.max_per_file is None else min(limit, options.max_per_file)
    hits = line_hits(
        compiled, path, language, data, cap, every_span=options.every_span, before=options.before, after=options.after
    )
    for hit in hits:
        hit.start_line += first_line - 1
        hit.end_line += first_line - 1
        hit.line += first_line - 1
    return hits


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """The process's threads that read files and find their first match: reading a batch and
    RE2's scan let go of the interpreter's lock, so they run on every core."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1), thread_name_prefix="codesight-grep")
        return _POOL


_MARKS = (b"\xef", b"\xff", b"\xfe")  # how a byte-order mark begins: such a file is read as ripgrep reads it


def _texts(base: str, files: list[IndexedFile], max_file_size: int) -> list[tuple[IndexedFile, bytes]]:
    """Those of ``files`` that are text, each with its text as ripgrep searches it (a binary file,
    or one gone, is none)."""
    from codesight_tui.core.ingest.walker import read_many

    out = []
    for f, data in zip(files, read_many([base + f.path for f in files], max_file_size, text=True), strict=True):
        if isinstance(data, bytes):
            text = _text_bytes(data) if data[:1] in _MARKS else data
            if text is not None:
                out.append((f, text))
    return out


def _firsts(
    compiled: Compiled, texts: list[tuple[IndexedFile, bytes]]
) -> list[tuple[IndexedFile, bytes, tuple[int, int]]]:
    """Those of ``texts`` that match, each with its first match. A text without what the pattern
    requires is left out first (``Compiled.test``). Where the pattern allows, the texts are then
    searched as one (``SEPARATOR`` between them): one call of RE2 from the start, and one more
    from the file after each that matched."""
    find = compiled.find
    if compiled.test is not None:
        texts = [(f, t) for f, t in texts if compiled.test(t)]
    if not compiled.joinable or len(texts) < 2:
        return [(f, t, first) for f, t in texts if (first := find(t, 0, len(t))) is not None]
    joined = SEPARATOR.join(t for _, t in texts)
    starts = list(accumulate((len(t) + len(SEPARATOR) for _, t in texts[:-1]), initial=0))
    out: list[tuple[IndexedFile, bytes, tuple[int, int]]] = []
    pos = 0
    while True:
        span = find(joined, pos, len(joined))
        if span is None:
            return out
        k = bisect_right(starts, span[0]) - 1
        f, text = texts[k]
        if span[0] - starts[k] <= len(text):  # else on the line between two files: no file's
            out.append((f, text, (span[0] - starts[k], span[1] - starts[k])))
        if k + 1 == len(starts):
            return out
        pos = starts[k + 1]


def _read(
    compiled: Compiled, base: str, files: list[IndexedFile], max_file_size: int
) -> list[tuple[IndexedFile, bytes, tuple[int, int]]]:
    return _firsts(compiled, _texts(base, files, max_file_size))


_BATCH = 32  # files one task of the pool reads: a task per file costs more than its file
_AHEAD = 8  # tasks in flight ahead of the one whose lines are being made


def _scanned(
    compiled: Compiled, base: str, files: list[IndexedFile], max_file_size: int
) -> Iterator[list[tuple[IndexedFile, bytes, tuple[int, int]]]]:
    """The files that match, in order, a batch at a time, each with its text and first match
    (``_firsts``): a few read in this thread, many on the pool's threads (at most ``_AHEAD``
    batches ahead: a search stopped at its limit, or cancelled, reads little further)."""
    if len(files) <= _BATCH or (os.cpu_count() or 1) == 1:
        yield _read(compiled, base, files, max_file_size)
        return
    pool = _pool()
    batches = [files[k : k + _BATCH] for k in range(0, len(files), _BATCH)]
    pending: deque[Future[list[tuple[IndexedFile, bytes, tuple[int, int]]]]] = deque()
    at = 0
    try:
        while pending or at < len(batches):
            while at < len(batches) and len(pending) < _AHEAD:
                pending.append(pool.submit(_read, compiled, base, batches[at], max_file_size))
                at += 1
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()


def grep(
    store: Store, root: Path, request: SearchRequest, max_file_size: int, unindexed: set[str] | None = None
) -> Iterator[list[SearchResult]]:
    """The matching lines of ``request.query`` under ``root``, file by file in path order (each
    file's hits as one list): the files the plan and the index name, the files changed since
    they were indexed (``unindexed``: as a running watcher knows them; None: stat every file),
    each read now. ``request.limit`` caps the lines in all."""
    from codesight_tui.core.languages import normalize_language

    options = request.grep or GrepOptions()
    compiled = compile_pattern(request.query, options)
    f = request.filters
    languages = tuple(normalize_language(t) for t in options.types)
    if f.language:
        languages += (normalize_language(f.language),)
    named = candidates(store, compiled.plan, compiled.sensitive)
    spot = set() if named is None else masked(store) - named - (unindexed or set())
    watched = unindexed is not None
    files = [
        indexed
        for indexed in _to_read(store, root, None if named is None else named | spot, unindexed, f.glob, languages)
        if indexed.path not in spot or _masked_match(store, root, compiled, indexed, max_file_size, watched)
    ]
    left = request.limit
    for batch in _scanned(compiled, str(root) + os.sep, files, max_file_size):
        found: list[list[SearchResult]] = []
        for indexed, text, first in batch:
            check(request.cancel)
            cap = left if options.max_per_file is None else min(left, options.max_per_file)
            hits = line_hits(
                compiled,
                indexed.path,
                indexed.language,
                text,
                cap,
                every_span=options.every_span,
                before=options.before,
                after=options.after,
                first=first,
            )
            if hits:
                found.append(hits)
                left -= len(hits)
                if left <= 0:
                    break
        if options.scopes and found:
            _scopes(store, found)
        yield from found
        if left <= 0:
            return
