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

import hashlib
import json
import re
import time
from array import array
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import cache
from itertools import accumulate, chain
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from codesight_tui.core.ingest.chunker import (
    PARSE_PER_BYTE,
    PARSE_SECONDS,
    is_definition,
    keyword,
    node_name,
    parse_bounded,
    parser_for,
)
from codesight_tui.core.ingest.grammars import GRAMMARS


class Native(Protocol):
    """The C walk's module (``native/symscan.c``, typed in ``symscan.pyi``), which mypy checks
    against this: a walk of a tree, and the per-name loop that packs a file's uses."""

    TREE_SITTER: str

    def walk(
        self, tree: object, flags: bytes, callee: bytes, compound: bool, name_field: int, /
    ) -> tuple[bytes, bytes] | None: ...

    def pack(
        self,
        data: bytes,
        names: bytes,
        starts: array[int],
        ends: array[int],
        parents: array[int],
        def_lines: array[int],
        names_at: set[tuple[str, int]],
        /,
    ) -> tuple[str, bytes, bytes, bytes, bytes]: ...


symscan: Native | None
try:  # the walk and the per-name loop in C (native/symscan.c); optional, as a build without a compiler has none
    from codesight_tui.core.ingest import symscan as _built

    symscan = _built
except ImportError:  # pragma: no cover - the Python walk gives the same rows
    symscan = None

if TYPE_CHECKING:
    from tree_sitter import Node, Query

# Leaves that name something, in any grammar that has them.
NAME_LEAVES = (
    "identifier",
    "type_identifier",
    "field_identifier",
    "property_identifier",
    "simple_identifier",
    "constant",
    "name",
    "package_identifier",
    "namespace_identifier",
    "shorthand_property_identifier",
    "private_property_identifier",
    "statement_identifier",
    "constructor",
    "variable",
    "atom",
    "shorthand_property_identifier_pattern",
)  # const {a, b} = obj: a and b are names
TYPE_LEAVES = frozenset({"type_identifier", "constructor"})  # constructor: Haskell's type/data constructors
# Nodes whose names are types (where the grammar has no type_identifier leaf there).
TYPE_PARENTS = frozenset(
    {
        "type",
        "user_type",
        "generic_type",
        "type_annotation",
        "nullable_type",
        "array_type",
        "predefined_type",
        "qualified_type",
        "scoped_type_identifier",
    }
)
IMPORTS = frozenset(
    {
        "import_statement",
        "import_from_statement",
        "future_import_statement",
        "import_declaration",
        "use_declaration",
        "import_header",
        "import",
        "using_directive",
        "namespace_use_declaration",
        "import_spec",
        "preproc_include",
    }
)
# A call node, and the field that holds what is called (None: its first named child).
CALLS: dict[str, str | None] = {
    "call": None,
    "call_expression": "function",
    "new_expression": "constructor",
    "method_invocation": "name",
    "object_creation_expression": "type",
    "invocation_expression": "function",
    "function_call": "name",
    "function_call_expression": "function",
    "member_call_expression": "name",
    "scoped_call_expression": "name",
    "nullsafe_member_call_expression": "name",
    "macro_invocation": "macro",
    "command": "name",
    "apply": "function",
    "generic_function": "function",
    "instance_expression": None,
}
# What a call's callee may be besides a name: the member part is what is called (obj.f -> f).
MEMBERS = frozenset(
    {
        "attribute",
        "member_expression",
        "selector_expression",
        "field_expression",
        "scoped_identifier",
        "navigation_expression",
        "navigation_suffix",
        "member_access_expression",
        "qualified_identifier",
        "field_access",
        "dot_index_expression",
        "method_index_expression",
        "scoped_call_expression",
        "generic_function",
        "dot",
        "selection_expression",
        "command_name",
    }
)
COMPOUND_NAMES = frozenset({"swift"})  # grammars whose name leaves may have named parts
# Grammars whose names are none of NAME_LEAVES: their own patterns for names (@n) and calls (@call).
# A shell script's names are its variables and the commands it runs (`helper "$x"` calls helper);
# a command's arguments are words, not names.
OWN_NAMES: dict[str, tuple[str, ...]] = {
    "shell": ("(variable_name) @n", "(command_name (word) @n)", "(command name: (command_name (word) @call))"),
}
# Definitions navigation knows beyond the chunker's (which cut chunks, and so weigh in ranking):
# names a reader looks up although no chunk is cut at them. A named function expression, a function
# or an object bound to a name or a key, a method's signature in a type, a record's fields, a
# companion object.
_JS_EXTRA = {
    "function_expression": "function",
    "variable_declarator": "const",
    "pair": "property",
    "assignment_expression": "var",
}
EXTRA_DEFS: dict[str, dict[str, str]] = {
    "javascript": _JS_EXTRA,
    "typescript": {**_JS_EXTRA, "property_signature": "method"},
    "tsx": {**_JS_EXTRA, "property_signature": "method"},
    "kotlin": {"companion_object": "object"},
    "haskell": {"field": "field"},
    "lua": {"assignment_statement": "function", "field": "function"},  # f = cond and function ... end
}
# Of those, the kinds that hold code the way a function does: the innermost definition around a
# reference (a call's caller) is one of these or one of the chunker's, never an object or a field.
EXTRA_SCOPES = frozenset({"function", "object"})
_FUNCTIONS = frozenset({"arrow_function", "function_expression", "function", "generator_function", "class"})
# Where the parse of a file is lost (``_broken``), its declarations are parsed one by one, and their
# members where one still fails: what starts one, at its indentation.
_DECLARATION = re.compile(rb"[A-Za-z_@]")
RECOVER_LINES = 20  # an ERROR node over fewer lines costs little: the parse is kept
RECOVER_DEPTH = 3
_START = attrgetter("start_byte")
_TEMPLATE_ARGS = re.compile(r"<[^<>]*(?:<[^<>]*(?:<[^<>]*>[^<>]*)*>[^<>]*)*>$")
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


