"""Language-aware chunking on scope boundaries, sized to the embedding model's token window.

Code is parsed with the tree-sitter grammar wheels; a definition (function, class, method, ...)
becomes one chunk when it fits, and a container that does not fit is split into its members plus
the lines it holds itself. Code without a grammar uses an indentation fallback, Markdown splits at
headings, and other text uses line windows with overlap. Every chunk fits ``budget`` tokens.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from codesight_tui.core.ingest.grammars import (
    ELIXIR_DEFS,
    FUNC_VALUES,
    GRAMMARS,
    NAME_TYPES,
    SWIFT_KINDS,
    ZIG_CONTAINERS,
    Grammar,
)
from codesight_tui.core.languages import CODE_LANGUAGES
from codesight_tui.core.text import content_hash, spell_out_names

if TYPE_CHECKING:
    from codesight_tui.core.ingest.tokens import TokenCounter

Node = Any  # a tree-sitter node
Segment = tuple[int, int, str]  # (first line, last line, scope): 0-based, inclusive
Budget = Callable[[str], int]  # a scope's token budget


@dataclass(slots=True)
class Chunk:
    """A span of a file. Lines are 1-based and inclusive; ``content`` is the raw text."""

    path: str
    start_line: int
    end_line: int
    language: str
    scope: str
    content: str

    @property
    def hash(self) -> str:
        return content_hash(self.content)


@lru_cache(maxsize=100_000)
def scope_text(scope: str) -> str:
    """A scope as the model reads it: each compound name followed by its words,
    ``class Command > method _checkForConflicts`` ->
    ``class Command > method _checkForConflicts (check for conflicts)``.

    The model's word pieces cut a glued name into fragments (``##fl``, ``##ict``) that mean little;
    its words are what a question uses. Measured on the devset: vector search 0.634 -> 0.644,
    hybrid 0.767 -> 0.777 (README)."""
    return spell_out_names(scope)


def embed_text(path: str, scope: str, content: str) -> str:
    """The text given to the embedding model: a context header, then the raw content.

    Line numbers stay out on purpose: they carry no meaning for the model, and keeping them out
    means that code which merely moved is never embedded again.
    """
    header = f"file: {path}"
    if scope:
        header += f"\nscope: {scope_text(scope)}"
    return f"{header}\n{content}"


_DOCSTRING = re.compile(r"^[rRbBuUfF]{0,2}(\"\"\"|\'\'\')")
_COMMENT = ("#", "//", "/*", "*", "--", ";;")


def doc_view(content: str) -> str | None:
    """A chunk's comments and docstrings under its first line of code (the signature): what the
    code says about itself, without the code. None if the chunk has no comment or docstring.

    A question about behaviour ("guess how many spaces a snippet indents by") often matches the
    words of a docstring ("Auto-detect indentation of code") far better than the whole chunk,
    whose vector the code's own tokens dominate. Each such chunk gets this second, short vector,
    and vector search takes the closer of the two (devset NDCG@10 0.752 -> 0.767; README)."""
    out: list[str] = []
    first: str | None = None
    inside: str | None = None
    for line in content.split("\n"):
        s = line.strip()
        if not s:
            continue
        if inside:
            out.append(s)
            if inside in s:
                inside = None
            continue
        m = _DOCSTRING.match(s)
        if m:
            out.append(s)
            quote = m.group(1)
            if s.count(quote) == 1:
                inside = quote
        elif s.startswith(_COMMENT) and not s.startswith("#!"):
            out.append(s)
        elif first is None and not s.startswith("@"):
            first = s
            out.append(s)
    if len(out) == (first is not None):
        return None
    return "\n".join(out)


def doc_text(path: str, scope: str, content: str, language: str | None) -> str | None:
    """The embedding text of a code chunk's ``doc_view`` (same header as ``embed_text``), or None
    if it has none or it would be the chunk's own text (a chunk of nothing but comments)."""
    if language not in CODE_LANGUAGES:
        return None
    view = doc_view(content)
    return None if view is None or view == content else embed_text(path, scope, view)


