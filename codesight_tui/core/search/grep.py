"""Exact and regex search from the index: ``codesight grep``, the TUI's exact and regex modes, MCP's
``grep``. A pattern is planned into the trigrams every match must hold (``plan``, after Russ Cox's
"Regular Expression Matching with a Trigram Index"); the index's trigram table
(``core.store.grams``) names the files whose chunks hold them; each of those files is then read as
it is on disk now and checked line by line by RE2, a linear-time engine: no pattern backtracks for
minutes, and the answer is the disk's, never a stale index's.

The index only narrows. A file changed since it was indexed, a file with masked secrets or a line
cut in pieces (``grams_whole``), and every file for a pattern with no trigram (``.``, ``\\w+``) are
read whatever the trigrams say. Matching follows ripgrep's defaults: line by line, case-sensitive
unless asked, ``\\w``, ``\\d`` and ``\\s`` over Unicode, a UTF-8 or UTF-16 byte-order mark read as
rg reads it.
"""

from __future__ import annotations

import importlib
import os
import re
import sqlite3
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from codesight_tui.core.errors import UsageError
from codesight_tui.core.languages import DOCUMENT_LANGUAGES
from codesight_tui.core.search.contract import GrepOptions, SearchRequest, SearchResult, check
from codesight_tui.core.store import grams

if TYPE_CHECKING:
    from codesight_tui.core.store.store import Store

MAX_PATTERN = 64 * 1024  # a longer pattern is a pasted file, not a search
MAX_TRIGRAMS = 6  # a long literal asks the index for this many of its trigrams: enough to narrow
_MAX_MEM = 64 << 20  # RE2's budget for one compiled pattern (its default, 8 MB, refuses big alternations)

# ripgrep's classes are Unicode's; RE2's \w, \d, \s and \b are ASCII. The classes are rewritten
# (\b cannot be: it is RE2's, and said in the README).
_WORD = r"\pL\pM\p{Nd}\p{Nl}\p{Pc}"
_SPACE = r"\t\n\v\f\r \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"
_CLASSES = {
    "w": (f"[{_WORD}]", _WORD),
    "W": (f"[^{_WORD}]", None),
    "d": (r"\p{Nd}", r"\p{Nd}"),
    "D": (r"\P{Nd}", None),
    "s": (f"[{_SPACE}]", _SPACE),
    "S": (f"[^{_SPACE}]", None),
}


class _Match(Protocol):
    def start(self, group: int = 0) -> int: ...

    def end(self, group: int = 0) -> int: ...


class _Regex(Protocol):
    """What grep asks of RE2's compiled pattern (``google-re2`` ships no types)."""

    def search(self, text: bytes, pos: int = 0, endpos: int | None = None) -> _Match | None: ...


@dataclass(frozen=True, slots=True)
class Compiled:
    """A pattern ready to run: RE2's program over bytes, whether a match is wrapped in word
    boundaries (its group 1 is then the match), and the plan that narrows the files."""

    regex: _Regex
    word: bool
    plan: Query
    find: Callable[[bytes, int, int], tuple[int, int] | None]  # _finder's, made once
    sensitive: bool  # the plan's literals are in the case given (no (?i) inside the pattern either)


# --- the plan: which trigrams every match holds ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class Query:
    """What every match holds: ``op`` ``all`` (nothing known: every file), ``lit`` (``text``, of 3
    characters or more), ``and`` or ``or`` of ``parts``."""

    op: str
    text: str = ""
    parts: tuple[Query, ...] = ()

    def fts(self) -> str | None:
        """The FTS5 query over the trigram table, or None: every file is a candidate."""
        return self.expression(lambda text: " AND ".join(_quoted(t) for t in _trigrams(text)))

    def expression(self, literal: Callable[[str], str]) -> str | None:
        """The plan as a boolean expression: each literal as ``literal`` writes it, joined by
        AND and OR; None where it names nothing (every file is a candidate)."""
        if self.op == "all":
            return None
        if self.op == "lit":
            return literal(self.text)
        joined = [p.expression(literal) for p in self.parts]
        if self.op == "or":
            return None if any(j is None for j in joined) else "(" + " OR ".join(f"({j})" for j in joined) + ")"
        kept = [j for j in joined if j is not None]
        return " AND ".join(f"({j})" for j in kept) if kept else None

    def holds(self, text: str, fold: bool) -> bool:
        """Whether ``text`` (casefolded first where ``fold``: then the literals are too) holds
        what the plan requires."""
        if self.op == "lit":
            return (self.text.casefold() if fold else self.text) in text
        if self.op == "and":
            return all(p.holds(text, fold) for p in self.parts)
        if self.op == "or":
            return any(p.holds(text, fold) for p in self.parts)
        return True