@dataclass(frozen=True)
class _Queries:
    all: Query  # @d definitions, @n names, and @call, @type, @typed, @import: what tells a name's kind
    errors: Query  # @e: the parse's ERROR nodes
    leaves: frozenset[str] = frozenset()  # the name leaves' node types


@cache
def _queries(language: str) -> _Queries | None:
    """The queries for ``language``, made of only the node types and fields its grammar has: its
    definitions, its name leaves, and what tells a reference's kind (matched in C, so that a
    reference costs no walk up its ancestors in Python)."""
    from tree_sitter import Query

    parser = parser_for(language)
    if parser is None:
        return None
    lang = parser.language

    def has(t: str) -> bool:
        return bool(lang.id_for_node_kind(t, True))

    known = [t for t in {**GRAMMARS[language].defs, **EXTRA_DEFS.get(language, {})} if has(t)]
    leaves = [t for t in NAME_LEAVES if has(t)]
    own = OWN_NAMES.get(language, ())
    if not known or not (leaves or own):
        return None
    alt = "[" + " ".join(f"({t})" for t in leaves) + "]"
    members = [m for m in sorted(MEMBERS) if has(m)]
    patterns: list[str] = []
    for call, fld in CALLS.items():
        if not has(call) or not leaves:
            continue
        # the field, else the first named child (also where this grammar's call has no such field:
        # Kotlin's call_expression, though other Kotlin nodes have a "function" field)
        at = f"{fld}: " if fld and _possible(lang, [f"({call} {fld}: (_))"], []) else ". "
        if call == "call" and _possible(lang, ["(call method: (_))"], []):
            at = "method: "  # Ruby: obj.f(x), whose first child is the receiver
        patterns.append(f"({call} {at}{alt} @call)")
        for m in members:  # obj.f(), a::b(), and a member inside a member (Kotlin's navigation suffix)
            patterns.append(f"({call} {at}({m} {alt} @call .))")
            patterns.extend(f"({call} {at}({m} ({m2} {alt} @call .) .))" for m2 in members)
    patterns += [f"({t}) @type" for t in sorted(TYPE_LEAVES) if has(t)]
    # A type position (the parent is captured): its type is checked in Python (``typed``), since a
    # grammar may have "type" as a supertype, which a query matches for every one of its subtypes;
    # its name children are read from it, never each name's parent asked (``Node.parent`` walks
    # down from the root: quadratic in a flat file of thousands of declarations).
    patterns += [f"({parent} {alt}) @typed" for parent in sorted(TYPE_PARENTS) if has(parent) and leaves]
    patterns += [f"({t}) @import" for t in sorted(IMPORTS) if has(t)]
    # One query, so the tree is walked once (each walk of Django's 5.5 MB of Python is 0.2 s).
    return _Queries(
        Query(
            lang,
            "\n".join(
                [
                    *(f"({t}) @d" for t in known),
                    *([alt + " @n"] if leaves else []),
                    *_possible(lang, patterns, leaves),
                    *own,
                ]
            ),
        ),
        Query(lang, "(ERROR) @e"),
        frozenset(leaves),
    )


