import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from properties import examples

from codesight_tui.core.config import DEFAULT_MODEL
from codesight_tui.core.ingest.chunker import Chunker, doc_text, doc_view, embed_text, has_grammar, scope_text
from codesight_tui.core.ingest.tokens import TokenCounter, resolve_model

INFO = resolve_model(DEFAULT_MODEL)
COUNTER = TokenCounter(INFO.tokenizer_file)
BUDGET = INFO.max_seq_length - 2
assert COUNTER._tk is not None and INFO.tokenizer_file is not None
TK, TOKENIZER_FILE = COUNTER._tk, INFO.tokenizer_file  # the bundled model's tokenizer, the truth here


@pytest.fixture(scope="module")
def chunker() -> Chunker:
    return Chunker(COUNTER, BUDGET)


SAMPLES = {
    "python": (
        "a.py",
        "class Foo:\n    def bar(self):\n        return 1\n\n\ndef baz():\n    pass\n",
        ["class Foo", "def baz"],
    ),
    "javascript": (
        "a.js",
        "class Foo {\n  bar() {\n    return 1;\n  }\n}\n\nfunction baz() {\n  return 2;\n}\n",
        ["class Foo", "function baz"],
    ),
    "typescript": (
        "a.ts",
        "interface Shape {\n  area(): number;\n}\n\nexport function qux(a: number): number {\n  return a;\n}\n",
        ["interface Shape", "function qux"],
    ),
    "go": (
        "a.go",
        "package main\n\nfunc Foo() int {\n\treturn 1\n}\n\ntype Bar struct {\n\tX int\n}\n",
        ["func Foo", "type Bar"],
    ),
    "rust": (
        "a.rs",
        "struct Point { x: i32 }\n\nimpl Point {\n    fn norm(&self) -> i32 { self.x }\n}\n\nfn main() {}\n",
        ["struct Point", "impl Point", "fn main"],
    ),
    "java": ("A.java", "public class Foo {\n  public int bar() {\n    return 1;\n  }\n}\n", ["class Foo"]),
    "ruby": ("a.rb", "class Foo\n  def bar\n    1\n  end\nend\n\ndef baz\n  2\nend\n", ["class Foo", "def baz"]),
    "php": (
        "a.php",
        "<?php\nclass Foo {\n  public function bar() { return 1; }\n}\nfunction baz() { return 2; }\n",
        ["class Foo", "function baz"],
    ),
    "c": (
        "a.c",
        "#include <stdio.h>\n\nint add(int a, int b) {\n  return a + b;\n}\n\nstruct point { int x; };\n",
        ["function add", "struct point"],
    ),
    "cpp": (
        "a.cpp",
        "namespace geo {\nclass Shape {\n public:\n  int area() const { return 0; }\n};\n}\n\nint main() { return 0; }\n",
        ["namespace geo", "function main"],
    ),
    "csharp": (
        "A.cs",
        "namespace Geo\n{\n    public class Shape\n    {\n        public int Area() { return 0; }\n    }\n}\n",
        ["namespace Geo"],
    ),
    "kotlin": (
        "a.kt",
        "class Shape {\n    fun area(): Int = 0\n}\n\nobject Registry {\n    val shapes = listOf<Shape>()\n}\n",
        ["class Shape", "object Registry"],
    ),
    "scala": (
        "a.scala",
        "trait Functor[F[_]] {\n  def map[A, B](fa: F[A])(f: A => B): F[B]\n}\n\nobject Functor {\n  val x = 1\n}\n",
        ["trait Functor", "object Functor"],
    ),
    "swift": (
        "a.swift",
        "public struct Point {\n    var x: Int\n}\n\nextension Point: Equatable {\n    func norm() -> Int { x }\n}\n",
        ["struct Point", "extension Point"],
    ),
    "lua": (
        "a.lua",
        "local M = {}\n\nfunction M.setup(opts)\n  return opts\nend\n\nlocal function helper()\nend\n\nreturn M\n",
        ["function M.setup", "function helper"],
    ),
    "shell": (
        "a.sh",
        "#!/bin/bash\nnvm_ls() {\n  echo ls\n}\n\nfunction nvm_use {\n  echo use\n}\n",
        ["function nvm_ls", "function nvm_use"],
    ),
    "haskell": (
        "A.hs",
        "module A where\n\n-- | Run it.\nrunX :: Int -> Int\nrunX x = x\n\ndata Shape = Circle | Square\n  deriving Show\n",
        ["function runX", "data Shape"],
    ),
    "elixir": (
        "a.ex",
        'defmodule Phoenix.Router do\n  @doc "Match a route."\n  def match(conn, path) do\n    conn\n  end\n\n'
        "  defp helper, do: :ok\nend\n",
        ["defmodule Phoenix.Router"],
    ),
    "zig": (
        "a.zig",
        "const Point = struct {\n    x: i32,\n};\n\npub fn norm(p: Point) i32 {\n    return p.x;\n}\n",
        ["const Point", "fn norm"],
    ),
}


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_every_language_has_a_grammar_and_finds_scopes(chunker: Chunker, language: str) -> None:
    assert has_grammar(language), f"tree-sitter grammar for {language} missing"
    path, src, expected = SAMPLES[language]
    # Tiny neighbours merge, so check the scopes mention each top-level definition.
    scopes = " | ".join(c.scope for c in chunker.chunk(path, language, src))
    for name in expected:
        assert name in scopes, (language, scopes)