ALL = Query("all")


def _quoted(gram: str) -> str:
    return '"' + gram.replace('"', '""') + '"'


def _trigrams(text: str) -> list[str]:
    """The trigrams of ``text``, at most ``MAX_TRIGRAMS``: those likeliest to be rare (of the
    letters least common in text: ``_rarity``). Each narrows alone; a common one costs the
    index a long list to intersect and narrows little (a quarter of the query's time saved on
    the 10,000-file tree, for 10% more candidate files)."""
    grams_of = list(dict.fromkeys(text[i : i + 3] for i in range(len(text) - 2)))
    if len(grams_of) <= MAX_TRIGRAMS:
        return grams_of
    rarest = sorted(range(len(grams_of)), key=lambda k: -sum(_rarity(ch) for ch in grams_of[k]))
    return [grams_of[k] for k in sorted(rarest[:MAX_TRIGRAMS])]


_COMMON = " etaoinsrlcdhupmfgbywvkxjqz"  # letters, most common first (English text's order)


def _rarity(ch: str) -> int:
    """How rare a character is likely to be in text: a letter's place in ``_COMMON``; anything
    else (a digit, punctuation, a capital's letter counts as the letter) in the middle."""
    at = _COMMON.find(ch.lower())
    return at if at >= 0 else len(_COMMON) // 2


def _and(parts: list[Query]) -> Query:
    kept = tuple(p for p in parts if p.op != "all")
    return ALL if not kept else kept[0] if len(kept) == 1 else Query("and", parts=kept)


def _or(parts: list[Query]) -> Query:
    if not parts or any(p.op == "all" for p in parts):
        return ALL
    return parts[0] if len(parts) == 1 else Query("or", parts=tuple(parts))


def plan(pattern: str, fixed: bool = False) -> Query:
    """The trigrams every match of ``pattern`` holds. A literal is the AND of its trigrams; a
    regex the AND/OR of the literals it requires (a run of literal characters, an alternation, a
    repeat of at least one). What the parser cannot read, or reads as nothing required, asks for
    every file: the plan may only ever narrow too little, never too much."""
    if fixed:  # a line break is not in the index as it is on disk (CRLF is read as LF)
        return _and([Query("lit", part) for part in re.split("[\r\n]", pattern) if len(part) >= 3])
    try:
        parsed = _parser().parse(pattern)
    except (re.error, RecursionError, OverflowError, ValueError):
        return ALL  # RE2 syntax Python does not read (\pL, \Q..\E): read every file
    return _sequence(list(parsed.data))


def _parser() -> Any:
    """The standard library's own regex parser (``re._parser``; ``sre_parse`` before 3.11)."""
    try:
        return importlib.import_module("re._parser")
    except ImportError:  # pragma: no cover - Python 3.10
        return importlib.import_module("sre_parse")


