"""The grammars codesight parses with tree-sitter: each language's wheel, the node types that
define something (and the keyword a scope names them by), the nodes that wrap a definition or
never hold one, and the macros whose bodies hold items."""

from __future__ import annotations

from dataclasses import dataclass

# Nodes of any grammar that hold no definition: the walk for definitions never enters them.
NO_DEFS_INSIDE = frozenset(
    {
        "string",
        "comment",
        "template_string",
        "string_literal",
        "raw_string_literal",
        "heredoc_body",
        "line_comment",
        "block_comment",
        "concatenated_string",
    }
)


@dataclass(frozen=True)
class Grammar:
    module: str
    func: str
    defs: dict[str, str]  # node type -> label keyword
    wrappers: frozenset[str] = frozenset()  # nodes that wrap a definition (decorators, export)
    opaque: frozenset[str] = frozenset()  # nodes that never hold a definition (expressions)
    attached: frozenset[str] = frozenset()  # nodes right above a definition that belong to it, as comments do
    # Macro calls whose braces hold items, at item level (Rust's cfg_rt! { pub fn spawn ... }): the
    # grammar sees a token tree there, so the braces' text is parsed again for its definitions.
    macro_items: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "opaque", NO_DEFS_INSIDE | self.opaque)


JS_DEFS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "method_definition": "method",
    "lexical_declaration": "const",
    "variable_declaration": "var",
    # A function bound by assignment (Axios.prototype.request = function ..., module.exports =
    # function ...) or held in a class field (run = async (task) => { ... }).
    "assignment_expression": "function",
    "field_definition": "method",
    "public_field_definition": "method",
}
TS_DEFS = {
    **JS_DEFS,
    "abstract_class_declaration": "class",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
    "internal_module": "namespace",
    "module": "module",
    "method_signature": "method",
    "abstract_method_signature": "method",
    "function_signature": "function",  # declarations (.d.ts) define names too
}
C_DEFS = {
    "function_definition": "function",
    "struct_specifier": "struct",
    "enum_specifier": "enum",
    "union_specifier": "union",
    "preproc_function_def": "macro",
}