def _big_python_class(methods: int = 40) -> str:
    body = []
    for i in range(methods):
        body.append(
            f"    def method_{i}(self, value):\n"
            + "".join(f"        value = value * {j} + {i}  # step {j} of method {i}\n" for j in range(12))
            + "        return value\n"
        )
    return 'class Big:\n    """A big class."""\n\n' + "\n".join(body)


def test_big_scope_splits_into_members_with_nested_scope(chunker: Chunker) -> None:
    chunks = chunker.chunk("big.py", "python", _big_python_class())
    scopes = [c.scope for c in chunks]
    assert any(s.startswith("class Big > def method_") for s in scopes)
    assert "class Big > def method_7" in " | ".join(scopes)


def test_every_chunk_fits_the_model_window_and_lines_are_1_based(chunker: Chunker) -> None:
    src = _big_python_class() + "\nx = [" + ", ".join(str(i) for i in range(3000)) + "]\n"
    text_lines = src.split("\n")
    chunks = chunker.chunk("big.py", "python", src)
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= len(text_lines)
        assert COUNTER.count(embed_text(c.path, c.scope, c.content)) <= BUDGET
        if c.start_line != c.end_line:  # long single lines are cut; spans match the file exactly
            assert c.content == "\n".join(text_lines[c.start_line - 1 : c.end_line])


def test_huge_function_splits_with_overlap(chunker: Chunker) -> None:
    src = "def huge():\n" + "".join(f"    total = compute_something({i}) + other_value_{i}\n" for i in range(300))
    chunks = chunker.chunk("h.py", "python", src)
    assert len(chunks) > 3
    assert all(c.scope == "def huge" for c in chunks)
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert b.start_line <= a.end_line + 1  # contiguous or overlapping: nothing lost
    assert any(b.start_line <= a.end_line for a, b in zip(chunks, chunks[1:], strict=False))  # real overlap


def test_markdown_uses_headings_and_text_uses_windows(chunker: Chunker) -> None:
    md = "# Title\n\nintro\n\n## Install\n\n" + "pip install thing\n" * 200 + "\n## Usage\n\nrun it\n"
    chunks = chunker.chunk("README.md", "markdown", md)
    assert any("Install" in c.scope for c in chunks)
    assert any("Usage" in c.scope for c in chunks)
    txt = "\n".join(f"line number {i} of a plain text file" for i in range(400))
    chunks = chunker.chunk("notes.txt", "text", txt)
    assert len(chunks) > 2
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 400


