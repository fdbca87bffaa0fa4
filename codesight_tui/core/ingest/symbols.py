"""Definitions and references of one file, from its tree-sitter parse: what `def`, `refs`,
`callers` and `callees` answer from (issue 51).

A definition is a function, method, class, type or module the grammar names (``chunker.GRAMMARS``,
the same ones the chunks are scoped by), with its kind, its enclosing definitions and the line of
its name. A reference is every other identifier in the code, with its line, the innermost
definition it sits in, and a kind: ``call`` (the name called: ``f(x)``, ``obj.f(x)``, ``new F``),
``type`` (a type position), ``import`` (inside an import) or ``other``. Names inside comments and
strings are no identifiers to the grammar, so they are never references.

Both come from tree-sitter queries (the matching runs in C): about 2 us an identifier here, on top
of the parse the chunker makes anyway.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from codesight_tui.core.ingest.chunker import GRAMMARS, is_definition, keyword, node_name, parser_for

if TYPE_CHECKING:
    from tree_sitter import Node, Query

# Leaves that name something, in any grammar that has them.
NAME_LEAVES = ("identifier", "type_identifier", "field_identifier", "property_identifier", "simple_identifier",
               "constant", "name", "package_identifier", "namespace_identifier", "shorthand_property_identifier",
               "private_property_identifier", "statement_identifier", "constructor", "variable", "atom")
TYPE_LEAVES = frozenset({"type_identifier", "constructor"})  # constructor: Haskell's type/data constructors
# Nodes whose names are types (where the grammar has no type_identifier leaf there).
TYPE_PARENTS = frozenset({"type", "user_type", "generic_type", "type_annotation", "nullable_type", "array_type",
                          "predefined_type", "qualified_type", "scoped_type_identifier"})
IMPORTS = frozenset({"import_statement", "import_from_statement", "future_import_statement", "import_declaration",
                     "use_declaration", "import_header", "import", "using_directive", "namespace_use_declaration",
                     "import_spec", "preproc_include"})
# A call node, and the field that holds what is called (None: its first named child).
CALLS: dict[str, str | None] = {
    "call": None, "call_expression": "function", "new_expression": "constructor", "method_invocation": "name",
    "object_creation_expression": "type", "invocation_expression": "function", "function_call": "name",
    "function_call_expression": "function", "member_call_expression": "name", "scoped_call_expression": "name",
    "nullsafe_member_call_expression": "name", "macro_invocation": "macro", "command": "name", "apply": "function",
    "generic_function": "function", "instance_expression": None,
}
# What a call's callee may be besides a name: the member part is what is called (obj.f -> f).
MEMBERS = frozenset({"attribute", "member_expression", "selector_expression", "field_expression",
                     "scoped_identifier", "navigation_expression", "navigation_suffix", "member_access_expression",
                     "qualified_identifier", "field_access", "dot_index_expression", "method_index_expression",
                     "scoped_call_expression", "generic_function", "dot", "selection_expression", "command_name"})
_UP = 4  # ancestors looked at for an import


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


@dataclass
class Symbols:
    defs: list[Definition] = field(default_factory=list)
    refs: list[Reference] = field(default_factory=list)

    def enclosing(self, ref: Reference) -> Definition | None:
        return self.defs[ref.within] if ref.within >= 0 else None


@cache
def _queries(language: str) -> tuple[Query, Query] | None:
    """(definitions, names) queries for ``language``: only the node types its grammar has."""
    from tree_sitter import Query

    parser = parser_for(language)
    if parser is None:
        return None
    lang = parser.language
    known = [t for t in GRAMMARS[language].defs if lang.id_for_node_kind(t, True)]
    leaves = [t for t in NAME_LEAVES if lang.id_for_node_kind(t, True)]
    if not known or not leaves:
        return None
    return (Query(lang, " ".join(f"({t}) @d" for t in known)),
            Query(lang, "[" + " ".join(f"({t})" for t in leaves) + "] @n"))


def _text(node: Node) -> str:
    return node.text.decode("utf-8", errors="replace") if node.text else ""


def _callee(call: Node) -> Node | None:
    name = CALLS.get(call.type)
    return call.child_by_field_name(name) if name else (call.named_children[0] if call.named_children else None)


def _kind(leaf: Node) -> str:
    parent = leaf.parent
    if parent is None:
        return "other"
    # called: the callee itself, or the last part of a member access that is the callee
    node: Node = leaf
    up: Node | None = parent
    while up is not None and up.type in MEMBERS and up.named_children and up.named_children[-1] == node:
        node = up
        up = up.parent
    if up is not None and up.type in CALLS and _callee(up) == node:
        return "call"
    if leaf.type in TYPE_LEAVES or parent.type in TYPE_PARENTS:
        return "type"
    anc: Node | None = parent
    for _ in range(_UP):
        if anc is None:
            break
        if anc.type in IMPORTS:
            return "import"
        anc = anc.parent
    return "other"


def _name_line(node: Node, name: str) -> int:
    """The 0-based line of a definition's name: its name node's, else the first line of the
    definition that holds the name (a decorator or comment above is not part of the node)."""
    found = node.child_by_field_name("name")
    if found is not None and _text(found) == name:
        return int(found.start_point[0])
    lines = _text(node).split("\n")
    for k, line in enumerate(lines):
        if name in line:
            return int(node.start_point[0]) + k
    return int(node.start_point[0])


def extract(language: str, text: str | bytes, tree: Any = None) -> Symbols | None:
    """The definitions and references of one file in ``language`` (``tree``: its parse, where
    the caller has one); None where codesight has no grammar for the language."""
    queries = _queries(language) if language in GRAMMARS else None
    if queries is None:
        return None
    from tree_sitter import QueryCursor

    data = text.encode("utf-8", errors="surrogateescape") if isinstance(text, str) else text
    if tree is None:
        parser = parser_for(language)
        assert parser is not None
        tree = parser.parse(data)
    g = GRAMMARS[language]
    def_q, name_q = queries
    nodes = sorted((n for n in QueryCursor(def_q).captures(tree.root_node).get("d", []) if is_definition(g, n)),
                   key=lambda n: (n.start_byte, -n.end_byte))
    out = Symbols()
    starts: list[int] = []  # each definition's start byte, in order
    ends: list[int] = []
    parents: list[int] = []  # each definition's enclosing one (-1: none)
    open_: list[int] = []  # the definitions around the current one
    names_at: set[tuple[str, int]] = set()  # (name, line) of each definition's own name
    for node in nodes:
        name = " ".join(node_name(node).split())[:200]
        if not name:
            continue
        while open_ and ends[open_[-1]] <= node.start_byte:
            open_.pop()
        scope = ".".join(out.defs[i].name for i in open_)
        kind = keyword(node) or g.defs.get(node.type, node.type)
        line = _name_line(node, name.rsplit(".", 1)[-1].split(" for ")[-1])
        out.defs.append(Definition(name, kind, scope, line + 1, node.start_point[0] + 1, node.end_point[0] + 1))
        names_at.add((name.rsplit(".", 1)[-1], line))
        starts.append(node.start_byte)
        ends.append(node.end_byte)
        parents.append(open_[-1] if open_ else -1)
        open_.append(len(out.defs) - 1)
    for leaf in QueryCursor(name_q).captures(tree.root_node).get("n", []):
        if leaf.named_child_count:  # a name node with parts (Swift's identifier): its parts count
            continue
        name = _text(leaf)
        line = leaf.start_point[0]
        if not name or (name, line) in names_at:
            if name:
                names_at.discard((name, line))  # the defining occurrence, once
            continue
        out.refs.append(Reference(name, line + 1, _kind(leaf), _within(starts, ends, parents, leaf.start_byte)))
    out.refs.sort(key=lambda r: r.line)
    return out


def _within(starts: list[int], ends: list[int], parents: list[int], at: int) -> int:
    """The innermost definition whose bytes hold ``at`` (-1: none): the last one to start before
    it, or the nearest of that one's enclosing definitions that has not ended."""
    k = bisect_right(starts, at) - 1
    while k >= 0 and ends[k] <= at:
        k = parents[k]
    return k