def _possible(lang: Any, patterns: list[str], leaves: list[str]) -> list[str]:
    """The patterns the grammar can match: a query with one it cannot (a field that never holds
    such a node) does not compile. A pattern over every name leaf that cannot is tried leaf by leaf.

    Each try compiles a query, about 8 ms in a large grammar, so that finding the patterns is most of
    a second in C++ or PHP and 2.3 s in Swift, in every indexing worker. The answers for the installed
    grammars ship in ``POSSIBLE_FILE``, keyed by the grammar's identity and the patterns asked about;
    any other grammar is answered by compiling."""
    key = _possible_key(lang, patterns, leaves)
    known = None if _RECOMPILE else _known_possible().get(key)
    if known is not None:
        return list(known)
    found = _compile_possible(lang, patterns, leaves)
    _ASKED[key] = found
    return found


POSSIBLE_FILE = Path(__file__).with_name("possible_patterns.json")
_ASKED: dict[str, list[str]] = {}  # this process's answers: what ``write_possible`` ships
_RECOMPILE = False  # set by ``write_possible``: no answer is taken from the file


def _possible_key(lang: Any, patterns: list[str], leaves: list[str]) -> str:
    grammar = (
        lang.name,
        lang.abi_version,
        lang.semantic_version,
        lang.node_kind_count,
        lang.field_count,
        lang.parse_state_count,
    )
    return hashlib.sha256(json.dumps([repr(grammar), patterns, leaves]).encode()).hexdigest()[:24]