def test_fallback_for_code_without_grammar(chunker: Chunker) -> None:
    src = 'public class Greeter {\n    fun hello() = println("hi")\n}\n\nfun main() {\n    Greeter().hello()\n}\n' * 30
    chunks = chunker.chunk("a.kt", "kotlin", src)
    assert chunks and all(c.language == "kotlin" for c in chunks)
    assert any("class Greeter" in c.scope or "fun main" in c.scope for c in chunks)


def test_minified_single_line_is_cut_to_fit(chunker: Chunker) -> None:
    src = "var a=" + "+".join(f"f{i}(x)" for i in range(4000)) + ";\n"
    chunks = chunker.chunk("app.min.js", "javascript", src)
    assert len(chunks) > 1
    for c in chunks:
        assert COUNTER.count(embed_text(c.path, c.scope, c.content)) <= BUDGET


@pytest.mark.parametrize(
    "line",
    [
        "var a=" + "+".join(f"f{i}(x)" for i in range(4000)) + ";",  # plain ASCII: cut between words
        '<p class="x">' + "Le café déjà vu, ¶ naïve ".join(str(i) for i in range(900)) + "</p>",  # non-ASCII
        "  " + "z" * 130 + " " + " ".join(["parseConfigFile"] * 700) + "  ",  # an over-long word, edge spaces
    ],
)
def test_an_over_long_line_is_cut_into_pieces_that_fit_and_rejoin(chunker: Chunker, line: str) -> None:
    """Each piece fits the budget by the model's own count, the pieces rejoin to the line, and
    plain ASCII is never cut inside a word (so BM25 sees whole words)."""
    pieces = chunker._cut_long_line(line, 60)
    assert len(pieces) > 1 and "".join(pieces) == line
    for p in pieces:
        assert len(TK.encode(p, add_special_tokens=False).ids) <= 60
    if line.isascii():
        assert all(not (a[-1:].isalnum() and b[:1].isalnum()) for a, b in zip(pieces, pieces[1:], strict=False))


def test_header_is_prepended_for_embedding_but_content_stays_raw(chunker: Chunker) -> None:
    c = chunker.chunk("src/a.py", "python", "def f():\n    return 1\n")[0]
    assert c.content == "def f():\n    return 1"
    text = embed_text(c.path, c.scope, c.content)
    assert text.startswith("file: src/a.py\nscope: def f\n") and text.endswith(c.content)


def test_the_embedded_scope_spells_out_compound_names() -> None:
    assert scope_text("method _checkForConflicts") == "method _checkForConflicts (check for conflicts)"
    assert scope_text("class Command") == "class Command"
    assert scope_text("def a_b, def c") == "def a_b (a b), def c"
    assert (
        scope_text("class HTTPServer > def parse_config_file")
        == "class HTTPServer (http server) > def parse_config_file (parse config file)"
    )
    text = embed_text("a.js", "class Command > method _checkForConflicts", "x")
    assert text == "file: a.js\nscope: class Command > method _checkForConflicts (check for conflicts)\nx"


def test_chunks_under_long_compound_names_still_fit_the_window(chunker: Chunker) -> None:
    """The header's words count against the budget: a class full of long camelCase methods."""
    name = "handleIncomingWebSocketConnectionUpgradeRequestForTheReverseProxyServerInstance"
    src = "class ProxyConnectionManagerForWebSocketUpgrades:\n" + "".join(
        f"    def {name}{i}(self, value):\n" + "".join(f"        value = value + {j}\n" for j in range(60)) + "\n"
        for i in range(3)
    )
    chunks = chunker.chunk("proxy.py", "python", src)
    assert any("(handle incoming web socket" in embed_text(c.path, c.scope, c.content) for c in chunks)
    for c in chunks:
        assert COUNTER.count(embed_text(c.path, c.scope, c.content)) <= BUDGET