def _sequence(items: list[tuple[Any, Any]]) -> Query:  # noqa: C901 - one case per node kind
    c = _parser()  # its node kinds (LITERAL, BRANCH, ...) are its names too
    parts: list[Query] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) >= 3:
            parts.append(Query("lit", "".join(run)))
        run.clear()

    for op, av in items:
        if op is c.LITERAL and av not in (10, 13):
            run.append(chr(av))
        elif op is c.SUBPATTERN:
            body = av[3].data
            if all(o is c.LITERAL and a not in (10, 13) for o, a in body):
                run.extend(chr(a) for _, a in body)
            else:
                flush()
                parts.append(_sequence(list(body)))
        elif op is c.BRANCH:
            flush()
            parts.append(_or([_sequence(list(b.data)) for b in av[1]]))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)):
            low, _high, body = av
            flush()
            if low >= 1:
                parts.append(_sequence(list(body.data)))
        elif op is getattr(c, "ATOMIC_GROUP", None):
            flush()
            parts.append(_sequence(list(av.data)))
        else:  # a class, an anchor, a wildcard: the run of literals ends here
            flush()
    flush()
    return _and(parts)


# --- the pattern as RE2 runs it -------------------------------------------------------------------


def _unicode_classes(pattern: str) -> str:
    """``pattern`` with ``\\w``, ``\\d`` and ``\\s`` (and their negations) as ripgrep reads them,
    over Unicode, in and out of brackets."""
    out: list[str] = []
    i, depth = 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt in _CLASSES:
                outside, inside = _CLASSES[nxt]
                out.append(inside if depth and inside is not None else outside)
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if ch == "[" and not depth:
            depth = 1
            out.append(ch)
            if pattern[i + 1 : i + 2] == "^":
                out.append("^")
                i += 1
            if pattern[i + 1 : i + 2] == "]":  # "[]...]": a literal bracket first
                out.append("]")
                i += 1
        elif ch == "]" and depth:
            depth = 0
            out.append(ch)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def smart_case(pattern: str) -> bool:
    """Whether ``pattern`` asks for case: an upper-case letter of its own (not of an escape such
    as ``\\W`` or ``\\S``), as ripgrep's and fzf's smart case read it."""
    return any(ch.isupper() for ch in re.sub(r"\\(p\{[^}]*\}|P\{[^}]*\}|.)", "", pattern))


def compile_pattern(pattern: str, options: GrepOptions) -> Compiled:
    """``pattern`` ready to run, or a ``UsageError`` saying in one line what is wrong and where."""
    import re2

    if not pattern:
        raise UsageError("the pattern is empty: say what to look for, e.g. codesight grep 'connection reset'")
    if "\x00" in pattern:
        raise UsageError("the pattern holds a NUL byte: no text line holds one")
    if len(pattern.encode("utf-8", "surrogatepass")) > MAX_PATTERN:
        raise UsageError(f"the pattern is {len(pattern) // 1024} KB: at most {MAX_PATTERN // 1024} KB")
    body = re2.escape(pattern) if options.fixed else _unicode_classes(pattern)
    if options.word:
        body = f"(?:^|[^{_WORD}])({body})(?:$|[^{_WORD}])"
    opts = re2.Options()
    opts.never_nl = True  # a match never spans lines, as ripgrep's
    opts.log_errors = False
    opts.max_mem = _MAX_MEM
    sensitive = options.case == "sensitive" or (options.case == "smart" and smart_case(pattern))
    opts.case_sensitive = sensitive
    try:
        regex = re2.compile("(?m)" + body, opts)
    except re2.error as exc:
        raise UsageError(_explained(pattern, exc)) from None
    return Compiled(
        regex,
        options.word,
        plan(pattern, options.fixed),
        _finder(regex, 1 if options.word else 0),
        sensitive and (options.fixed or "(?" not in pattern),
    )


def _explained(pattern: str, exc: Exception) -> str:
    """RE2's complaint in one line, with the column it is at: Python's parser names the position
    of most mistakes (RE2 names the rest of the pattern); else the column of the part RE2 names."""
    try:
        re.compile(pattern)
    except re.error as mistake:
        if mistake.pos is not None:
            return f"invalid regex at column {mistake.pos + 1}: {mistake.msg}"
    why = str(exc)
    if why.startswith(("b'", 'b"')):
        why = why[2:-1]
    what, _, part = why.partition(": ")
    part = part.removeprefix("(?m)")
    at = pattern.find(part) if part else -1
    where = f" at column {at + 1}" if at >= 0 else ""
    return f"invalid regex{where}: {what}" + (f" ({part[:60]})" if part else "")


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