@cache
def parser_for(language: str) -> Any:
    """A tree-sitter parser for ``language``, or None if its grammar wheel is not installed."""
    spec = GRAMMARS.get(language)
    if spec is None:
        return None
    try:
        import tree_sitter

        mod = importlib.import_module(spec.module)
        return tree_sitter.Parser(tree_sitter.Language(getattr(mod, spec.func)()))
    except Exception:  # missing or incompatible wheel: the fallback chunker takes over  # noqa: BLE001
        return None


PARSE_SECONDS = 0.8  # a parse's time bound: this, plus ``PARSE_PER_BYTE`` (a 1 MB file: 1.3 s; a parse
#                     of code runs at 10 MB/s here). tree-sitter's error recovery is quadratic on some
#                     broken text (Lua: 205 KB of `int f( { #define X(` took 7.4 s); such a file is
#                     chunked by lines instead.
PARSE_PER_BYTE = 0.5e-6
GAVE_UP = "gave up"  # what ``Chunker.parse`` returns for a parse stopped at its bound


def parse_bounded(parser: Any, data: bytes, seconds: float | None = None) -> Any:
    """``parser.parse(data)`` within ``seconds`` (default: ``PARSE_SECONDS`` + ``PARSE_PER_BYTE``), or
    None. tree-sitter reads through a callback here, which says the input has ended once the time is
    up: the parse then stops at once, and its tree, which covers only part of the file, is dropped."""
    import time

    deadline = time.monotonic() + (PARSE_SECONDS + len(data) * PARSE_PER_BYTE if seconds is None else seconds)
    over = parsed = False

    def read(offset: int, _point: Any) -> bytes:
        nonlocal over
        # The tree keeps this callback: ``Node.text`` reads through it later, and must get the bytes.
        if not parsed and (over or time.monotonic() > deadline):
            over = True
            return b""
        return data[offset : offset + 16_384]

    tree = parser.parse(read)
    parsed = True
    return None if over else tree


def has_grammar(language: str) -> bool:
    """Whether tree-sitter parsing is available for ``language`` here."""
    return parser_for(language) is not None


def _text(node: Node) -> str:
    return node.text.decode("utf-8", errors="replace") if node is not None and node.text else ""


def _declarator_name(node: Node) -> str:
    # C/C++: int *foo(int x) -> function_declarator -> pointer_declarator -> identifier
    d = node
    for _ in range(8):
        nxt = d.child_by_field_name("declarator")
        if nxt is None:
            break
        d = nxt
        if d.type in NAME_TYPES:
            return _text(d)
    return _text(d) if d is not node and d.type in NAME_TYPES else ""


def _lua_value(node: Node) -> Node | None:
    """What a Lua assignment (its first value) or table field binds its name to."""
    if node.type == "field":
        return node.child_by_field_name("value")
    values = next((c for c in node.named_children if c.type == "expression_list"), None)
    return values.named_children[0] if values is not None and values.named_children else None


def keyword(node: Node) -> str:
    """The defining keyword where one node type covers several (Swift, Elixir, Lua), else ''."""
    if node.type == "call":  # Elixir: defmodule, def, defp, ...
        return _text(node.child_by_field_name("target"))
    if node.type == "assignment_statement":  # Lua: a function, or a table of functions
        value = _lua_value(node)
        return "table" if value is not None and value.type == "table_constructor" else ""
    if node.type == "class_declaration":  # Swift: struct Foo, extension Foo, ...
        for c in node.children:
            if not c.is_named and c.type in SWIFT_KINDS:
                return str(c.type)
    return ""


