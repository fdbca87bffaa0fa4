"""What the symbol walks read a grammar by: the node types that name, call, import or type
something, each grammar's tree-sitter queries (compiled once, with the shipped answers to which
patterns a grammar has, ``possible_patterns.json``), and the tables the C walk (``native/symscan.c``,
optional) reads each node type by."""

from __future__ import annotations

import hashlib
import json
from array import array
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from codesight_tui.core.ingest.chunker import (
    parser_for,
)
from codesight_tui.core.ingest.grammars import GRAMMARS

if TYPE_CHECKING:
    from tree_sitter import Query


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


# An instantiation in a callee's place, whose first named child is what is called: Go's `arg[string](x)`,
# which the grammar parses as an index expression (a slice of functions, `fns[i](x)`, reads the same).
GENERICS: dict[str, tuple[str, ...]] = {"go": ("index_expression",)}


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
# companion object, a Go interface's methods.
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
    "go": {"method_elem": "method"},  # an interface's method: what a call through a value of it calls
}


# Of those, the kinds that hold code the way a function does: the innermost definition around a
# reference (a call's caller) is one of these or one of the chunker's, never an object or a field.
EXTRA_SCOPES = frozenset({"function", "object"})


FUNCTION_NODES = frozenset({"arrow_function", "function_expression", "function", "generator_function", "class"})


@dataclass(frozen=True)
class GrammarQueries:
    all: Query  # @d definitions, @n names, and @call, @type, @typed, @import: what tells a name's kind
    errors: Query  # @e: the parse's ERROR nodes
    leaves: frozenset[str] = frozenset()  # the name leaves' node types


@cache
def grammar_queries(language: str) -> GrammarQueries | None:
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
        for g in GENERICS.get(language, ()):  # f[T](), pkg.F[T]()
            patterns.append(f"({call} {at}({g} . {alt} @call))")
            patterns.extend(f"({call} {at}({g} . ({m} {alt} @call .)))" for m in members)
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
    return GrammarQueries(
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
    grammar_queries.cache_clear()
    _ASKED.clear()
    _RECOMPILE = True
    try:
        for language in sorted(GRAMMARS):
            grammar_queries(language)
    finally:
        _RECOMPILE = False
        grammar_queries.cache_clear()
        _known_possible.cache_clear()
    path.write_text(json.dumps(dict(sorted(_ASKED.items())), indent=0) + "\n", encoding="utf-8")
    return len(_ASKED)


@cache
def walk_tables(language: str) -> NativeTables:
    """``native_tables``' tables for ``_walk_scan``, for every grammar: there no query stands beside
    the walk, so a supertype among the types named (Lua's "variable") only goes unmatched."""
    names = ("variable_name", "word") if language in OWN_NAMES else NAME_LEAVES
    flags, callee, name_field = _kind_tables(language, names, calls=language not in OWN_NAMES)
    return NativeTables(flags, callee, name_field, frozenset())


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
        (GENERICS.get(language, ()), F_GENERIC),
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
def shell_commands(language: str) -> tuple[int, int, int] | None:
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
F_NAME, F_TYPE_LEAF, F_TYPE_PARENT, F_IMPORT, F_DEF, F_CALL, F_MEMBER, F_GENERIC = 1, 2, 4, 8, 16, 32, 64, 128


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
class NativeTables:
    flags: bytes  # F_* of each symbol
    callee: bytes  # uint16 a symbol: a call's callee field (0: its first named child)
    name_field: int  # the "name" field's id (0: none)
    plain: frozenset[int]  # definitions named by their "name" child alone: no node is needed for them


# Definition types whose name, kind or line the chunker or ``definition_name`` works out from more
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
def native_tables(language: str) -> NativeTables | None:
    """For the C walk, what each of ``language``'s node types is (``F_*``) and, for a call, the field
    that holds what it calls (0: its first named child): the node types, fields and anchors of
    ``grammar_queries``' patterns. None where the C walk cannot stand in for the query: no C walk, a
    grammar with its own name patterns, or one where a type named here is a supertype (which a
    query matches by the hidden nodes around a node, not by its own type)."""
    if native_version() is None or language in OWN_NAMES or grammar_queries(language) is None:
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
        special |= {"method_declaration"}  # its scope is its receiver's type (``go_receiver_name``)
    plain = frozenset(ids([t for t in g.defs if t not in special]))
    return NativeTables(flags, callee, name_field, plain)