@dataclass(slots=True)
class _Line:
    number: int
    start: int  # byte offsets of the line in the file
    end: int
    spans: list[tuple[int, int]]  # byte offsets of the matches in the file


def _finder(regex: _Regex, word: int) -> Callable[[bytes, int, int], tuple[int, int] | None]:
    """``find(data, pos, end)``: the span (group 1 where it has one: the word inside its
    boundaries) of the first match in ``data[pos:end]``, with the text around it as context (so
    ``^`` and ``\\b`` read the byte before ``pos``), or None. RE2's own call where the wrapper
    has it (no match object made per line), else the wrapper's ``search``."""
    raw = getattr(regex, "_regexp", None)
    anchor = getattr(getattr(importlib.import_module("re2"), "_Anchor", None), "UNANCHORED", None)
    if raw is not None and anchor is not None:
        call = raw.Match

        def find(data: bytes, pos: int, end: int) -> tuple[int, int] | None:
            spans = call(anchor, data, pos, end)
            return None if spans[0][0] < 0 else spans[word]

        return find

    def search(data: bytes, pos: int, end: int) -> tuple[int, int] | None:  # pragma: no cover - another wrapper
        m = regex.search(data, pos, end)
        return None if m is None else (m.start(word), m.end(word))

    return search


def matching_lines(
    compiled: Compiled,
    data: bytes,
    limit: int | None,
    every_span: bool = True,
    first: tuple[int, int] | None = None,
) -> list[_Line]:
    """The lines of ``data`` that match, in order, at most ``limit``: each with its matches
    (``every_span``), or with its first (what a plain printer shows): the rest of a line is then
    not searched. ``first``: the first match, found already (``_read``)."""
    find = compiled.find
    size = len(data)
    lines: list[_Line] = []
    line_no, counted_to, pos = 1, 0, 0
    rfind, nl_find, count = data.rfind, data.find, data.count
    while pos <= size and (limit is None or len(lines) < limit):
        span, first = (first, None) if first is not None else (find(data, pos, size), None)
        if span is None:
            break
        s, e = span
        if s == size and (not data or data.endswith(b"\n")):
            break  # the empty "line" after the last newline is none, as ripgrep counts lines
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
        lines.append(_Line(line_no, start, end, spans))
        pos = end + 1
    return lines


def _hit(
    path: str, language: str, data: bytes, line: _Line, before: int, after: int, line_starts: _Lines
) -> SearchResult:
    """One matching line as a search hit: its context lines around it (``content``), the line
    (``line``), and its matches as character spans of that line."""
    raw = data[line.start : line.end]
    text = raw.decode("utf-8", "replace")
    if raw.isascii():  # a byte is a character: the spans are the offsets as they are
        spans = tuple((s - line.start, min(e, line.end) - line.start) for s, e in line.spans)
    else:
        spans = tuple(
            (
                len(raw[: s - line.start].decode("utf-8", "replace")),
                len(raw[: min(e, line.end) - line.start].decode("utf-8", "replace")),
            )
            for s, e in line.spans
        )
    first = max(1, line.number - before)
    if before or after:
        context = (
            line_starts.text(first, line.number - 1) + [text] + line_starts.text(line.number + 1, line.number + after)
        )
        content, last = "\n".join(context), first + len(context) - 1
    else:
        content, last = text, line.number
    return SearchResult(path, first, last, "", language, 0.0, None, None, content, 0, line=line.number, spans=spans)


class _Lines:
    """A file's lines by number, split once where context is asked for."""

    def __init__(self, data: bytes, wanted: bool) -> None:
        self.lines = data.decode("utf-8", "replace").split("\n") if wanted else []
        if self.lines and self.lines[-1] == "":
            self.lines.pop()

    def text(self, first: int, last: int) -> list[str]:
        return self.lines[max(0, first - 1) : max(0, last)]