def node_name(node: Node) -> str:
    t = node.type
    if t == "call":  # Elixir: `defmodule A.B do`, `def name(args) do`, `def name, do: ...`
        args = next((c for c in node.named_children if c.type == "arguments"), None)
        first = args.named_children[0] if args is not None and args.named_children else None
        while first is not None and first.type in ("call", "binary_operator"):  # name(args), name(a) when g
            first = first.child_by_field_name("target") or first.child_by_field_name("left")
        return _text(first)
    n = node.child_by_field_name("name")
    if n is not None:
        return _text(n)
    if t == "assignment_expression":  # JS: the name assigned to, or module.exports' function's own
        left, fn = _text(node.child_by_field_name("left")), node.child_by_field_name("right")
        own = fn.child_by_field_name("name") if fn is not None else None
        return _text(own) if own is not None and left in ("module.exports", "exports") else left
    if t == "field_definition":  # JS class field
        return _text(node.child_by_field_name("property"))
    if t in ("struct_specifier", "enum_specifier", "union_specifier"):  # C: typedef struct { ... } uv_buf_t;
        parent = node.parent
        if parent is not None and parent.type == "type_definition":
            return _text(parent.child_by_field_name("declarator"))
    if t in ("variable_declaration", "test_declaration"):  # Zig: const Foo = struct {...}; test "name"
        for c in node.named_children:
            if c.type in ("identifier", "string"):
                return _text(c).strip('"')
    if t == "impl_item":
        trait, typ = node.child_by_field_name("trait"), node.child_by_field_name("type")
        return f"{_text(trait)} for {_text(typ)}" if trait is not None else _text(typ)
    if t in ("lexical_declaration", "variable_declaration"):
        for c in node.named_children:
            if c.type == "variable_declarator":
                return _text(c.child_by_field_name("name"))
    if t == "type_declaration":
        for c in node.named_children:
            if c.child_by_field_name("name") is not None:
                return _text(c.child_by_field_name("name"))
    return _declarator_name(node)


def is_definition(g: Grammar, node: Node) -> bool:
    """Whether ``node`` defines a name worth a scope of its own in grammar ``g``: a function, a
    class, a type; a variable only where it binds a function or a class."""
    t = node.type
    if t in g.wrappers:
        return any(is_definition(g, c) for c in node.named_children)
    if t not in g.defs:
        return False
    if t == "variable_declaration" and g.module == "tree_sitter_zig":
        return any(c.type in ZIG_CONTAINERS for c in node.named_children)
    if t in ("lexical_declaration", "variable_declaration"):
        # only `const f = () => ...` / `const C = class ...` count as definitions
        return any(
            c.type == "variable_declarator"
            and c.child_by_field_name("value") is not None
            and c.child_by_field_name("value").type in FUNC_VALUES
            for c in node.named_children
        )
    if t in ("struct_specifier", "enum_specifier", "union_specifier", "class_specifier"):
        return node.child_by_field_name("body") is not None
    if t in ("assignment_expression", "field_definition", "public_field_definition"):
        value = node.child_by_field_name("right" if t == "assignment_expression" else "value")
        return value is not None and value.type in FUNC_VALUES
    if t == "call":  # Elixir
        return _text(node.child_by_field_name("target")) in ELIXIR_DEFS
    if t in ("assignment_statement", "field"):  # Lua: a function, or a table of them, bound to a name
        value = _lua_value(node)
        return value is not None and (
            value.type == "function_definition"
            or (
                value.type == "table_constructor"
                and t == "assignment_statement"
                and any(is_definition(g, f) for f in value.named_children if f.type == "field")
            )
        )
    return True


MACRO_PARSES = 200  # macro bodies parsed again per file, at most