def test_empty_and_whitespace_files_have_no_chunks(chunker: Chunker) -> None:
    assert chunker.chunk("e.py", "python", "") == []
    assert chunker.chunk("e.py", "python", "\n\n   \n") == []


def test_cached_line_counts_equal_tokenising_each_text_whole() -> None:
    """Line counts come from a per-process cache of distinct stripped lines, and plain ASCII is
    counted word by word; both must equal what the model's tokenizer gives, for repeats, indents,
    CRLF, non-ASCII, control characters, special-token text and over-long words."""
    texts = [
        "def f(x):\n    return x  # café\n\n\treturn x  # café\r\n}\n",
        "    return x  # café\n" * 3 + "naïve_ünïcode = '日本語テキスト'\nmsgstr \"Parolamı sıfırla\"\n",
        "",
        "x" * 5000 + "\n  \n" + "a.b(c)[d] -> {e: f}\n",
        "tokens = ['[CLS]', '[sep]', x]  # special-token text\nPageBreak\x0cHere\nURL_PATTERN=r'^https?://[\\w.-]+$'\n",
        "supercalifragilisticexpialidocious " + "Z" * 150 + " HTTPServer2 parseConfigFile __init__ 3.14e-10\n",
        "naïve\x85café a\u200bb\u00a0c\u2028d é\tü\r\n",  # characters the tokenizer drops, keeps or splits on
    ]
    counter = TokenCounter(INFO.tokenizer_file)
    assert counter._words is not None  # MiniLM's tokenizer takes the fast path for plain ASCII

    def exact(text: str) -> int:
        return len(TK.encode(text, add_special_tokens=False).ids)

    for _ in range(2):  # cold, then from the cache
        got = counter.line_counts_batch(texts)
        for text, counts in zip(texts, got, strict=False):
            assert counts == [exact(line) for line in text.split("\n")]
            assert counter.count(text) == exact(text)


_PIECES = [
    "def",
    "Foo",
    "bar_baz",
    "x",
    "3.14",
    " ",
    "  ",
    "\t",
    "\r",
    "\n",
    "(",
    ")",
    "[",
    "]",
    "CLS",
    "[SEP]",
    "[cls]",
    "é",
    "ü",
    "日本",
    "🙂",
    "𝔘x",
    "\u00a0",
    "\u0301",
    "\x0c",
    "\x1c",
    "\x85",
    "\x00",
    "\ufffd",
    "#",
    "'",
    "\u200b",
    "Z" * 120,
]


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.lists(st.sampled_from(_PIECES), max_size=30).map("".join), min_size=1, max_size=6))
def test_batched_line_counts_equal_the_tokenizer_on_any_text(texts: list[str]) -> None:
    """The vectorised counter (byte classes, distinct lines, space-separated words for
    non-ASCII) agrees with the tokenizer itself on every line of any mix of characters."""
    counter = TokenCounter(INFO.tokenizer_file)
    for text, counts in zip(texts, counter.line_counts_batch(texts), strict=False):
        assert counts == [len(TK.encode(line, add_special_tokens=False).ids) for line in text.split("\n")]


def test_line_counts_stay_exact_when_the_word_caches_overflow(monkeypatch: pytest.MonkeyPatch) -> None:
    from codesight_tui.core.ingest import tokens

    monkeypatch.setattr(tokens, "WORD_CACHE_MAX", 8)
    counter = TokenCounter(INFO.tokenizer_file)
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "eta",
        "theta",
        "iota",
        "kappa",
        "lambda",
        "mu",
        "nu",
        "xi",
        "omicron",
        "pi",
        "rho",
    ]
    for k in range(4):  # each batch shares words with the last and brings new ones
        texts = [
            " ".join(words[k * 3 : k * 3 + 9]) + "(x_y)\ncafé naïve " + " ".join(f"é{w}" for w in words[k : k + 9])
        ]
        for text, counts in zip(texts, counter.line_counts_batch(texts), strict=False):
            assert counts == [len(TK.encode(line, add_special_tokens=False).ids) for line in text.split("\n")]
        assert counter.cut("alpha beta gamma delta epsilon zeta eta theta", 3) is not None


