"""Definitions and references of one file, from its tree-sitter parse: what `def`, `refs`,
`callers` and `callees` answer from (issue 51).

A definition is a function, method, class, type or module the grammar names (``grammars.GRAMMARS``,
the same ones the chunks are scoped by), with its kind, its enclosing definitions and the line of
its name. A reference is every other identifier in the code, with its line, the innermost
definition it sits in, and a kind: ``call`` (the name called: ``f(x)``, ``obj.f(x)``, ``new F``),
``type`` (a type position), ``import`` (inside an import) or ``other``. Names inside comments and
strings are no identifiers to the grammar, so they are never references.

Both come from the parse the chunker makes anyway. Where the C walk is built (``symscan``, from
``native/symscan.c``), the index's rows come from one walk of each tree and a loop over its names
in C, told each name's kind by tables made here from the same node types as the query; otherwise,
and for ``extract``, from one tree-sitter query per file and a loop in Python. Both give the same
rows.
"""

from __future__ import annotations

import re
import time
from array import array
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import cache
from itertools import accumulate, chain
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any

from codesight_tui.core.ingest.chunker import (
    PARSE_PER_BYTE,
    PARSE_SECONDS,
    is_definition,
    keyword,
    parse_bounded,
    parser_for,
)
from codesight_tui.core.ingest.grammars import GRAMMARS
from codesight_tui.core.ingest.symbol_names import (
    definition_name,
    extra_definition,
    go_receiver_name,
    name_line,
)
from codesight_tui.core.ingest.symbol_tables import (
    COMPOUND_NAMES,
    EXTRA_DEFS,
    EXTRA_SCOPES,
    F_CALL,
    F_DEF,
    F_GENERIC,
    F_IMPORT,
    F_MEMBER,
    F_NAME,
    F_TYPE_LEAF,
    F_TYPE_PARENT,
    POSSIBLE_FILE,
    TYPE_PARENTS,
    GrammarQueries,
    NativeTables,
    grammar_queries,
    native_tables,
    shell_commands,
    symscan,
    walk_tables,
    write_possible,
)

if TYPE_CHECKING:
    from tree_sitter import Node, Query

# Where the parse of a file is lost (``_broken``), its declarations are parsed one by one, and their
# members where one still fails: what starts one, at its indentation.
_DECLARATION = re.compile(rb"[A-Za-z_@]")
RECOVER_LINES = 20  # an ERROR node over fewer lines costs little: the parse is kept
RECOVER_DEPTH = 3
_START = attrgetter("start_byte")
_NEWLINE = re.compile(rb"\n")


@dataclass(frozen=True, slots=True)
class Definition:
    name: str
    kind: str  # the grammar's keyword: def, class, func, fn, struct, method, ...
    scope: str  # the enclosing definitions' names, outermost first, "." between
    line: int  # 1-based: the line its name is on
    start_line: int
    end_line: int


@dataclass(frozen=True, slots=True)
class Reference:
    name: str
    line: int  # 1-based
    kind: str  # call, type, import, other
    within: int  # index in Symbols.defs of the innermost definition it is in; -1 outside any


# What the index stores of a file's symbols, made in the indexer's workers as one string and a few
# byte strings (which cross the process boundary and go into SQLite as they are): each definition
# (name, kind, scope, line, start_line, end_line); the names the file uses, one a line; the uses of
# all of them, packed as int32 triples (line, kind code, the line of the innermost definition
# around it, 0 outside any), one per (line, kind), name after name; where each name's uses end
# (int32, in ints); its calls again, as int32 triples (the name's position among the names, line,
# within); and the positions of the names it imports.
# Last, what was cut, if anything ("symbols cut at 100,000 names"; "" for nothing).
DefRow = tuple[str, str, str, int, int, int]
FileSymbols = tuple[list[DefRow], str, bytes, bytes, bytes, bytes, str]  # defs, names, ends, uses, calls, imports, cut
REF_KINDS = ("other", "call", "type", "import")  # a reference's kind code is its index here

