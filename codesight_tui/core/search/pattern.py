"""A grep pattern, planned and compiled: the trigrams every match must hold (``plan``, after Russ
Cox's "Regular Expression Matching with a Trigram Index"), and RE2's program that checks each line
(``compile_pattern``), with ripgrep's defaults: line by line, case-sensitive unless asked, ``\\w``,
``\\d`` and ``\\s`` over Unicode. ``core.search.grep`` runs them over the files.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from codesight_tui.core.errors import UsageError
from codesight_tui.core.search.contract import GrepOptions

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
    joinable: bool  # its matches in a file are the same with other files around it (``SEPARATOR``)
    test: Callable[[bytes], bool] | None  # False for a text that cannot match (``Query.test``)
    raw: tuple[Callable[..., Any], object, int] | None  # RE2's own call, for a scan in C (``_raw``)


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

    def test(self) -> Callable[[bytes], bool] | None:
        """A quick test of a file's text, as bytes: False where it cannot hold a match (it lacks a
        character a required literal has); None where the plan requires nothing. One character
        per literal, its rarest-looking, found with ``memchr`` (``bytes.__contains__`` of one
        byte): a pattern with no trigram often requires one (``^\\s+#``), and a file without it
        then costs no scan of RE2's. RE2 itself skips ahead to a literal that begins a pattern."""
        if self.op == "lit":
            ascii_chars = [ch for ch in self.text if ch.isascii()]
            if not ascii_chars:
                return None
            byte = max(ascii_chars, key=_rarity).encode()
            return lambda data: byte in data
        tests = [p.test() for p in self.parts]
        if self.op == "or" and all(t is not None for t in tests):
            return lambda data: any(t(data) for t in tests if t is not None)
        kept = [t for t in tests if t is not None] if self.op == "and" else []
        return None if not kept else kept[0] if len(kept) == 1 else (lambda data: all(t(data) for t in kept))

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


def plan(pattern: str, fixed: bool = False, shortest: int = 3) -> Query:
    """The trigrams every match of ``pattern`` holds. A literal is the AND of its trigrams; a
    regex the AND/OR of the literals it requires (a run of literal characters, an alternation, a
    repeat of at least one). What the parser cannot read, or reads as nothing required, asks for
    every file: the plan may only ever narrow too little, never too much. ``shortest``: the
    fewest characters a literal has to be kept (3: a trigram; 1 for ``Query.test``)."""
    if fixed:  # a line break is not in the index as it is on disk (CRLF is read as LF)
        return _and([Query("lit", part) for part in re.split("[\r\n]", pattern) if len(part) >= shortest])
    try:
        parsed = _parser().parse(pattern)
    except (re.error, RecursionError, OverflowError, ValueError):
        return ALL  # RE2 syntax Python does not read (\pL, \Q..\E): read every file
    return _sequence(list(parsed.data), shortest)


def _parser() -> Any:
    """The standard library's own regex parser (``re._parser``; ``sre_parse`` before 3.11)."""
    try:
        return importlib.import_module("re._parser")
    except ImportError:  # pragma: no cover - Python 3.10
        return importlib.import_module("sre_parse")


def _sequence(items: list[tuple[Any, Any]], shortest: int) -> Query:  # noqa: C901 - one case per node kind
    c = _parser()  # its node kinds (LITERAL, BRANCH, ...) are its names too
    parts: list[Query] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) >= shortest:
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
                parts.append(_sequence(list(body), shortest))
        elif op is c.BRANCH:
            flush()
            parts.append(_or([_sequence(list(b.data), shortest) for b in av[1]]))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)):
            low, _high, body = av
            flush()
            if low >= 1:
                parts.append(_sequence(list(body.data), shortest))
        elif op is getattr(c, "ATOMIC_GROUP", None):
            flush()
            parts.append(_sequence(list(av.data), shortest))
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


# Files searched as one text are joined with a line of their own between them: no match spans
# lines, so none spans two files, and a file's first and last lines read as they do alone (``^``,
# ``$`` and ``\\b`` see a line break beyond them). A NUL is in no text file: a match on that line is
# no file's. Only what reads the whole text tells the difference: ``\\A``, ``\\z``, and ``(?-m)``,
# whose ``^`` and ``$`` are then the text's ends.
SEPARATOR = b"\n\x00\n"
_TEXT_ANCHORS = re.compile(r"\\[Az]|\(\?[a-zA-Z]*-[a-zA-Z]*m")


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
    exact = sensitive and (options.fixed or "(?" not in pattern)
    group = 1 if options.word else 0
    raw = _raw(regex, group)
    return Compiled(
        regex,
        options.word,
        plan(pattern, options.fixed),
        _finder(regex, group, raw),
        exact,
        options.fixed or _TEXT_ANCHORS.search(pattern) is None,
        plan(pattern, options.fixed, shortest=1).test() if exact else None,
        raw,
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


def _raw(regex: _Regex, word: int) -> tuple[Callable[..., Any], object, int] | None:
    """RE2's own call, ``Match(anchor, data, pos, end)``, with its unanchored anchor and the group
    a match is (1 inside word boundaries); None where the wrapper does not have them."""
    raw = getattr(regex, "_regexp", None)
    anchor = getattr(getattr(importlib.import_module("re2"), "_Anchor", None), "UNANCHORED", None)
    return None if raw is None or anchor is None else (raw.Match, anchor, word)


def _finder(
    regex: _Regex, word: int, raw: tuple[Callable[..., Any], object, int] | None
) -> Callable[[bytes, int, int], tuple[int, int] | None]:
    """``find(data, pos, end)``: the span (group 1 where it has one: the word inside its
    boundaries) of the first match in ``data[pos:end]``, with the text around it as context (so
    ``^`` and ``\\b`` read the byte before ``pos``), or None. RE2's own call where the wrapper
    has it (``raw``, ``_raw``'s: no match object made per line), else the wrapper's ``search``."""
    if raw is not None:
        call, anchor, _group = raw

        def find(data: bytes, pos: int, end: int) -> tuple[int, int] | None:
            spans = call(anchor, data, pos, end)
            return None if spans[0][0] < 0 else spans[word]

        return find

    def search(data: bytes, pos: int, end: int) -> tuple[int, int] | None:  # pragma: no cover - another wrapper
        m = regex.search(data, pos, end)
        return None if m is None else (m.start(word), m.end(word))

    return search