GRAMMARS: dict[str, Grammar] = {
    "python": Grammar(
        "tree_sitter_python",
        "language",
        {"function_definition": "def", "class_definition": "class"},
        frozenset({"decorated_definition"}),
        # Python defines things in statements only, never inside an expression:
        # the walk for definitions skips the (big) literals, calls and signatures.
        frozenset(
            {
                "expression_statement",
                "return_statement",
                "assert_statement",
                "raise_statement",
                "import_statement",
                "import_from_statement",
                "future_import_statement",
                "delete_statement",
                "print_statement",
                "global_statement",
                "nonlocal_statement",
                "parameters",
                "decorator",
            }
        ),
    ),
    "javascript": Grammar("tree_sitter_javascript", "language", JS_DEFS, frozenset({"export_statement"})),
    "typescript": Grammar("tree_sitter_typescript", "language_typescript", TS_DEFS, frozenset({"export_statement"})),
    "tsx": Grammar("tree_sitter_typescript", "language_tsx", TS_DEFS, frozenset({"export_statement"})),
    "go": Grammar(
        "tree_sitter_go",
        "language",
        {"function_declaration": "func", "method_declaration": "func", "type_declaration": "type"},
    ),
    "rust": Grammar(
        "tree_sitter_rust",
        "language",
        {
            "function_item": "fn",
            "impl_item": "impl",
            "struct_item": "struct",
            "enum_item": "enum",
            "trait_item": "trait",
            "mod_item": "mod",
            "macro_definition": "macro",
        },
        attached=frozenset({"attribute_item"}),
        macro_items=frozenset({"macro_invocation"}),
    ),
    "java": Grammar(
        "tree_sitter_java",
        "language",
        {
            "class_declaration": "class",
            "interface_declaration": "interface",
            "enum_declaration": "enum",
            "record_declaration": "record",
            "method_declaration": "method",
            "constructor_declaration": "constructor",
            "annotation_type_declaration": "@interface",
        },
    ),
    "ruby": Grammar(
        "tree_sitter_ruby",
        "language",
        {"method": "def", "singleton_method": "def", "class": "class", "module": "module"},
    ),
    "php": Grammar(
        "tree_sitter_php",
        "language_php",
        {
            "function_definition": "function",
            "class_declaration": "class",
            "interface_declaration": "interface",
            "trait_declaration": "trait",
            "enum_declaration": "enum",
            "method_declaration": "function",
        },
    ),
    "c": Grammar("tree_sitter_c", "language", C_DEFS),
    "cpp": Grammar(
        "tree_sitter_cpp",
        "language",
        {**C_DEFS, "class_specifier": "class", "namespace_definition": "namespace"},
        frozenset({"template_declaration"}),
    ),
    "csharp": Grammar(
        "tree_sitter_c_sharp",
        "language",
        {
            "namespace_declaration": "namespace",
            "class_declaration": "class",
            "interface_declaration": "interface",
            "struct_declaration": "struct",
            "enum_declaration": "enum",
            "record_declaration": "record",
            "method_declaration": "method",
            "constructor_declaration": "constructor",
            "property_declaration": "property",
            "operator_declaration": "operator",
        },
    ),
    "kotlin": Grammar(
        "tree_sitter_kotlin",
        "language",
        {
            "class_declaration": "class",
            "object_declaration": "object",
            "function_declaration": "fun",
            "secondary_constructor": "constructor",
        },
    ),
    "scala": Grammar(
        "tree_sitter_scala",
        "language",
        {
            "class_definition": "class",
            "object_definition": "object",
            "trait_definition": "trait",
            "enum_definition": "enum",
            "function_definition": "def",
            "given_definition": "given",
        },
    ),
    # Swift's class_declaration also covers struct, enum, extension and actor (see keyword).
    "swift": Grammar(
        "tree_sitter_swift",
        "language",
        {
            "class_declaration": "class",
            "protocol_declaration": "protocol",
            "function_declaration": "func",
            "init_declaration": "init",
            "typealias_declaration": "typealias",
        },
    ),
    # Lua also defines functions by assignment (M.setup = function(config) ... end, local f =
    # function ...), and in a module's table (M.task = { run = function(self) ... end }).
    "lua": Grammar(
        "tree_sitter_lua",
        "language",
        {"function_declaration": "function", "assignment_statement": "function", "field": "function"},
        frozenset({"variable_declaration"}),
    ),
    "shell": Grammar("tree_sitter_bash", "language", {"function_definition": "function"}),
    "haskell": Grammar(
        "tree_sitter_haskell",
        "language",
        {
            "function": "function",
            "bind": "bind",
            "data_type": "data",
            "newtype": "newtype",
            "class": "class",
            "instance": "instance",
            "type_synomym": "type",
            "type_family": "type family",
        },
        attached=frozenset({"signature", "haddock"}),
    ),
    # Elixir defines with macro calls (defmodule, def, ...): see ELIXIR_DEFS.
    "elixir": Grammar(
        "tree_sitter_elixir", "language", {"call": ""}, attached=frozenset({"unary_operator"})
    ),  # @doc, @spec, @impl above a def
    # Zig: functions, and containers bound to a name (const Foo = struct { ... }).
    "zig": Grammar(
        "tree_sitter_zig",
        "language",
        {"function_declaration": "fn", "variable_declaration": "const", "test_declaration": "test"},
    ),
}

ELIXIR_DEFS = frozenset(
    {
        "defmodule",
        "def",
        "defp",
        "defmacro",
        "defmacrop",
        "defprotocol",
        "defimpl",
        "defstruct",
        "defexception",
        "defguard",
        "defdelegate",
    }
)
ZIG_CONTAINERS = frozenset({"struct_declaration", "enum_declaration", "union_declaration", "opaque_declaration"})
SWIFT_KINDS = frozenset({"class", "struct", "enum", "extension", "actor"})

FUNC_VALUES = frozenset({"arrow_function", "function_expression", "function", "class", "generator_function"})
NAME_TYPES = frozenset(
    {
        "identifier",
        "field_identifier",
        "type_identifier",
        "qualified_identifier",
        "destructor_name",
        "operator_name",
        "property_identifier",
        "constant",
        "name",
        "scoped_identifier",
    }
)