def _split_ids(ids: np.ndarray, lengths: np.ndarray) -> list[list[int]]:
    ends = lengths.cumsum().tolist()
    return [ids[end - n : end].tolist() for n, end in zip(lengths.tolist(), ends, strict=False)]


def _tokenizer_ids(texts: list[str], limit: int) -> list[list[int]]:
    return [e.ids[:limit] for e in TK.encode_batch(texts, add_special_tokens=False)]


@settings(max_examples=examples(150), deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join), min_size=1, max_size=6),
    st.sampled_from([3, 17, 512]),
)
def test_word_ids_equal_the_tokenizer_on_any_text(texts: list[str], limit: int) -> None:
    """The static tier's token ids (``WordPieces.ids``: BERT words from a per-word cache for
    printable ASCII, the tokenizer for the rest) are the tokenizer's own, each text cut at
    ``limit``, in any batch mixing the two kinds of text."""
    from unittest import mock

    from codesight_tui.core.ingest import tokens

    words = tokens.WordPieces.for_file(TK, TOKENIZER_FILE)
    assert words is not None
    with mock.patch.object(tokens, "IDS_SMALL", 0):  # short texts too take the word path here
        for batch in (texts, [t for t in texts if words.handles(t)]):  # mixed, and all on the fast path
            for _ in range(2):  # cold, then from the cache
                assert _split_ids(*words.ids(batch, limit)) == _tokenizer_ids(batch, limit)
    assert _split_ids(*words.ids(texts, limit)) == _tokenizer_ids(texts, limit)  # and as a query goes


def test_word_ids_stay_exact_when_their_cache_overflows_and_in_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    from codesight_tui.core.ingest import tokens

    monkeypatch.setattr(tokens, "IDS_CACHE_MAX", 12)
    monkeypatch.setattr(tokens, "IDS_SLICE", 3)  # a batch read a few texts at a time
    monkeypatch.setattr(tokens, "IDS_SMALL", 0)  # and never handed to the tokenizer for its size
    words = tokens.WordPieces.for_file(TK, TOKENIZER_FILE)
    assert words is not None
    vocab = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "eta",
        "theta",
        "iota",
        "kappa",
        "lambda",
        "mu",
        "nu",
        "xi",
        "omicron",
        "pi",
        "rho",
    ]
    for k in range(5):  # each batch shares words with the last and brings new ones
        texts = [" ".join(vocab[k * 3 : k * 3 + 9]) + "(x_y)", "", "naïve " + vocab[k], "[UNK] " + vocab[-k]]
        assert _split_ids(*words.ids(texts, 512)) == _tokenizer_ids(texts, 512)
    assert len(words._word_no) <= 12 + 1 + 20  # started afresh rather than growing


def test_doc_view_keeps_signature_comments_and_docstrings_only() -> None:
    py = (
        '@property\ndef detect_indentation(self) -> int:\n    """Auto-detect indentation of code.\n\n'
        '    Returns:\n        int: Number of spaces.\n    """\n    # the gcd of all indents\n'
        '    found = {len(m) for m in re.findall(r"^ *", self.plain)}\n    return reduce(gcd, found) or 1\n'
    )
    assert doc_view(py) == (
        'def detect_indentation(self) -> int:\n"""Auto-detect indentation of code.\n'
        'Returns:\nint: Number of spaces.\n"""\n# the gcd of all indents'
    )
    js = "/**\n * Retry an upload.\n */\nasync function retry(file) {\n  // back off first\n  await sleep(1);\n}"
    assert doc_view(js) == "/**\n* Retry an upload.\n*/\nasync function retry(file) {\n// back off first"
    assert doc_view("def add(a, b):\n    return a + b\n") is None  # nothing but code: no second vector
    assert doc_view("x = '''one-line'''\n") is None  # a triple-quoted string after code is not a docstring
    assert (doc_text("src/a.py", "def f", py, "python") or "").startswith("file: src/a.py\nscope: def f\ndef detect")
    assert doc_text("README.md", "", "# Title\ntext", "markdown") is None  # prose is its own doc view
    assert doc_text("a.py", "", "# only a comment", "python") is None  # the view would equal the text