GAVE_UP_SAID = "no symbols: its parse took too long"
PARSE_CUT = "symbols cut where its parse took too long"  # recovering a broken file, declaration by declaration
# Bounds on one file's symbols, so that no file can hold up an index run or fill the disk (issue 66):
# a hostile file's cost stays linear in its size, and what is cut is said.
DEEP = 1_000  # tree levels: past this, tree-sitter's query engine slows with the depth squared (its
#              matches in flight; 40,000 levels took 42 s and dropped names), so such a tree takes
#              the walk (``_walk_scan``), linear in its nodes
MAX_NAMES = 100_000  # name leaves a file (70,001 in a 480 KB `x = v0+v1+...` line)
MAX_DEFS = 20_000  # definitions a file
MAX_SCOPE = 8  # enclosing names kept in a scope, innermost last: 20,000 nested classes wrote each
#               scope whole, 1.2 GB of them
ROW_BYTES = 1.5  # a file's symbol rows, at most, as a multiple of its size (``_bounded``)
MIN_ROW_BYTES = 65_536


@dataclass
class Symbols:
    defs: list[Definition] = field(default_factory=list)
    refs: list[Reference] = field(default_factory=list)

    def enclosing(self, ref: Reference) -> Definition | None:
        return self.defs[ref.within] if ref.within >= 0 else None


def extract(language: str, text: str | bytes, tree: Any = None) -> Symbols | None:
    """The definitions and references of one file in ``language`` (``tree``: its parse, where
    the caller has one); None where codesight has no grammar for the language."""
    found = _scan(language, text, tree)
    if found is None:
        return None
    defs, uses, _calls, _imported, _cut = found
    index = {d.line: k for k, d in enumerate(defs)}  # the innermost, where two names share a line
    refs = [
        Reference(name, flat[k], REF_KINDS[flat[k + 1]], index[flat[k + 2]] if flat[k + 2] else -1)
        for name, flat in uses.items()
        for k in range(0, len(flat), 3)
    ]
    refs.sort(key=attrgetter("line"))
    return Symbols(defs, refs)


def extract_rows(language: str, text: str | bytes, tree: Any = None) -> FileSymbols | None:
    """``extract`` as the rows the index stores (``Symbols.rows``), without the objects between."""
    fast = _native_rows(language, text, tree)
    return fast if fast is not None else python_rows(language, text, tree)


def python_rows(language: str, text: str | bytes, tree: Any = None, *, walk: bool = False) -> FileSymbols | None:
    """``extract_rows`` from the query and the loop in Python, whether or not the C walk is built
    (``walk``: from the walk that deep trees take, whatever the tree's depth)."""
    found = _scan(language, text, tree, walk)
    if found is None:
        return None
    defs, uses, calls, imported, cut = found
    flats = uses.values()
    size = len(text.encode("utf-8", errors="surrogateescape")) if isinstance(text, str) else len(text)
    return _bounded(
        (
            _def_rows(defs),
            "\n".join(uses),
            array("i", accumulate(map(len, flats))).tobytes(),
            array("i", chain.from_iterable(flats)).tobytes(),
            array("i", calls).tobytes(),
            array("i", sorted(imported)).tobytes(),
            cut,
        ),
        size,
    )


def _row_bytes(rows: FileSymbols) -> int:
    return sum(len(x) for x in rows[1:6]) + sum(len(d[0]) + len(d[1]) + len(d[2]) + 12 for d in rows[0])