class _TreeChunker:
    """Turns one parsed file into line-range segments ``(start, end, scope)``, 0-based."""

    def __init__(
        self, grammar: Grammar, lines: list[str], prefix: list[int], budget_for: Budget, parser: Any = None
    ) -> None:
        self.g = grammar
        self.lines = lines
        self.prefix = prefix  # prefix[i]: tokens in lines[:i]
        self.budget_for = budget_for
        self.out: list[tuple[int, int, str]] = []
        self.parser = parser  # parses a macro's items again (grammar.macro_items)
        self.trees: list[Any] = []  # those parses, kept alive while their nodes are used

    def tokens(self, s: int, e: int) -> int:
        return self.prefix[e + 1] - self.prefix[s]

    def is_def(self, node: Node) -> bool:
        return is_definition(self.g, node)

    def unwrap(self, node: Node) -> Node:
        while node.type in self.g.wrappers:
            inner = next((c for c in node.named_children if self.is_def(c)), None)
            if inner is None:
                break
            node = inner
        return node

    def label(self, node: Node) -> str:
        node = self.unwrap(node)
        name = node_name(node).strip()
        kw = keyword(node) or self.g.defs.get(node.type, node.type)
        name = " ".join(name.split())[:80]
        return f"{kw} {name}".strip()

    def inner_defs(self, node: Node) -> list[Node]:
        """The outermost definitions below ``node`` (not below another definition)."""
        found = []
        stack = list(reversed(node.named_children))
        while stack:
            c = stack.pop()
            if self.is_def(c):
                found.append(c)
            elif c.type in self.g.macro_items and c.end_point[0] > c.start_point[0]:
                found.extend(self.macro_defs(c))
            elif c.end_point[0] > c.start_point[0] and c.type not in self.g.opaque:
                # A node on one line holds no definition worth a chunk of its own: skipping
                # those keeps this walk off the (huge) expression subtrees.
                stack.extend(reversed(c.named_children))
        return found

    def macro_defs(self, node: Node) -> list[Node]:
        """The definitions in the braces of a macro call at item level, parsed again on their own
        (after as many newlines and spaces as put them on their lines and columns in the file)."""
        if self.parser is None or len(self.trees) >= MACRO_PARSES:
            return []
        parent = node.parent
        body = next((c for c in node.named_children if c.type == "token_tree"), None)
        text = body.text if body is not None else None
        if (
            body is None
            or not text
            or not text.startswith(b"{")
            or parent is None
            or parent.type not in ("source_file", "declaration_list")
        ):
            return []
        row, col = body.start_point
        tree = self.parser.parse(b"\n" * row + b" " * (col + 1) + text[1:-1])
        self.trees.append(tree)
        return self.inner_defs(tree.root_node)

    def span(self, node: Node, prev_end: int) -> tuple[int, int]:
        s, e = node.start_point[0], node.end_point[0]
        if node.end_point[1] == 0 and e > s:
            e -= 1
        # Attach the comment block (docs, annotations) right above a definition.
        sib = node.prev_named_sibling
        while (
            sib is not None
            and ("comment" in sib.type or sib.type in self.g.attached)
            and sib.end_point[0] >= s - 2
            and sib.start_point[0] > prev_end
        ):
            s = sib.start_point[0]
            sib = sib.prev_named_sibling
        return s, e

    def emit_range(self, s: int, e: int, scope: str) -> None:
        while s <= e and not self.lines[s].strip():
            s += 1
        while e >= s and not self.lines[e].strip():
            e -= 1
        if s > e:
            return
        if self.tokens(s, e) <= self.budget_for(scope):
            self.out.append((s, e, scope))
        else:
            self.out.extend(window_segments(self.lines, self.prefix, s, e, scope, self.budget_for(scope)))

    def emit_node(self, node: Node, scope: str, s: int, e: int) -> None:
        if self.tokens(s, e) <= self.budget_for(scope):
            self.emit_range(s, e, scope)
            return
        inner = self.inner_defs(self.unwrap(node))
        if not inner:
            self.emit_range(s, e, scope)
            return
        cursor = s
        for d in inner:
            ds, de = self.span(d, cursor - 1)
            if de < cursor:
                continue
            ds = max(ds, cursor)
            if ds > cursor:
                self.emit_range(cursor, ds - 1, scope)
            child_scope = f"{scope} > {self.label(d)}" if scope else self.label(d)
            self.emit_node(d, child_scope, ds, de)
            cursor = de + 1
        if cursor <= e:
            self.emit_range(cursor, e, scope)

    def run(self, root: Node) -> list[Segment]:
        last = len(self.lines) - 1
        cursor = 0
        for d in self.inner_defs(root):
            ds, de = self.span(d, cursor - 1)
            if de < cursor:
                continue
            ds = max(ds, cursor)
            if ds > cursor:
                self.emit_range(cursor, ds - 1, "")
            self.emit_node(d, self.label(d), ds, de)
            cursor = de + 1
        if cursor <= last:
            self.emit_range(cursor, last, "")
        return self.out