@cache
def _known_possible() -> dict[str, list[str]]:
    try:
        known = json.loads(POSSIBLE_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return known if isinstance(known, dict) else {}


def _compile_possible(lang: Any, patterns: list[str], leaves: list[str]) -> list[str]:
    from tree_sitter import Query, QueryError

    alt = "[" + " ".join(f"({t})" for t in leaves) + "]"
    out: list[str] = []
    for pattern in patterns:
        for each in [pattern] if alt not in pattern else [pattern] + [pattern.replace(alt, f"({t})") for t in leaves]:
            try:
                Query(lang, each)
            except QueryError:
                continue
            out.append(each)
            if each is pattern:
                break
    return out


def write_possible(path: Path = POSSIBLE_FILE) -> int:
    """Compile every grammar's patterns afresh and write ``POSSIBLE_FILE``; returns how many
    answers it holds. ``python -m codesight_tui.core.ingest.symbols`` runs it after a grammar
    or a pattern changes (a test fails until it has)."""
    global _RECOMPILE
    _queries.cache_clear()
    _ASKED.clear()
    _RECOMPILE = True
    try:
        for language in sorted(GRAMMARS):
            _queries(language)
    finally:
        _RECOMPILE = False
        _queries.cache_clear()
        _known_possible.cache_clear()
    path.write_text(json.dumps(dict(sorted(_ASKED.items())), indent=0) + "\n", encoding="utf-8")
    return len(_ASKED)


def _text(node: Node | None) -> str:
    return node.text.decode("utf-8", errors="replace") if node is not None and node.text else ""


NAME_WINDOW = 65_536  # bytes of a definition read for the line of its name


def _name_line(node: Node, name: str, data: bytes) -> int:
    """The 0-based line of a definition's name: its name node's, else the first line of the
    definition that holds the name (a decorator or comment above is not part of the node), read
    from its first ``NAME_WINDOW`` bytes: a definition that holds 20,000 more is not read whole
    for each of them."""
    found = node.child_by_field_name("name")
    if found is not None and _text(found) == name:
        return int(found.start_point[0])
    start = node.start_byte
    head = data[start : min(node.end_byte, start + NAME_WINDOW)]
    at = head.find(name.encode("utf-8", errors="surrogateescape"))
    return int(node.start_point[0]) + (head.count(b"\n", 0, at) if at >= 0 else 0)


def _go_receiver(node: Node) -> str:
    """A Go method's receiver type, its scope as a reader names it: ``func (m *Matcher) scan()``
    and ``func (s *Set[T]) Add()`` -> ``Matcher``, ``Set``."""
    receiver = node.child_by_field_name("receiver")
    param = next((c for c in receiver.named_children if c.type == "parameter_declaration"), None) if receiver else None
    typ = param.child_by_field_name("type") if param is not None else None
    while typ is not None and typ.type in ("pointer_type", "generic_type", "parenthesized_type"):
        typ = typ.child_by_field_name("type") if typ.type == "generic_type" else next(iter(typ.named_children), None)
    return _text(typ) if typ is not None and typ.type == "type_identifier" else ""


def _declarator(node: Node) -> Node | None:
    """A C/C++ function's declarator, through references, pointers and a macro the grammar could
    not place (``T f() ATTR {``: the function's declarator is then in an ERROR node)."""
    for child in node.named_children:
        if child.type == "ERROR":
            found = next((c for c in child.named_children if c.type == "function_declarator"), None)
            if found is not None:
                return found
    d = node.child_by_field_name("declarator")
    for _ in range(8):
        if d is None or d.type in ("function_declarator", "operator_cast"):
            return d
        nxt = d.child_by_field_name("declarator")
        d = nxt if nxt is not None else next(iter(d.named_children), None)  # a reference_declarator's
    return None


def _c_function_name(node: Node) -> str:
    d = _declarator(node)
    if d is None:
        return ""
    if d.type == "operator_cast":  # operator int64_t()
        return "operator " + _text(d.child_by_field_name("type"))
    name = d.child_by_field_name("declarator")
    if name is not None and name.type == "template_function":  # f<short>()
        name = name.child_by_field_name("name")
    return _text(name) if name is not None else ""


def _definition_name(language: str, node: Node) -> str:
    """The chunker's name for one of its definitions, made what a reader would look it up by."""
    if node.type == "function_definition" and language in ("c", "cpp"):
        name = _c_function_name(node) or node_name(node)
    else:
        name = node_name(node)
    name = " ".join(name.split())[:200]
    if language == "cpp" and name.endswith(">") and not name.startswith("operator"):
        name = _TEMPLATE_ARGS.sub("", name)  # a specialisation: struct HashEq<std::string>
    elif language == "lua" and name[:1] in "\"'":
        name = name.strip("\"'")  # ["README.md"] = function ...
    return name


def _extra(language: str, node: Node, kind: str) -> tuple[str, str] | None:
    """The name an ``EXTRA_DEFS`` node defines and its kind (a function bound to a key or a name is
    a function), or None where it defines none."""
    t = node.type
    if language == "lua":
        return _lua_choice(node, kind)
    if t in ("function_expression", "companion_object", "field"):
        name = node.child_by_field_name("name")
        found = _text(name) if name is not None else "Companion" if t == "companion_object" else ""
        return (found, kind) if found else None
    if t == "property_signature":
        typ = node.child_by_field_name("type")
        functional = typ is not None and any(c.type == "function_type" for c in typ.named_children)
        return (_text(node.child_by_field_name("name")), kind) if functional else None
    value = node.child_by_field_name("right" if t == "assignment_expression" else "value")
    if value is None or value.type != "object" and (t == "assignment_expression" or value.type not in _FUNCTIONS):
        return None  # a function bound by assignment is the chunker's
    target = node.child_by_field_name({"variable_declarator": "name", "pair": "key"}.get(t, "left"))
    if target is not None and target.type == "member_expression":  # config.paramsSerializer = {...}
        target = target.child_by_field_name("property")
    if target is None or target.type not in ("identifier", "property_identifier", "string"):
        return None
    return _text(target).strip("\"'`"), kind if value.type == "object" else "function"


def _lua_choice(node: Node, kind: str) -> tuple[str, str] | None:
    """A Lua assignment or table field that binds its name to one function or another
    (``M.f = cond and function ... end or g``); None for any other value."""
    value = (
        node.child_by_field_name("value")
        if node.type == "field"
        else next(
            (c.named_children[0] for c in node.named_children if c.type == "expression_list" and c.named_children), None
        )
    )
    if value is None or value.type != "binary_expression":
        return None  # a function itself is the chunker's
    while value is not None and value.type == "binary_expression":
        right = value.child_by_field_name("right")
        value = (
            right
            if right is not None and right.type in ("function_definition", "binary_expression")
            else value.child_by_field_name("left")
        )
    return (_definition_name("lua", node), kind) if value is not None and value.type == "function_definition" else None


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
    queries = _queries(language) if language in GRAMMARS else None
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
    language: str, queries: _Queries, lines: list[bytes], lo: int, hi: int, depth: int, whole_tree: Any, deadline: float
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
                _definition_name(language, node),
                keyword(node) or g.defs.get(node.type, node.type),
            )
            chunked = True
        elif node.type in extra:
            named, chunked = _extra(language, node, extra[node.type]), False
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
        line = name_row if name_row >= 0 or node is None else _name_line(node, tail.split(" for ")[-1], data)
        if not chunked and (tail, line) in names_at:
            continue  # const f = function f() {...}: one definition
        if len(defs) >= MAX_DEFS:
            break
        scopes = chunked or kind in EXTRA_SCOPES
        scope = ".".join([defs[i].name for i in open_[-MAX_SCOPE:]])
        if not scope and node is not None and language == "go" and node.type == "method_declaration":
            scope = _go_receiver(node)  # func (m *Matcher) scan(): Matcher.scan
        defs.append(Definition(name, kind, scope, line + 1, first + 1, last + 1))
        names_at.add((tail, line))
        starts.append(start)
        ends.append(end if scopes else start)  # what is no scope holds no reference
        parents.append(open_[-1] if open_ else -1)
        if scopes:
            open_.append(len(defs) - 1)
    return defs, starts, ends, parents, names_at