def _bounded(rows: FileSymbols, size: int) -> FileSymbols:
    """``rows`` within ``ROW_BYTES`` times the file's ``size`` (at least ``MIN_ROW_BYTES``): past
    that, only the names first used earliest are kept, with their uses and calls, and the rows say
    how many. Code's rows are 0.7x its size (the median of 4,210 Python files; 1.6x at most), a
    line of 70,000 distinct names' 3.3x."""
    budget = max(MIN_ROW_BYTES, int(ROW_BYTES * size))
    total = _row_bytes(rows)
    if total <= budget:
        return rows
    defs, text, ends_b, uses_b, calls_b, imports_b, cut = rows
    left = budget
    for k, d in enumerate(defs):  # the definitions first, outermost and earliest first
        left -= len(d[0]) + len(d[1]) + len(d[2]) + 12
        if left < 0:
            cut = "; ".join(
                x
                for x in (cut, f"symbols cut at {k:,} definitions (their rows reached {ROW_BYTES:g}x the file's size)")
                if x
            )
            return defs[:k], "", b"", b"", b"", b"", cut
    names = text.split("\n")
    ends = array("i")
    ends.frombytes(ends_b)
    calls = array("i")
    calls.frombytes(calls_b)
    per_name = [0] * len(names)
    for k in range(0, len(calls), 3):
        per_name[calls[k]] += 12
    keep, prev = 0, 0
    for k, (name, end) in enumerate(zip(names, ends, strict=False)):
        left -= len(name) + 1 + 4 + 4 * (end - prev) + per_name[k]
        if left < 0:
            break
        keep, prev = k + 1, end
    uses = array("i")
    uses.frombytes(uses_b)
    imports = array("i")
    imports.frombytes(imports_b)
    kept_calls = array("i", (v for k in range(0, len(calls), 3) if calls[k] < keep for v in calls[k : k + 3]))
    said = f"symbols cut at {keep:,} names (their rows reached {ROW_BYTES:g}x the file's size)"
    return (
        defs,
        "\n".join(names[:keep]),
        ends[:keep].tobytes(),
        uses[:prev].tobytes(),
        kept_calls.tobytes(),
        array("i", (k for k in imports if k < keep)).tobytes(),
        "; ".join(x for x in (cut, said) if x),
    )


def _def_rows(defs: list[Definition]) -> list[DefRow]:
    return [(d.name, d.kind, d.scope, d.line, d.start_line, d.end_line) for d in defs]


# One file's definitions, and each name's uses in the order of their places, flat: (line, kind code,
# the line of the innermost definition around it, 0 outside any) for each, one per (line, kind);
# then its calls (the name's position among the uses, line, within), the positions of the names
# it imports, and what was cut ("" for nothing).
Scan = tuple[list[Definition], dict[str, list[int]], list[int], set[int], str]


def _scan(language: str, text: str | bytes, tree: Any, walk: bool = False) -> Scan | None:
    """Definitions, and references as ``(name, line, kind code, index of the enclosing definition)``."""
    queries = grammar_queries(language) if language in GRAMMARS else None
    if queries is None:
        return None
    data = text.encode("utf-8", errors="surrogateescape") if isinstance(text, str) else text
    # for every parse after the first (a broken file's declarations, one by one): half the first's
    deadline = time.monotonic() + (PARSE_SECONDS + len(data) * PARSE_PER_BYTE) / 2
    if tree is None:
        parser = parser_for(language)
        assert parser is not None
        tree = parse_bounded(parser, data)
        if tree is None:
            return [], {}, [], set(), GAVE_UP_SAID
    src = text if isinstance(text, str) and len(text) == len(data) else None  # ASCII: a byte offset is a character's
    if walk or deeper_than(tree, DEEP):  # as it is, broken or not: the ERROR query is as slow there
        return _walk_scan(language, data, src, tree)
    if tree.root_node.has_error and _broken(queries.errors, tree, data.count(b"\n") + 1):
        return _recover(language, queries, data.split(b"\n"), 0, data.count(b"\n") + 1, 0, tree, deadline)
    return _scan_tree(language, queries, data, src, tree)


def deeper_than(tree: Any, limit: int) -> bool:
    """Whether ``tree`` has a node more than ``limit`` levels down: a walk with tree-sitter's cursor
    that makes no node object (about 0.1 us a node) and stops at the first such node."""
    cursor = tree.walk()
    down, across, up = cursor.goto_first_child, cursor.goto_next_sibling, cursor.goto_parent
    depth = 0
    while True:
        if down():
            depth += 1
            if depth > limit:
                return True
            continue
        while not across():
            if not up():
                return False
            depth -= 1