def test_attributes_stay_with_their_definition(chunker: Chunker) -> None:
    # Elixir's @doc above a def, Haskell's type signature above a function, Rust's #[derive]
    # above a struct belong to the definition's chunk, as comments do.
    big = "\n".join(f"    x{i} = {i}" for i in range(60))
    src = f'defmodule A do\n  @doc """\n  Parse the thing.\n  """\n  def parse(s) do\n{big}\n  end\nend\n'
    (c,) = [c for c in chunker.chunk("a.ex", "elixir", src) if "def parse" in c.scope][:1]
    assert c.content.lstrip().startswith("@doc")
    src = "module A where\n\n" + "\n\n".join(f"f{i} :: Int -> Int\nf{i} x = x + {i}" for i in range(3))
    scopes = [c for c in chunker.chunk("A.hs", "haskell", src) if "function f1" in c.scope]
    assert scopes and "f1 :: Int -> Int" in scopes[0].content


def test_lua_functions_bound_by_assignment_are_definitions(chunker: Chunker) -> None:
    # mini.nvim defines every function as `MiniJump.jump = function(...)`, lazy.nvim its tasks as
    # functions in a table: the grammar's function_declaration alone left them all unscoped.
    body = "\n".join(f"  local step{i} = target + {i}" for i in range(50))
    src = (
        f"local MiniJump = {{}}\n\nMiniJump.jump = function(target)\n{body}\n  return target\nend\n\n"
        f"local H = {{}}\nlocal helper = function(x)\n{body}\n  return x\nend\n\n"
        f"M.build = {{\n  skip = function(plugin)\n    return plugin.build == nil\n  end,\n"
        f"  run = function(self)\n{body}\n  end,\n}}\n\nlocal M = {{}}\nreturn MiniJump\n"
    )
    scopes = {c.scope for c in chunker.chunk("jump.lua", "lua", src)}
    assert "function MiniJump.jump" in scopes and "function helper" in scopes
    assert "table M.build > function run" in scopes
    assert not any(s.split()[-1] == "H" or s.endswith(" M") for s in scopes if s)  # plain tables stay unnamed


def test_rust_items_inside_a_macro_call_are_definitions(chunker: Chunker) -> None:
    # tokio wraps whole modules in cfg_rt! { ... }: the grammar sees one token tree there, and
    # tokio::spawn was no definition at all. Lines stay the file's; a macro in an expression is not read.
    body = "\n".join(f"        let step{i} = future_{i}();" for i in range(40))
    src = (
        "use crate::task;\n\ncfg_rt! {\n    /// Spawns a new asynchronous task.\n    #[track_caller]\n"
        f"    pub fn spawn<F>(future: F) -> JoinHandle<F> {{\n{body}\n        task::spawn_inner(future)\n    }}\n\n"
        "    cfg_unstable! {\n        impl Builder {\n            pub fn name(&self) -> &str { self.name }\n        }\n    }\n}\n\n"
        "fn main() {\n    tokio::select! {\n        _ = a() => {}\n        _ = b() => {}\n    }\n}\n"
    )
    chunks = chunker.chunk("spawn.rs", "rust", src)
    spawn = [c for c in chunks if c.scope == "fn spawn"]
    assert spawn and spawn[0].start_line == 4 and spawn[0].content.startswith("    /// Spawns")
    scopes = " | ".join(c.scope for c in chunks)
    assert "impl Builder" in scopes and "fn main" in scopes and "select" not in scopes
    lines = src.split("\n")
    for c in chunks:
        assert c.content == "\n".join(lines[c.start_line - 1 : c.end_line])