def _scan_tree(language: str, queries: _Queries, data: bytes, src: str | None, tree: Any) -> Scan:
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
    tables = _walk_tables(language)
    flags, callee_field, compound = tables.flags, array("H", tables.callee), language in COMPOUND_NAMES
    nsym = len(flags)
    command = _shell_commands(language)
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
            if f & (F_NAME | F_MEMBER):
                want = callee_field[parent[1]]
                callee = int(cursor.field_id == want) if want else int(first)
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


@cache
def _walk_tables(language: str) -> _Tables:
    """``_native_tables``' tables for ``_walk_scan``, for every grammar: there no query stands beside
    the walk, so a supertype among the types named (Lua's "variable") only goes unmatched."""
    names = ("variable_name", "word") if language in OWN_NAMES else NAME_LEAVES
    flags, callee, name_field = _kind_tables(language, names, calls=language not in OWN_NAMES)
    return _Tables(flags, callee, name_field, frozenset())


def _kind_tables(language: str, names: Any, calls: bool = True) -> tuple[bytes, bytes, int]:
    """What each of ``language``'s node types is to a walk (``F_*``, a byte a symbol), a call's
    callee field (uint16 a symbol; 0: its first named child), and the "name" field's id."""
    parser = parser_for(language)
    assert parser is not None
    lang = parser.language
    flags = bytearray(lang.node_kind_count)
    callee = array("H", bytes(2 * lang.node_kind_count))
    known = [*GRAMMARS[language].defs, *EXTRA_DEFS.get(language, {})]
    for types, bit in (
        (names, F_NAME),
        (TYPE_LEAVES, F_TYPE_LEAF),
        (TYPE_PARENTS, F_TYPE_PARENT),
        (IMPORTS, F_IMPORT),
        (known, F_DEF),
        (MEMBERS, F_MEMBER),
    ):
        for t in types:
            i = lang.id_for_node_kind(t, True)
            if i and i < len(flags):
                flags[i] |= bit
    for call, fld in CALLS.items() if calls else ():
        i = lang.id_for_node_kind(call, True)
        if not i or i >= len(flags):
            continue
        flags[i] |= F_CALL
        if call == "call" and _possible(lang, ["(call method: (_))"], []):
            callee[i] = lang.field_id_for_name("method") or 0
        elif fld and _possible(lang, [f"({call} {fld}: (_))"], []):
            callee[i] = lang.field_id_for_name(fld) or 0
    return bytes(flags), callee.tobytes(), lang.field_id_for_name("name") or 0