def _broken(errors: Query, tree: Any, lines: int) -> bool:
    """Whether the grammar lost much of the file: an ERROR node over a fifth of its lines (a construct
    newer than the grammar, such as Kotlin 2's ``is T if cond ->``, can make one of the whole file)."""
    from tree_sitter import QueryCursor

    root = tree.root_node
    worst = max((n.end_point[0] - n.start_point[0] for n in QueryCursor(errors).captures(root).get("e", ())), default=0)
    # Where recovery gives up, the rest of the file is in no node at all.
    unparsed = lines - 1 - max((c.end_point[0] for c in root.children), default=0)
    return max(worst, unparsed) >= max(RECOVER_LINES, lines // 5)


def _indent(line: bytes) -> int:
    return len(line) - len(line.lstrip())


def _recover(
    language: str,
    queries: GrammarQueries,
    lines: list[bytes],
    lo: int,
    hi: int,
    depth: int,
    whole_tree: Any,
    deadline: float,
) -> Scan:
    """Definitions and references of lines ``lo``-``hi`` where the parse of the whole was lost: each
    declaration parsed alone (a line at the outermost indentation that starts with a name or an
    annotation starts one), and where one still fails, its members the same way, under it. Each
    parse reads only the lines from its first to its last, and its lines are moved to their places
    after: the work stays linear in the file, however many declarations it has. ``whole_tree``: the
    parse of lines ``lo``-``hi`` where the caller has it; every parse ends by ``deadline``, and what
    one past it would have read is said to be cut."""
    parser = parser_for(language)
    assert parser is not None

    def scan(ranges: list[tuple[int, int]], tree: Any = None) -> tuple[Scan, bool]:
        # The lines kept at their places from the first one on, the others blank.
        first, last = ranges[0][0], ranges[-1][1]
        data = (
            b"\n".join(lines[i] if any(a <= i < b for a, b in ranges) else b"" for i in range(first, last))
            if len(ranges) > 1
            else b"\n".join(lines[first:last])
        )
        if tree is None:
            tree = parse_bounded(parser, data, max(0.0, deadline - time.monotonic()))
        if tree is None:
            return ([], {}, [], set(), PARSE_CUT), False
        if deeper_than(tree, DEEP):
            return _shift(_walk_scan(language, data, None, tree), first), False
        return _shift(_scan_tree(language, queries, data, None, tree), first), tree.root_node.has_error

    whole, failed = scan([(lo, hi)], whole_tree)
    if not failed or depth >= RECOVER_DEPTH:
        return whole
    outside = _indent(lines[lo]) if depth else -1  # what is inside a declaration is indented further
    code = [
        (i, k)
        for i in range(lo + (depth > 0), hi)
        if (k := _indent(lines[i])) > outside and _DECLARATION.match(lines[i], k)
    ]
    level = min((k for _, k in code), default=0)
    starts = [i for i, k in code if k == level]
    if not starts:
        return whole
    parts = []
    for k, a in enumerate(starts):
        b = starts[k + 1] if k + 1 < len(starts) else hi
        while b - 1 > a and (not lines[b - 1].strip() or _indent(lines[b - 1]) < level):
            b -= 1  # the closing lines of what holds them
        parts.append((a, b))
    outer = [(a, b) for a, b in zip([lo] + [b for _, b in parts], [a for a, _ in parts] + [hi], strict=True) if a < b]
    scans = ([scan(outer)[0]] if outer else []) + [
        _recover(language, queries, lines, a, b, depth + 1, None, deadline) for a, b in parts
    ]
    merged = _merge(scans)
    return merged if len(merged[0]) >= len(whole[0]) else whole  # the parse that lost less


def _shift(found: Scan, by: int) -> Scan:
    """A scan of lines parsed from line ``by`` on, with its lines moved to their places in the file."""
    if not by:
        return found
    defs, uses, calls, imported, cut = found
    moved = [Definition(d.name, d.kind, d.scope, d.line + by, d.start_line + by, d.end_line + by) for d in defs]
    for flat in uses.values():
        for k in range(0, len(flat), 3):
            flat[k] += by
            if flat[k + 2]:
                flat[k + 2] += by
    for k in range(0, len(calls), 3):
        calls[k + 1] += by
        if calls[k + 2]:
            calls[k + 2] += by
    return moved, uses, calls, imported, cut


def _merge(scans: list[Scan]) -> Scan:
    """One file's scans of its parts as one: definitions in order, each inside the ones around it."""
    defs = sorted(
        {d for found, *_ in scans for d in found},
        key=lambda d: (d.start_line, -d.end_line, d.line, d.name, d.kind, d.scope),
    )
    out: list[Definition] = []
    around: list[Definition] = []  # the definitions around the current one, outermost first
    for d in defs:  # scopes from the definitions around each, as one parse would have them
        while around and around[-1].end_line < d.end_line:
            around.pop()
        out.append(
            d
            if d.scope or not around
            else Definition(
                d.name, d.kind, ".".join(o.name for o in around[-MAX_SCOPE:]), d.line, d.start_line, d.end_line
            )
        )
        around.append(d)
    # Each part's lines are the file's (``_shift`` put them at their places): the uses of all, in
    # the order of their lines.
    refs = sorted(
        (
            (flat[k], name, flat[k + 1], flat[k + 2])
            for _, uses, *_ in scans
            for name, flat in uses.items()
            for k in range(0, len(flat), 3)
        ),
        key=itemgetter(0),
    )
    uses: dict[str, list[int]] = {}
    calls: list[int] = []
    imported: set[int] = set()
    position: dict[str, int] = {}
    seen: set[tuple[str, int, int]] = set()
    for line, name, code, within in refs:
        if (name, line, code) in seen:
            continue
        seen.add((name, line, code))
        uses.setdefault(name, []).extend((line, code, within))
        at = position.setdefault(name, len(position))
        if code == 1:
            calls += (at, line, within)
        elif code == 3:
            imported.add(at)
    return out, uses, calls, imported, next((c for *_, c in scans if c), "")


# A file's definitions in order, and for each its start byte, the byte its references end at (its
# start where it is no scope), its enclosing definition's index (-1: none); and the (name, 0-based
# line) of each one's own name.
Definitions = tuple[list[Definition], list[int], list[int], list[int], set[tuple[str, int]]]


# A definition found: its start and end byte, name, kind, whether it is the chunker's, first and last
# row, the row of its name where that is known (-1: found from its node), and its node (None where
# the C walk gave all of it).
Found = tuple[int, int, str, str, bool, int, int, int, "Node | None"]


def _found(language: str, nodes: list[Node]) -> list[Found]:
    """The definitions among ``nodes`` (a query's or the C walk's definition nodes)."""
    g = GRAMMARS[language]
    extra = EXTRA_DEFS.get(language, {})
    found: list[Found] = []
    for node in nodes:
        if is_definition(g, node):
            named: tuple[str, str] | None = (
                definition_name(language, node),
                keyword(node) or g.defs.get(node.type, node.type),
            )
            chunked = True
        elif node.type in extra:
            named, chunked = extra_definition(language, node, extra[node.type]), False
        else:
            continue
        if named:
            found.append(
                (node.start_byte, node.end_byte, *named, chunked, node.start_point[0], node.end_point[0], -1, node)
            )
    return found


def _definitions(language: str, found: list[Found], data: bytes) -> Definitions:
    found.sort(key=lambda f: (f[0], -f[1]))
    defs: list[Definition] = []
    starts: list[int] = []  # each definition's start byte, in order
    ends: list[int] = []
    parents: list[int] = []  # each definition's enclosing one (-1: none)
    open_: list[int] = []  # the definitions around the current one
    names_at: set[tuple[str, int]] = set()  # (name, line) of each definition's own name
    for start, end, name, kind, chunked, first, last, name_row, node in found:
        if not name:
            continue
        while open_ and ends[open_[-1]] <= start:
            open_.pop()
        tail = name.rsplit(".", 1)[-1]
        line = name_row if name_row >= 0 or node is None else name_line(node, tail.split(" for ")[-1], data)
        if not chunked and (tail, line) in names_at:
            continue  # const f = function f() {...}: one definition
        if len(defs) >= MAX_DEFS:
            break
        scopes = chunked or kind in EXTRA_SCOPES
        scope = ".".join([defs[i].name for i in open_[-MAX_SCOPE:]])
        if not scope and node is not None and language == "go" and node.type == "method_declaration":
            scope = go_receiver_name(node)  # func (m *Matcher) scan(): Matcher.scan
        defs.append(Definition(name, kind, scope, line + 1, first + 1, last + 1))
        names_at.add((tail, line))
        starts.append(start)
        ends.append(end if scopes else start)  # what is no scope holds no reference
        parents.append(open_[-1] if open_ else -1)
        if scopes:
            open_.append(len(defs) - 1)
    return defs, starts, ends, parents, names_at


def _scan_tree(language: str, queries: GrammarQueries, data: bytes, src: str | None, tree: Any) -> Scan:
    from tree_sitter import QueryCursor

    marks = QueryCursor(queries.all).captures(tree.root_node)
    found = _found(language, marks.get("d", []))
    definitions = _definitions(language, found, data)
    # Leaves only: a grammar's supertype among the names (Lua's "variable") also matches a member
    # expression, which starts where its first name does.
    kinds = {n.start_byte: 2 for n in marks.get("type", ()) if not n.named_child_count}  # by start byte
    leaf_types = queries.leaves
    kinds.update(
        (c.start_byte, 2)
        for p in {n.id: n for n in marks.get("typed", ())}.values()
        if p.type in TYPE_PARENTS
        for c in p.named_children
        if c.type in leaf_types and not c.named_child_count
    )
    kinds.update((n.start_byte, 1) for n in marks.get("call", ()) if not n.named_child_count)  # a call first
    spans = sorted((n.start_byte, n.end_byte) for n in marks.get("import", ()))
    parts = language in COMPOUND_NAMES
    # In the order of their places: the order of a query's captures can change from one run to the
    # next, and which of a definition's names on its line is its own must not.
    leaves = [
        (n.start_byte, n.end_byte)
        for n in sorted(marks.get("n", []), key=_START)
        if not (parts and n.named_child_count)
    ]  # a name with parts (Swift's identifier): its parts count
    return _pack(data, src, leaves, kinds, spans, definitions, len(found) > MAX_DEFS)


def _pack(
    data: bytes,
    src: str | None,
    leaves: list[tuple[int, int]],
    kinds: dict[int, int],
    imports: list[tuple[int, int]],
    definitions: Definitions,
    defs_cut: bool,
) -> Scan:
    """A file's uses from its name leaves (start and end bytes, in order), the kind of each by its
    start byte (``kinds``: 1 a call, 2 a type; else 3 inside one of ``imports``' sorted spans, else
    0), and its definitions. One pass, packing as it goes: this loop is most of the cost symbols add
    to indexing. At most ``MAX_NAMES`` leaves are read, and the scan says so if there were more."""
    defs, starts, ends, parents, names_at = definitions
    cut = _cut(len(leaves), defs_cut)
    imp_starts = [a for a, _ in imports]
    imp_ends = list(accumulate((b for _, b in imports), max))  # the furthest end of any import so far
    imp_last = imp_ends[-1] if imp_ends else -1
    def_lines = [d.line for d in defs]
    name_lines = {line for _, line in names_at}
    # Lines from byte offsets (a bisect in C), not from each node's start_point (an object apiece).
    newlines = [m.start() for m in _NEWLINE.finditer(data)]
    uses: dict[str, list[int]] = {}
    position: dict[str, int] = {}
    calls: list[int] = []
    imported: set[int] = set()
    used = uses.get
    kind_of = kinds.get
    for at, end in leaves[:MAX_NAMES]:
        name = src[at:end] if src is not None else data[at:end].decode("utf-8", errors="replace")
        if not name:
            continue
        line = bisect_right(newlines, at - 1)  # 0-based: the newlines before it
        if line in name_lines and (name, line) in names_at:
            names_at.discard((name, line))  # the defining occurrence, once
            continue
        code = kind_of(at, 0)
        if not code and at < imp_last and (k := bisect_right(imp_starts, at) - 1) >= 0 and imp_ends[k] > at:
            code = 3
        # the innermost definition around it: the last to start before it, or the nearest of that
        # one's enclosing definitions that has not ended
        w = bisect_right(starts, at) - 1
        while w >= 0 and ends[w] <= at:
            w = parents[w]
        line += 1
        within = def_lines[w] if w >= 0 else 0
        flat = used(name)
        if flat is None:
            position[name] = len(uses)
            uses[name] = [line, code, within]
        else:
            if flat[-3] == line:  # once per (line, kind): look back over this line's uses
                k = len(flat) - 3
                while k >= 0 and flat[k] == line and flat[k + 1] != code:
                    k -= 3
                if k >= 0 and flat[k] == line:
                    continue
            flat += (line, code, within)
        if code == 1:
            calls += (position[name], line, within)
        elif code == 3:
            imported.add(position[name])
    return defs, uses, calls, imported, cut


def _cut(names: int, defs_cut: bool) -> str:
    """What a file's symbols lost to the bounds, said as ``status`` and ``index`` say it."""
    said = [f"{MAX_NAMES:,} names"] if names > MAX_NAMES else []
    said += [f"{MAX_DEFS:,} definitions"] if defs_cut else []
    return f"symbols cut at {' and '.join(said)}" if said else ""


def _walk_scan(language: str, data: bytes, src: str | None, tree: Any) -> Scan:
    """``_scan_tree`` for a tree too deep for the query engine: one walk with tree-sitter's cursor
    that tells each name's kind as the C walk does (``native/symscan.c``'s ``walk``, from the same
    tables), in time linear in the tree's nodes, whatever its depth. About 2 us a node in Python:
    only trees deeper than ``DEEP`` take it."""
    tables = walk_tables(language)
    flags, callee_field, compound = tables.flags, array("H", tables.callee), language in COMPOUND_NAMES
    nsym = len(flags)
    command = shell_commands(language)
    cursor = tree.walk()
    # per level: flags, symbol, named children seen, in a call's callee place, last named child
    stack: list[list[int]] = []
    def_nodes: list[Node] = []
    leaves: list[tuple[int, int]] = []
    kinds: dict[int, int] = {}
    imports: list[tuple[int, int]] = []
    while True:
        node = cursor.node
        sym = node.kind_id
        f = flags[sym] if sym < nsym else 0
        parent = stack[-1] if stack else None
        grand = stack[-2] if len(stack) >= 2 else None
        callee = last = 0
        if parent is not None and parent[0] & F_CALL and node.is_named:
            first = parent[2] == 0
            parent[2] += 1
            if f & (F_NAME | F_MEMBER | F_GENERIC):
                want = callee_field[parent[1]]
                callee = int(cursor.field_id == want) if want else int(first)
        elif parent is not None and parent[0] & F_GENERIC and parent[3] and node.is_named:
            first = parent[2] == 0  # f[T](): f is what is called
            parent[2] += 1
            callee = int(first and bool(f & (F_NAME | F_MEMBER)))
        if (
            parent is not None
            and parent[0] & F_MEMBER
            and not callee
            and f & (F_NAME | F_MEMBER)
            and (parent[3] or (grand is not None and grand[0] & F_MEMBER and grand[3]))
        ):
            last = int(node.next_named_sibling is None)
        if f & (F_DEF | F_IMPORT | F_NAME):
            start, end = node.start_byte, node.end_byte
            if f & F_DEF:
                def_nodes.append(node)
            if f & F_IMPORT:
                imports.append((start, end))
            if f & F_NAME:
                named = node.named_child_count
                if command is not None and sym == command[1]:  # a shell word: a name only as a command's
                    named = -1 if parent is None or parent[1] != command[0] else named
                    callee = int(named == 0 and grand is not None and grand[1] == command[2])
                if named >= 0 and not (compound and named) and end > start:
                    leaves.append((start, end))
                if named == 0:
                    code = 2 if f & F_TYPE_LEAF or (parent is not None and parent[0] & F_TYPE_PARENT) else 0
                    if callee or (
                        parent is not None
                        and parent[0] & F_MEMBER
                        and last == 1
                        and (parent[3] or (grand is not None and grand[0] & F_MEMBER and grand[3] and parent[4] == 1))
                    ):
                        code = 1
                    if code and kinds.get(start) != 1:
                        kinds[start] = code
        if cursor.goto_first_child():
            stack.append([f, sym, 0, callee, last])
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                imports.sort()
                found = _found(language, def_nodes)
                return _pack(
                    data, src, leaves, kinds, imports, _definitions(language, found, data), len(found) > MAX_DEFS
                )
            stack.pop()


def _found_fast(language: str, tables: NativeTables, data: bytes, root: Node, spans: array[int]) -> list[Found] | None:
    """The definitions among the C walk's definition nodes: a plain one named by its "name" child
    straight from the walk's places, any other from its node, as ``_found`` does."""
    g = GRAMMARS[language]
    kind_of = g.defs
    found: list[Found] = []
    nodes: list[Node] = []
    for k in range(0, len(spans), 8):
        a, b, symbol, first, last, na, nb, name_row = spans[k : k + 8]
        if symbol in tables.plain and na >= 0:
            name = data[na:nb].decode("utf-8", errors="replace")
            # what ``definition_name`` would make of it, and ``name_line`` find as it is
            if (
                name
                and len(name) <= 200
                and "." not in name
                and not _ODD_NAME.search(name)
                and not (language == "cpp" and name.endswith(">"))
            ):
                t = _kind_name(language, symbol)
                found.append((a, b, name, kind_of.get(t, t), True, first, last, name_row, None))
                continue
        node = root.descendant_for_byte_range(a, b)
        while node is not None and (node.kind_id != symbol or node.start_byte != a or node.end_byte != b):
            node = node.parent
        if node is None:
            return None
        nodes.append(node)
    return found + _found(language, nodes) if nodes else found


_ODD_NAME = re.compile(r"\s")  # a name ``definition_name`` changes (or "A for B", whose line ``name_line`` looks for)


@cache
def _kind_name(language: str, symbol: int) -> str:
    parser = parser_for(language)
    return str(parser.language.node_kind_for_id(symbol)) if parser is not None else ""


def _native_rows(language: str, text: str | bytes, tree: Any) -> FileSymbols | None:
    """``extract_rows`` from the C walk, or None where the Python walk answers (no C walk for the
    language, a parse ``_recover`` redoes, a name that is not UTF-8)."""
    tables = native_tables(language) if language in GRAMMARS else None
    native = symscan
    if tables is None or native is None:
        return None
    queries = grammar_queries(language)
    assert queries is not None
    data = text.encode("utf-8", errors="surrogateescape") if isinstance(text, str) else text
    if tree is None:
        parser = parser_for(language)
        assert parser is not None
        tree = parse_bounded(parser, data)
    from tree_sitter import Tree

    if not isinstance(tree, Tree):  # the C walk reads py-tree-sitter's own Tree, and nothing else
        return None
    root = tree.root_node
    # A broken parse is recovered in Python, unless the tree is too deep for that to be cheap (its
    # ERROR query is as slow there as the rest): the walk below is linear in any tree.
    if root.has_error and not deeper_than(tree, DEEP) and _broken(queries.errors, tree, data.count(b"\n") + 1):
        return None
    walked = native.walk(tree, tables.flags, tables.callee, language in COMPOUND_NAMES, tables.name_field)
    if walked is None:
        return None
    if len(walked[0]) > 8 * 4 * 2000 and deeper_than(tree, DEEP):
        return None  # thousands of nested definitions: each node looked up from the root is quadratic
    found = _found_fast(language, tables, data, root, array("i", walked[0]))
    if found is None:  # pragma: no cover - a node the walk met is in the tree
        return None
    defs, starts, ends, parents, names_at = _definitions(language, found, data)
    names = walked[1]
    cut = _cut(len(names) // 12, len(found) > MAX_DEFS)
    try:
        packed = native.pack(
            data,
            names[: 12 * MAX_NAMES],
            array("i", starts),
            array("i", ends),
            array("i", parents),
            array("i", [d.line for d in defs]),
            names_at,
        )
    except UnicodeDecodeError:  # a name that is not UTF-8: the Python walk decodes it as it always has
        return None
    return _bounded((_def_rows(defs), *packed, cut), len(data))


if __name__ == "__main__":
    print(f"{write_possible()} answers written to {POSSIBLE_FILE}")