def window_segments(
    lines: list[str], prefix: list[int], s: int, e: int, scope: str, budget: int, overlap_frac: float = 0.15
) -> list[Segment]:
    """Split lines ``s..e`` (0-based, inclusive) into windows of at most ``budget`` tokens, each
    overlapping the previous by about ``overlap_frac`` of its lines. A single line longer than the
    budget becomes its own segment and is cut by characters later (see ``_cut_long_line``)."""
    out = []
    i = s
    while i <= e:
        j = i
        while j <= e and prefix[j + 1] - prefix[i] <= budget:
            j += 1
        if j == i:  # one line alone is over budget
            out.append((i, i, scope))
            i += 1
            continue
        out.append((i, j - 1, scope))
        if j > e:
            break
        back = int((j - i) * overlap_frac)
        i = max(i + 1, j - back)
    return out


_FALLBACK_DEF = re.compile(
    r"^\s*(?:(?:export|public|private|protected|static|async|abstract|final|override|inline|pub|fn|def|"
    r"func|function|class|struct|interface|enum|trait|module|impl|sub|fun|object|type)\b[\w\s<>,:*&]*?)"
    r"\b(class|struct|interface|enum|trait|module|def|func|function|fn|fun|sub|object|impl|type)\s+([\w.$:]+)"
)
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")


def _fallback_blocks(lines: list[str], language: str) -> list[tuple[int, int, str]]:
    """Blocks for code without a grammar (indentation) and Markdown (headings)."""
    starts: list[tuple[int, str]] = []
    if language == "markdown":
        path: list[tuple[int, str]] = []
        in_fence = False
        for i, line in enumerate(lines):
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
            m = None if in_fence else _HEADING.match(line)
            if m:
                level = len(m.group(1))
                path = [p for p in path if p[0] < level] + [(level, m.group(2).strip()[:60])]
                starts.append((i, " > ".join(t for _, t in path)))
    else:
        for i, line in enumerate(lines):
            if not line.strip() or line[0] in " \t})]" or line.lstrip().startswith(("//", "#", "*", "/*", "end")):
                continue
            m = _FALLBACK_DEF.match(line)
            starts.append((i, f"{m.group(1)} {m.group(2)}" if m else ""))
    if not starts or starts[0][0] != 0:
        starts.insert(0, (0, ""))
    blocks = []
    for k, (i, scope) in enumerate(starts):
        end = starts[k + 1][0] - 1 if k + 1 < len(starts) else len(lines) - 1
        blocks.append((i, end, scope))
    return blocks


def _merge_tiny(
    segs: list[Segment], prefix: list[int], budget_for: Budget, tiny: int, lines: list[str]
) -> list[Segment]:
    """Merge adjacent small segments when the result still fits and nothing but blank lines
    separates them."""
    out: list[tuple[int, int, str]] = []
    for s, e, scope in segs:
        if out:
            ps, pe, pscope = out[-1]
            gap_blank = all(not lines[k].strip() for k in range(pe + 1, s))
            a, b = prefix[pe + 1] - prefix[ps], prefix[e + 1] - prefix[s]
            merged_scope = _merge_scope(pscope, scope)
            if (
                s > pe
                and gap_blank
                and (a < tiny or b < tiny)
                and prefix[e + 1] - prefix[ps] <= budget_for(merged_scope)
            ):
                out[-1] = (ps, e, merged_scope)
                continue
        out.append((s, e, scope))
    return out