@cache
def _shell_commands(language: str) -> tuple[int, int, int] | None:
    """For a grammar with its own name patterns (shell): the ids of ``command_name``, ``word`` and
    ``command``: a word is a name inside a command_name, and a call where that is a command's."""
    if language not in OWN_NAMES:
        return None
    parser = parser_for(language)
    assert parser is not None
    lang = parser.language
    return (
        lang.id_for_node_kind("command_name", True),
        lang.id_for_node_kind("word", True),
        lang.id_for_node_kind("command", True),
    )


# What a node type is to the C walk (``native/symscan.c``), a byte a symbol.
F_NAME, F_TYPE_LEAF, F_TYPE_PARENT, F_IMPORT, F_DEF, F_CALL, F_MEMBER = 1, 2, 4, 8, 16, 32, 64


def native_version() -> str | None:
    """The py-tree-sitter version the C walk reads trees of, where it is built and is the installed
    one; None where the Python walk answers."""
    if symscan is None:
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("tree-sitter")
    except PackageNotFoundError:  # pragma: no cover - tree_sitter imported from elsewhere
        return None
    return str(symscan.TREE_SITTER) if installed == symscan.TREE_SITTER else None


@dataclass(frozen=True)
class _Tables:
    flags: bytes  # F_* of each symbol
    callee: bytes  # uint16 a symbol: a call's callee field (0: its first named child)
    name_field: int  # the "name" field's id (0: none)
    plain: frozenset[int]  # definitions named by their "name" child alone: no node is needed for them


# Definition types whose name, kind or line the chunker or ``_definition_name`` works out from more
# than their "name" child (their node is asked, as in the Python walk).
_NOT_PLAIN = frozenset(
    {
        "variable_declaration",
        "lexical_declaration",
        "struct_specifier",
        "enum_specifier",
        "union_specifier",
        "class_specifier",
        "assignment_expression",
        "field_definition",
        "public_field_definition",
        "call",
        "assignment_statement",
        "field",
        "class_declaration",
        "test_declaration",
        "impl_item",
        "type_declaration",
    }
)


@cache
def _native_tables(language: str) -> _Tables | None:
    """For the C walk, what each of ``language``'s node types is (``F_*``) and, for a call, the field
    that holds what it calls (0: its first named child): the node types, fields and anchors of
    ``_queries``' patterns. None where the C walk cannot stand in for the query: no C walk, a
    grammar with its own name patterns, or one where a type named here is a supertype (which a
    query matches by the hidden nodes around a node, not by its own type)."""
    if native_version() is None or language in OWN_NAMES or _queries(language) is None:
        return None
    parser = parser_for(language)
    lang = parser.language

    def ids(types: Any) -> list[int]:
        return [i for t in types if (i := lang.id_for_node_kind(t, True))]

    known = [*GRAMMARS[language].defs, *EXTRA_DEFS.get(language, {})]
    if set(lang.supertypes) & set(ids([*NAME_LEAVES, *known, *CALLS, *MEMBERS, *IMPORTS, *TYPE_LEAVES])):
        return None
    flags, callee, name_field = _kind_tables(language, NAME_LEAVES)
    g = GRAMMARS[language]
    special = _NOT_PLAIN | set(g.wrappers) | set(EXTRA_DEFS.get(language, {}))
    if language in ("c", "cpp"):
        special |= {"function_definition"}  # named through its declarator (``_c_function_name``)
    if language == "go":
        special |= {"method_declaration"}  # its scope is its receiver's type (``_go_receiver``)
    plain = frozenset(ids([t for t in g.defs if t not in special]))
    return _Tables(flags, callee, name_field, plain)


def _found_fast(language: str, tables: _Tables, data: bytes, root: Node, spans: array[int]) -> list[Found] | None:
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
            # what ``_definition_name`` would make of it, and ``_name_line`` find as it is
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


_ODD_NAME = re.compile(r"\s")  # a name ``_definition_name`` changes (or "A for B", whose line ``_name_line`` looks for)


@cache
def _kind_name(language: str, symbol: int) -> str:
    parser = parser_for(language)
    return str(parser.language.node_kind_for_id(symbol)) if parser is not None else ""


def _native_rows(language: str, text: str | bytes, tree: Any) -> FileSymbols | None:
    """``extract_rows`` from the C walk, or None where the Python walk answers (no C walk for the
    language, a parse ``_recover`` redoes, a name that is not UTF-8)."""
    tables = _native_tables(language) if language in GRAMMARS else None
    native = symscan
    if tables is None or native is None:
        return None
    queries = _queries(language)
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
