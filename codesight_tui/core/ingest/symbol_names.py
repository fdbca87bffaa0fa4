"""How the symbol walks name a definition: its name node (a C declarator's, a Go method's receiver
type, a Lua assignment's target), the line its name is on, and the definitions a grammar's plain
node types miss (a JavaScript function assigned to a name)."""

from __future__ import annotations

import re
from operator import attrgetter
from typing import TYPE_CHECKING

from codesight_tui.core.ingest.chunker import (
    node_name,
)
from codesight_tui.core.ingest.symbol_tables import (
    FUNCTION_NODES,
)

if TYPE_CHECKING:
    from tree_sitter import Node

# Where the parse of a file is lost (``_broken``), its declarations are parsed one by one, and their
# members where one still fails: what starts one, at its indentation.
_DECLARATION = re.compile(rb"[A-Za-z_@]")
RECOVER_LINES = 20  # an ERROR node over fewer lines costs little: the parse is kept
RECOVER_DEPTH = 3
_START = attrgetter("start_byte")
_TEMPLATE_ARGS = re.compile(r"<[^<>]*(?:<[^<>]*(?:<[^<>]*>[^<>]*)*>[^<>]*)*>$")
_NEWLINE = re.compile(rb"\n")

if TYPE_CHECKING:
    from tree_sitter import Node


_TEMPLATE_ARGS = re.compile(r"<[^<>]*(?:<[^<>]*(?:<[^<>]*>[^<>]*)*>[^<>]*)*>$")


def _text(node: Node | None) -> str:
    return node.text.decode("utf-8", errors="replace") if node is not None and node.text else ""


NAME_WINDOW = 65_536  # bytes of a definition read for the line of its name


def name_line(node: Node, name: str, data: bytes) -> int:
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


def go_receiver_name(node: Node) -> str:
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


def definition_name(language: str, node: Node) -> str:
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


def extra_definition(language: str, node: Node, kind: str) -> tuple[str, str] | None:
    """The name an ``EXTRA_DEFS`` node defines and its kind (a function bound to a key or a name is
    a function), or None where it defines none."""
    t = node.type
    if language == "lua":
        return _lua_choice(node, kind)
    if t in ("function_expression", "companion_object", "field", "method_elem"):
        name = node.child_by_field_name("name")
        found = _text(name) if name is not None else "Companion" if t == "companion_object" else ""
        return (found, kind) if found else None
    if t == "property_signature":
        typ = node.child_by_field_name("type")
        functional = typ is not None and any(c.type == "function_type" for c in typ.named_children)
        return (_text(node.child_by_field_name("name")), kind) if functional else None
    value = node.child_by_field_name("right" if t == "assignment_expression" else "value")
    if value is None or value.type != "object" and (t == "assignment_expression" or value.type not in FUNCTION_NODES):
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
    return (definition_name("lua", node), kind) if value is not None and value.type == "function_definition" else None