def _scopes(store: Store, path: str, hits: list[SearchResult]) -> None:
    """Each hit's enclosing definition, ``Client.send``: the innermost of the file's definitions
    (``core.store.symbols``) around its line; else the scope of its chunk (a document's heading)."""
    from codesight_tui.core.search.contract import short_scope

    defs = store.conn.execute(
        "SELECT d.start_line, d.end_line, d.name, d.scope FROM defs d JOIN sym_files f ON d.file_id = f.id"
        " WHERE f.path = ? ORDER BY d.start_line, d.end_line DESC",
        (path,),
    ).fetchall()
    chunks: list[tuple[int, int, str]] | None = None
    for hit in hits:
        around = [(name, scope) for s, e, name, scope in defs if s <= hit.line <= e]
        if around:
            name, scope = around[-1]  # in start order, outer first: the last is the innermost
            hit.scope = f"{scope}.{name}" if scope else name
            continue
        if chunks is None:
            chunks = store.conn.execute(
                "SELECT start_line, end_line, scope FROM chunks WHERE path=? AND scope != ''"
                " ORDER BY end_line - start_line",
                (path,),
            ).fetchall()
        hit.scope = short_scope(next((scope for s, e, scope in chunks if s <= hit.line <= e), ""))


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
    lines = matching_lines(compiled, data, cap, options.every_span)
    numbered = _Lines(data, bool(options.before or options.after))
    hits = [_hit(path, language, data, ln, options.before, options.after, numbered) for ln in lines]
    for hit in hits:
        hit.start_line += first_line - 1
        hit.end_line += first_line - 1
        hit.line += first_line - 1
    return hits


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """The process's threads that read files and find their first match: RE2 lets go of the GIL
    while it scans, as reading a file does, so they run on every core."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1), thread_name_prefix="codesight-grep")
        return _POOL


def _read(
    compiled: Compiled, base: str, files: list[IndexedFile], max_file_size: int
) -> list[tuple[IndexedFile, bytes, tuple[int, int]]]:
    """Those of ``files`` that match, each with its text as ripgrep searches it and its first
    match (a binary file, or one gone, does not)."""
    from codesight_tui.core.ingest.walker import read_bytes

    out = []
    for f in files:
        data, _why = read_bytes(base + f.path, max_file_size)
        text = _text_bytes(data) if data is not None else None
        first = compiled.find(text, 0, len(text)) if text is not None else None
        if text is not None and first is not None:
            out.append((f, text, first))
    return out


_BATCH = 32  # files one task of the pool reads: a task per file costs more than its file
_AHEAD = 8  # tasks in flight ahead of the one whose lines are being made


def _scanned(
    compiled: Compiled, base: str, files: list[IndexedFile], max_file_size: int
) -> Iterator[tuple[IndexedFile, bytes, tuple[int, int]]]:
    """The files that match, in order, each with its text and first match: a few read in this
    thread, many on the pool's threads, in batches (at most ``_AHEAD`` ahead: a search stopped
    at its limit, or cancelled, reads little further)."""
    if len(files) <= _BATCH or (os.cpu_count() or 1) == 1:
        yield from _read(compiled, base, files, max_file_size)
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
            yield from pending.popleft().result()
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
    wanted = bool(options.before or options.after)
    for indexed, text, first in _scanned(compiled, str(root) + os.sep, files, max_file_size):
        check(request.cancel)
        cap = left if options.max_per_file is None else min(left, options.max_per_file)
        lines = matching_lines(compiled, text, cap, options.every_span, first)
        if not lines:
            continue
        numbered = _Lines(text, wanted)
        hits = [_hit(indexed.path, indexed.language, text, ln, options.before, options.after, numbered) for ln in lines]
        if options.scopes:
            _scopes(store, indexed.path, hits)
        yield hits
        left -= len(hits)
        if left <= 0:
            return