def _pack(segs: list[Segment], prefix: list[int], budget_for: Budget) -> list[Segment]:
    """Adjacent segments of one scope (a document's paragraphs on one page, in one section) joined
    while the result fits the budget: chunks of whole paragraphs, as large as the model reads."""
    out: list[tuple[int, int, str]] = []
    for s, e, scope in segs:
        if out:
            ps, pe, pscope = out[-1]
            if pscope == scope and s > pe and prefix[e + 1] - prefix[ps] <= budget_for(scope):
                out[-1] = (ps, e, scope)
                continue
        out.append((s, e, scope))
    return out


def _merge_scope(a: str, b: str) -> str:
    """Scope of two merged segments: the deeper one if one contains the other, else
    ``common > tail_a, tail_b``."""
    if a == b or not b:
        return a
    if not a:
        return b
    pa, pb = a.split(" > "), b.split(" > ")
    common = 0
    while common < min(len(pa), len(pb)) and pa[common] == pb[common]:
        common += 1
    if common == len(pa):
        return b
    if common == len(pb):
        return a
    head = " > ".join(pa[:common])
    tails = ", ".join(dict.fromkeys(x for x in (" > ".join(pa[common:]), " > ".join(pb[common:])) if x))
    return f"{head} > {tails}" if head else tails