def test_definitions_by_typedef_macro_assignment_and_class_field(chunker: Chunker) -> None:
    # C's typedef struct { ... } uv_buf_t; was a nameless "struct", and a function-like macro no
    # definition; JS methods bound by assignment and TS arrow-function fields were unscoped.
    body = "\n".join(f"  int field{i};" for i in range(40))
    c_src = (
        f"typedef struct {{\n{body}\n}} uv_buf_t;\n\n#define UV_CHECK(expr) \\\n  do {{ \\\n"
        "    if (!(expr)) abort(); \\\n  } while (0)\n"
    )
    scopes = " | ".join(c.scope for c in chunker.chunk("uv.h", "c", c_src))
    assert "struct uv_buf_t" in scopes and "macro UV_CHECK" in scopes
    stmts = "\n".join(f"  config.step{i} = merge(config.step{i}, defaults.step{i});" for i in range(40))
    js = (
        f"Axios.prototype.request = function request(config) {{\n{stmts}\n}};\n\n"
        f"module.exports = function dispatchRequest(config) {{\n{stmts}\n}};\n"
    )
    found = {c.scope for c in chunker.chunk("lib/Axios.js", "javascript", js)}
    assert {"function Axios.prototype.request", "function dispatchRequest"} <= found
    ts = f"export class Runner {{\n  private run = async (task: Task) => {{\n{stmts}\n  }}\n}}\n"
    assert "class Runner > method run" in {c.scope for c in chunker.chunk("runner.ts", "typescript", ts)}


def test_a_parse_that_runs_past_its_bound_gives_up_and_the_file_is_chunked_by_lines() -> None:
    """Issue 66: tree-sitter's Lua grammar recovers from 205 KB of ``int f( { #define X(`` in 7.4 s,
    twice (the chunker's parse, then the symbols'). A parse stops at its bound
    (``PARSE_SECONDS`` + ``PARSE_PER_BYTE``); the file is chunked by lines, every line kept."""
    import time

    from codesight_tui.core.ingest import chunker as chunker_mod
    from codesight_tui.core.ingest.chunker import GAVE_UP, Chunker, parse_bounded, parser_for
    from codesight_tui.core.ingest.tokens import TokenCounter

    text = "int f( { #define X( \n" * 9_300 + "local needle_word = 1\n"
    t0 = time.monotonic()
    tree = Chunker.parse("lua", text)
    took = time.monotonic() - t0
    assert tree is GAVE_UP and took < 10
    chunks = Chunker(TokenCounter(None), 256).chunk("big.lua", "lua", text, tree=tree)
    assert "needle_word" in chunks[-1].content and chunks[0].start_line == 1
    assert sum(c.end_line - c.start_line + 1 for c in chunks) >= 9_300
    small = parse_bounded(parser_for("lua"), b"local x = 1\n")
    assert small is not None and not small.root_node.has_error
    assert parse_bounded(parser_for("lua"), text.encode(), 0.0) is None
    assert chunker_mod.PARSE_SECONDS < 2


def test_a_bounded_parse_tree_reads_its_text_long_after() -> None:
    """The tree of a parse through a callback reads ``Node.text`` through it: past the parse's time
    bound it must still get the bytes (it looped forever on an empty read)."""
    import time

    from codesight_tui.core.ingest.chunker import parse_bounded, parser_for

    tree = parse_bounded(parser_for("python"), b"def f():\n    return 1\n", 0.05)
    time.sleep(0.1)
    assert tree.root_node.children[0].text == b"def f():\n    return 1"