class Chunker:
    """Splits files into ``Chunk`` objects whose embedding text fits ``max_tokens``.

    ``counter`` is a ``TokenCounter``; ``max_tokens`` is the model's window less special tokens.
    """

    def __init__(self, counter: TokenCounter, max_tokens: int = 254, tiny_fraction: float = 0.25) -> None:
        self.counter = counter
        self.max_tokens = max_tokens
        self.tiny = int(max_tokens * tiny_fraction)
        self._header_cost: dict[str, int] = {}
        self._scope_costs: dict[str, int] = {}

    def _label_cost(self, label: str) -> int:
        cost = self._header_cost.get(label)
        if cost is None:
            cost = self.counter.count(spell_out_names(label))
            if len(self._header_cost) > 100_000:
                self._header_cost.clear()
            self._header_cost[label] = cost
        return cost

    def _scope_cost(self, scope: str) -> int:
        """Tokens that ``"\nscope: " + scope`` adds to the header (remembered per process)."""
        cost = self._scope_costs.get(scope)
        if cost is None:
            parts = scope.split(" > ")
            cost = 2 + sum(map(self._label_cost, parts)) + len(parts) - 1
            if len(self._scope_costs) > 200_000:
                self._scope_costs.clear()
            self._scope_costs[scope] = cost
        return cost

    def _budget_fn(self, path: str) -> Budget:
        # embed_text's header is "file: PATH\nscope: A > B". The tokenizer splits on whitespace
        # and punctuation, so the header's cost is the sum of its parts' costs: the path once per
        # file, each scope label once per distinct label.
        room = self.max_tokens - self.counter.count(embed_text(path, "", "")) - 1
        known, scope_cost = self._scope_costs, self._scope_cost

        def budget(scope: str) -> int:
            if not scope:
                return max(16, room)
            cost = known.get(scope)
            return max(16, room - (scope_cost(scope) if cost is None else cost))

        return budget

    def _cut_long_line(self, line: str, budget: int) -> list[str]:
        """Cut one over-long line (minified code, data) into pieces that each fit ``budget``:
        at word boundaries where the counter can do so exactly (plain ASCII), else at the model's
        token boundaries, checked exactly."""
        exact = self.counter.cut(line, budget)
        if exact is not None:
            return exact
        starts = self.counter.token_starts(line)
        step = max(1, budget - 4)
        cuts = [starts[k] for k in range(step, len(starts), step)] + [len(line)]
        pieces: list[str] = []
        prev = 0
        for cut in cuts:
            piece = line[prev:cut]
            while len(piece) > 1 and self.counter.count(piece) > budget:  # rare: re-split pieces
                half = len(piece) // 2
                pieces.extend(self._cut_long_line(piece[:half], budget))
                piece = piece[half:]
            if piece:
                pieces.append(piece)
            prev = cut
        return pieces

    def chunk_many(self, files: list[tuple[str, str, str]], trees: list[Any] | None = None) -> list[list[Chunk]]:
        """Chunk ``(path, language, text)`` triples; tokenising happens in one batch. ``trees``:
        each file's parse (``parse``), where the caller made one."""
        counts = self.counter.line_counts_batch([t for _, _, t in files])
        return [
            self.chunk(p, lang, t, c, tree=trees[k] if trees else None)
            for k, ((p, lang, t), c) in enumerate(zip(files, counts, strict=False))
        ]

    @staticmethod
    def parse(language: str, text: str) -> Any:
        """The tree-sitter parse of a file, as ``chunk`` makes it; None without a grammar or on a
        grammar's failure; ``GAVE_UP`` where it took longer than its bound (``parse_bounded``)."""
        parser = parser_for(language)
        if parser is None:
            return None
        try:
            tree = parse_bounded(parser, text.encode("utf-8", errors="surrogatepass"))
        except Exception:  # noqa: BLE001 - a grammar bug must never lose a file: it is chunked by blocks
            return None
        return GAVE_UP if tree is None else tree

    def chunk(
        self,
        path: str,
        language: str,
        text: str,
        line_tokens: list[int] | None = None,
        blocks: list[tuple[int, int, str]] | None = None,
        tree: Any = None,
    ) -> list[Chunk]:
        """Chunk one file. ``line_tokens`` are per-line token counts if already known.

        ``blocks`` (0-based inclusive line ranges with their scope; ``core.ingest.extract``) are a
        document's own structure: paragraphs, sections, slides. Adjacent blocks of one scope are
        packed up to the budget, and a block over it is windowed; no block is ever split otherwise."""
        if not text.strip():
            return []
        lines = text.split("\n")
        if line_tokens is None:
            line_tokens = self.counter.line_counts_batch([text])[0]
        prefix = list(accumulate(line_tokens, initial=0))
        budget_for = self._budget_fn(path)

        segs: list[tuple[int, int, str]] | None = None
        packed = blocks is not None
        parser = None if packed or tree is GAVE_UP else parser_for(language)
        if parser is not None:
            try:
                if tree is None:
                    tree = parse_bounded(parser, text.encode("utf-8", errors="surrogatepass"))
                if tree is None:
                    raise TimeoutError("the parse took too long")
                tc = _TreeChunker(GRAMMARS[language], lines, prefix, budget_for, parser)
                segs = tc.run(tree.root_node)
            except Exception:  # a grammar bug must never lose a file: fall back to blocks  # noqa: BLE001
                segs = None
        if segs is None:
            segs = []
            if blocks is None:
                blocks = (
                    _fallback_blocks(lines, language)
                    if language in CODE_LANGUAGES or language == "markdown"
                    else [(0, len(lines) - 1, "")]
                )
            for s, e, scope in blocks:
                while s <= e and not lines[s].strip():
                    s += 1
                while e >= s and not lines[e].strip():
                    e -= 1
                if s > e:
                    continue
                if prefix[e + 1] - prefix[s] <= budget_for(scope):
                    segs.append((s, e, scope))
                else:
                    segs.extend(window_segments(lines, prefix, s, e, scope, budget_for(scope)))

        if packed:  # a document: never merged across pages, sections or slides
            segs = _pack(segs, prefix, budget_for)
        else:
            segs = _merge_tiny(segs, prefix, budget_for, self.tiny, lines)
        chunks: list[Chunk] = []
        for s, e, scope in segs:
            n = prefix[e + 1] - prefix[s]
            budget = budget_for(scope)
            if s == e and n > budget:
                for piece in self._cut_long_line(lines[s], budget):
                    chunks.append(Chunk(path, s + 1, s + 1, language, scope, piece))
                continue
            chunks.append(Chunk(path, s + 1, e + 1, language, scope, "\n".join(lines[s : e + 1])))
        return chunks
