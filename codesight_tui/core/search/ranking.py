"""The ranking stack that runs on top of retrieval, in hybrid and in bm25 mode.

Plain RRF treats every query and every file alike. Each step here was kept only because it raised
NDCG@10 on the 49-repository polyglot set without lowering it on the devset (`codesight eval`,
benchmarks/README.md), and none of them knows anything about a particular repository:

1. Query routing: a query that is just an identifier leans on BM25, a question leans on vectors
   (weighted RRF). Part-way through embedding, the vector list counts by sqrt(coverage); the
   static tier's list by sqrt(its coverage x the share the full model has not embedded yet).
2. Symbol definitions: an identifier in the query (``RetryPolicy``, ``retry_policy``,
   ``Client.send``, ``Rack::Builder``) that the repository defines puts the defining chunk first,
   fetched from the scope index even when neither retriever found it; among several, the one in
   the file named after the symbol (``Request.php``) first.
3. Path signal: query words that name a file or directory (``lexer``, ``oauth2``) lift its chunks,
   and a short query that names a whole file (``bean deserialization`` -> ``BeanDeserializer.java``,
   ``event dispatching`` -> ``Events/Dispatcher.php``, ``parses`` -> ``Parser.scala``) lifts that
   file's more. Words meet by their Snowball stem (``routing`` and ``route``, ``validation`` and
   ``Validator``); a path component also where one stem of four letters or more begins the other
   (``timer`` and ``time/``, ``loads`` and ``loader.lua``).
4. Penalties: tests (Rust's ``mod tests`` and Zig's ``test`` blocks too), docs, examples,
   vendored or generated files, data (translation catalogs, tables), configuration (JSON, YAML,
   TOML, XML, text of no known format) and type declarations or stubs that restate an
   implementation (``.d.ts``, ``.pyi``, a C header's prototypes and structs) rank lower, unless
   the query asks for them; a declaration of a symbol the query names keeps its place.
5. File saturation: for a short query, each later chunk of a file already listed counts half as
   much as the one before, so the next file about the topic comes up (polyglot +0.04). Long
   queries describe one piece of code and are left alone: there a uniform decay cost the devset
   0.03 to 0.08, and a file-name bonus for them cost it 0.02.
6. Grouping (in ``searcher``): a chunk that continues a better-ranked hit of the same definition
   is folded into it, so one long function is one result, not five. For a short question that
   names a file or a folder (the files steps 3 and 3c lift; not one that names a symbol), the
   file's first chunk in the ranking becomes one hit for the whole file (``SearchResult.grain``;
   a module's root opens at its top), and its later chunks fold into it (``parts``). Fast mode,
   fold A 0.887 -> 0.889 (architecture 0.863 -> 0.868), fold B 0.887 -> 0.888 (0.824 -> 0.827),
   devset 0.718 unchanged, where a target counts in the chunks a hit holds; by each hit's own
   lines, fold A's architecture is 0.855 (one span target, held by a file's hit).
7. Feedback: the vector ranking is redone once over every candidate, by cosine to the query vector
   plus the first ranking's top hit (Rocchio pseudo-relevance feedback), and fused again. The top
   hit is right most of the time, and the other answers tend to resemble it: a lexical hit that
   looks like it gains a vector rank it lacked. Only the top hit is used; the top two or three
   measured worse, since a wrong second hit drags the query off.

8. The first page's own graph (fast mode, a question asked as one): of its first ten files, one
   that the others use (a name it alone of them defines) is where the topic is built, and rises by
   the share of them that use it. The names are the index's symbols (``Store.file_links``). A type
   split over files (Swift's ``Application+Servers.swift``, C#'s partial ``SqlMapper.Async.cs``) is
   the one named after it.

Measured and dropped: file-level score aggregation (-0.005 to -0.08), saturation that spares
chunks both retrievers found or that score near their file's best (polyglot +0.001 to +0.007, devset
-0.01), heavier path or scope columns in BM25, other penalty strengths, and merging small scopes
into bigger chunks (bm25 polyglot -0.001).
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol

import numpy as np
import Stemmer

from codesight_tui.core.ingest.paths import CONFIG, DATA, DECLARATIONS, DOCS, DOCUMENT, SOURCE, TEST, VENDOR, classify
from codesight_tui.core.languages import CODE_LANGUAGES, DOCUMENT_LANGUAGES
from codesight_tui.core.search.contract import FILE_GRAIN, MODULE_GRAIN
from codesight_tui.core.text import STOPWORDS, split_identifier

if TYPE_CHECKING:
    from codesight_tui.core.store.store import ChunkRow
    from codesight_tui.core.store.symbols import FileLinks

VectorsFn = Callable[[list["ChunkRow"]], dict[int, np.ndarray]]
LinksFn = Callable[[list[str]], dict[str, "FileLinks"]]  # the names files define and use, by path


class Chunks(Protocol):
    """What the ranking stack reads of an index: a local ``Store``, or a fleet store
    (``core.fleet.store.FleetStore``)."""

    def get_chunks(self, ids: list[int]) -> dict[int, ChunkRow]: ...

    def scope_matches(self, name: str, limit: int = 400) -> list[tuple[int, str, int, str]]: ...


class Retriever(Chunks, Protocol):
    """What a search pipeline retrieves from: BM25, nearest neighbours, chunks and their stored
    vectors by id, and scope matches. A local index (``core.search.searcher.LocalRetriever``: SQLite and
    LanceDB) and a fleet store (``core.fleet.store.FleetStore``: LanceDB on object storage) both
    are one; what they find goes through the same ``core.search.searcher.fuse_and_rank``."""

    def bm25(self, query: str, depth: int, *, language: str | None = None, glob: str | None = None) -> list[int]: ...

    def nearest(self, vector: np.ndarray, depth: int, *, language: str | None = None) -> list[tuple[int, float]]: ...

    def vectors(self, ids: list[int]) -> dict[int, np.ndarray]: ...


# Weighted RRF per query kind: (bm25, vector).
WEIGHTS = {"symbol": (1.0, 0.5), "mixed": (1.0, 1.0), "natural": (0.7, 1.0)}
DEFINITION_BONUS = 1.0  # in units of the best fused score: a definition goes to the top
# Office documents (PDF, DOCX, PPTX) rank as source does: they never restate code the way a README
# quotes it, and a penalty buries the passage a question is about under code that shares a word
# ("token", "spend"). Document queries (benchmarks/documents), NDCG@10 at a factor of 0.8 / 1.0:
# bm25 0.368 / 0.685, bm25 + static 0.561 / 0.794, hybrid 0.530 / 0.865; the devset with the same
# documents copied into its repositories: bm25 0.675 / 0.675, hybrid 0.773 / 0.769
# (benchmarks/results-documents.txt).
# Configuration and data formats (JSON, YAML, TOML, INI, XML, text of no known format) rank below
# code: redis's commands/*.json describe each command in the words a question uses, and took the
# places of the C that implements it. Fast mode, NDCG@10: fold A 0.8823 -> 0.8824, fold B 0.8744 ->
# 0.8770, devset 0.6948 -> 0.6952 (0.3 measured the same as 0.5).
# C headers count as declarations (``paths.classify``, ``_kind``): fast mode, fold B 0.8770 ->
# 0.8785 (curl, redis), fold A 0.8824 -> 0.8824 (libuv: one query up, one down), devset unchanged;
# bm25 fold A 0.8643 -> 0.8644, fold B 0.8741 -> 0.8758.
CLASS_FACTOR = {
    SOURCE: 1.0,
    TEST: 0.4,
    DOCS: 0.4,
    VENDOR: 0.3,
    DECLARATIONS: 0.6,
    DATA: 0.2,
    DOCUMENT: 1.0,
    CONFIG: 0.5,
}
# Tests inside source files count as tests (step 4): a chunk whose outermost scope is Rust's ``mod
# tests`` or Zig's ``test "..."`` blocks. Fast mode, NDCG@10: fold A 0.887 unchanged, fold B 0.886 ->
# 0.887 (zig 0.928 -> 0.935, tokio 0.900 -> 0.902), devset 0.718 unchanged. A scope label, by language:
# the label's first word, alone or before a name.
INLINE_TESTS = {"rust": "mod tests", "zig": "test"}
ASKS_FOR = {
    TEST: {"test", "tests", "testing", "spec", "specs", "fixture", "fixtures", "mock", "pytest"},
    DOCS: {"doc", "docs", "documentation", "example", "examples", "readme", "tutorial", "guide"},
    VENDOR: {"vendor", "vendored", "generated", "minified", "third", "party"},
    DECLARATIONS: {"typings", "stub", "stubs", "pyi", "header", "headers", "prototype", "prototypes"},
    CONFIG: {
        "json",
        "yaml",
        "yml",
        "toml",
        "ini",
        "xml",
        "config",
        "configuration",
        "configure",
        "settings",
        "manifest",
        "schema",
        "workflow",
        "workflows",
        "ci",
        "build",
        "template",
        "templates",
        "html",
    },
    DATA: {
        "translation",
        "translations",
        "translated",
        "locale",
        "locales",
        "i18n",
        "l10n",
        "catalog",
        "catalogs",
        "gettext",
        "csv",
        "tsv",
    },
}
PATH_BONUS = 0.25  # per query word naming a path component (at most two count)
# A query word names a path component when their stems meet, or when one stem of PREFIX_MIN letters
# or more begins the other: "timer" names runtime/time/, "loads" names loader.lua, "config" names
# configuration/. Fast mode, architecture / overall: fold A 0.887 / 0.893 -> 0.889 / 0.893, fold B
# 0.851 / 0.893 -> 0.857 / 0.896, devset same (3, 5, 6 letters and whole file names: benchmarks/README).
PREFIX_MIN = 4
FEEDBACK_WEIGHT = 1.0  # of the top hit's vector, added to the query vector (step 6)

FILE_STEM_BONUS = 1.0  # a symbol query's chunks in the file named after it (Request -> Request.php)
# A short query of words (not just a symbol) that contains every word of a file's name: that file's
# chunks score this much more (step 3). Polyglot bm25 0.824 -> 0.851 (0.35: 0.847, 0.75: 0.850);
# agent nouns (Parser for "parses") 0.854 -> 0.857.
FILE_NAME_BONUS = 0.5
# Only code and documents: a JSON or text file named like the query (redis's commands/setrange.json)
# is data about the code asked for (polyglot hybrid on 47 repositories 0.882 -> 0.883).
NAMED_LANGUAGES = CODE_LANGUAGES | DOCUMENT_LANGUAGES
# Step 3c: a short question that names a folder ("how does routing work") asks for the module, and
# its root (routing/mod.rs, routing/__init__.py, routing/index.ts, routing/routing.go) is where the
# module is defined; each child matched one word better and won. Its chunks score this much more.
# Fast mode, NDCG@10, architecture / overall: fold A 0.860 / 0.887 -> 0.863 / 0.887, fold B
# 0.820 / 0.885 -> 0.824 / 0.886, devset 0.635 / 0.718 unchanged; bm25 fold A 0.804 / 0.864 ->
# 0.808 / 0.865, fold B 0.826 / 0.876 -> 0.830 / 0.876, devset unchanged. 0.25 measured less on
# both folds; 1.0 and 2.0 more on A's architecture and less on B overall (bm25 B 0.874).
MODULE_ROOT_BONUS = 0.5
MODULE_ROOTS = frozenset({"__init__", "mod", "index", "main", "lib", "package", "init"})
# File saturation (step 5): the n-th chunk of a file scores FILE_SATURATION ** (n - 1) of itself, for
# queries of at most TOPIC_MAX_WORDS content words. A short query names a topic ("session
# management"), and the next file about it is worth more than a second chunk of the first, and a
# file named after it is likely the answer. A long query describes one piece of code, which may well
# sit below another chunk of the same file, in a file whose name shares one of its many words.
FILE_SATURATION = 0.5
# Words count as typed (``QueryInfo.typed``): ``flatMap`` is one, not three. Fast mode, architecture /
# overall: fold A 0.889 / 0.893 -> 0.894 / 0.895, fold B 0.857 / 0.896 -> 0.857 / 0.898, devset same.
TOPIC_MAX_WORDS = 7
COVERAGE_EXPONENT = 0.5  # the vector list's weight scales with coverage ** this (see rerank)
# The static tier's list (core.index.static), relative to the full model's weight for the query kind:
# 0.7 measured better than 0.35, 0.5, 1.0, 1.5 and 2.0 on the polyglot set (bm25 + static) without
# losing on the devset; feedback from the top hit helps it as it helps the full model's list.
STATIC_WEIGHT = 0.7
# Step 3b, file-level evidence: a file's best chunk gains this much of the fused scores of its next
# FILE_EVIDENCE_CHUNKS chunks, so a file that matches in several places outranks one chunk that
# matches once. NDCG@10 where BM25 is the only list: polyglot fold A 0.8538 -> 0.8623 (the fold it
# was tuned on; 0.1-0.3 and 1-4 chunks tried), fold B 0.8612 -> 0.8674, devset 0.662 -> 0.679.
# With the static tier's list too, the deep end of two lists holds many chunks of a big file, which
# then outranked the small file that holds the answer (devset 0.692 -> 0.685); and the static list
# ranks every chunk, however unlike the question (in a small repository, all of them). There only
# chunks BM25 put in its first FILE_EVIDENCE_TOP count: fast mode, fold A 0.8710 -> 0.8777 (tuned:
# other gates and 5-30 tried), fold B 0.8592 -> 0.8670, devset 0.692 -> 0.693. With the full model's
# list it loses on the devset however gated (0.784 -> 0.743-0.751), so hybrid mode does not use it.
FILE_EVIDENCE = 0.2
FILE_EVIDENCE_CHUNKS = 2
FILE_EVIDENCE_TOP = 10

# Step 8, the first page's own graph: a question ("how does ... work", "where is ... handled") asks
# where its topic is built, and of the files on its first page that is the one the others use. Each
# of the first CENTRAL_FILES files scores 1 + CENTRAL_BONUS x the share of the others that use a name
# it alone of them defines, of CENTRAL_MIN_NAME letters or more (``get`` and ``new`` tie everything
# to everything). The names are the index's symbols (``Store.file_links``); a fleet store has none.
# Fast mode, NDCG@10, architecture / overall: fold A 0.868 / 0.889 -> 0.882 / 0.893, fold B 0.827 /
# 0.888 -> 0.844 / 0.892, devset 0.635 / 0.718 -> 0.644 / 0.720. The bonus was chosen on fold A (0.2
# to 1.0 measured), and ten files: twenty tie there and lose on fold B (benchmarks/README). Only
# where BM25 and the static list are fused: over BM25 alone fold B lost 0.004, and with the full
# model's list the devset lost 0.016 (hybrid 0.788 -> 0.772; its package-wide hubs, environment.py and
# nodes.py, rose over the answer). Only a question asked as one: a description ("split a sequence
# into rows of N items") asks for one function, and there the devset lost 0.011 (semantic 0.625 ->
# 0.595). A type that several page files define (Swift's extensions, C#'s partial classes) is owned
# by the file named after it when the others are named as its parts (``Application+Servers.swift``,
# ``SqlMapper.Async.cs``): fold A 0.882 / 0.893 -> 0.887 / 0.893, fold B 0.844 / 0.892 -> 0.851 /
# 0.893, devset unchanged (credited to any file named after it, commander's ``Option`` in option.js
# beside index.d.ts: devset 0.644 -> 0.642).
CENTRAL_FILES = 10
CENTRAL_BONUS = 0.4
CENTRAL_MIN_NAME = 4
QUESTION_WORDS = frozenset({"how", "where", "what", "which", "why", "who"})

_TOKEN = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*|\w+")
_CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2,}[a-z]")


def is_code_like(token: str) -> bool:
    """``snake_case``, ``camelCase``, ``PascalCase``, ``dotted.name``, ``CONSTANT_NAME``."""
    core = token.strip("_$")
    return bool(core) and ("_" in core or "." in core or "$" in token or bool(_CAMEL.search(core)))


@dataclass
class QueryInfo:
    text: str
    kind: str  # symbol | mixed | natural
    identifiers: list[str] = field(default_factory=list)
    words: set[str] = field(default_factory=set)  # lower-case content words (and identifier parts)
    typed: int = 0  # content words as typed: an identifier is one (``flatMap``), not its parts too


def analyze(query: str) -> QueryInfo:
    # Ruby, Rust, C++ and PHP qualify names with :: or \ (Rack::Builder, Foo\Bar): read them as dots.
    tokens = _TOKEN.findall(re.sub(r"::|\\", ".", query))
    idents = [t for t in tokens if is_code_like(t)]
    if len(tokens) == 1:
        idents = tokens  # a lone word may be a name: ``Cycler``, ``slugify``
    words: set[str] = set()
    typed: set[str] = set()
    for t in tokens:
        for part in t.split("."):
            low = part.lower()
            if low not in STOPWORDS and len(low) > 1:
                typed.add(low)
            if len(part) <= 256:  # no name is longer; splitting a huge token costs seconds
                words.update(p for p in split_identifier(part) if p not in STOPWORDS and len(p) > 2)
    if tokens and len(idents) == len(tokens) and len(tokens) <= 2:
        kind = "symbol"
    elif idents:
        kind = "mixed"
    else:
        kind = "natural"
    return QueryInfo(query, kind, list(dict.fromkeys(idents)), words | typed, len(typed))


def _names(segment: str) -> list[str]:
    """Names a scope segment defines: ``def a, def b`` -> [a, b]; ``class Foo`` -> [Foo]."""
    out = []
    for label in segment.split(", "):
        parts = label.split()
        if parts:
            name = parts[-1].split("(")[0]
            out.append(name)
            # A qualified name (Elixir's Phoenix.Router, Lua's M.setup, Rust's fmt::Display) also
            # defines its last part.
            last = re.split(r"[.:]+", name)[-1]
            if last and last != name:
                out.append(last)
    return out


def definitions(store: Chunks, ident: str, limit: int = 8) -> list[int]:
    """Chunk ids where ``ident`` is defined: for each (file, enclosing scope) the first chunk of
    the definition. ``a.b`` needs ``b`` defined inside a scope named ``a``, or in a file or
    directory named ``a``. Exact case first, then case-insensitive; the one in the file named after
    ``ident`` first, then by line."""
    parts = [p for p in ident.split(".") if p]
    if not parts:
        return []
    name, quals = parts[-1], parts[:-1]
    rows = store.scope_matches(name)
    for fold in (False, True):
        norm: Callable[[str], str] = str.casefold if fold else str
        target = norm(name)
        windows: dict[tuple[str, str], list[tuple[int, int]]] = {}
        for cid, path, start, scope in rows:
            segs = scope.split(" > ") if scope else []
            for i, seg in enumerate(segs):
                if target not in (norm(n) for n in _names(seg)):
                    continue
                outer = [norm(n) for s in segs[:i] for n in _names(s)]
                # A qualifier is an enclosing scope, or the module the file is: std.testing.expect is
                # `expect` in std/testing.zig, utils.slugify is `slugify` in utils.py.
                if all(norm(q) in outer or norm(q) in (norm(c) for c in _modules(path)) for q in quals):
                    windows.setdefault((path, " > ".join(segs[:i])), []).append((start, cid))
                break
        if windows:
            # The definition in the file named after it first (Request.swift before Request+Body.swift),
            # before the cut to a few.
            named = _squash(name)
            found = sorted((_file_stem(path) != named, sorted(w)) for (path, _), w in windows.items())
            return _declaring_windows(store, [w for _, w in found[:limit]], name)
    return []


# A line that only comments on or decorates a definition, not the line that declares it.
COMMENT_OR_DECORATOR = ("#", "//", "/*", "*", "--", ";", "@", "%", '"""', "'''")
DECLARATION_WINDOWS = 8  # windows of one definition searched for its declaring line


def declaring_line(lines: list[str], names: list[re.Pattern[str]]) -> int | None:
    """The index of the first line that names one of ``names`` in code: not in a comment, a block
    comment (a Javadoc's code sample included) or a decorator above the definition."""
    in_block = False
    for k, line in enumerate(lines):
        text = line.lstrip()
        if in_block:
            if "*/" not in text:
                continue
            in_block, text = False, text.split("*/", 1)[1].lstrip()
        if text.startswith("/*") and "*/" not in text[2:]:
            in_block = True
            continue
        if text and not text.startswith(COMMENT_OR_DECORATOR) and any(n.search(text) for n in names):
            return k
    return None


def _declaring_windows(store: Chunks, defs: list[list[tuple[int, int]]], name: str) -> list[int]:
    """For each definition (its windows by line), the window that holds its declaring line: a long
    doc comment above a class (Javadoc, Rust's ///) fills the first windows, and a symbol query asks
    for the declaration. The first window where none of the first few holds it."""
    first = [w[0][1] for w in defs]
    later = [cid for w in defs if len(w) > 1 for _, cid in w[:DECLARATION_WINDOWS]]
    if not later:
        return first
    rows = store.get_chunks(later)
    pattern = [re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])", re.IGNORECASE)]
    out = []
    for w, cid in zip(defs, first, strict=True):
        spans = [rows[c] for _, c in w[:DECLARATION_WINDOWS] if c in rows]
        if len(spans) > 1:
            text: dict[int, str] = {}
            for row in spans:
                for k, line in enumerate(row.content.split("\n")):
                    text.setdefault(row.start_line + k, line)
            start = min(text)
            found = declaring_line([text.get(n, "") for n in range(start, max(text) + 1)], pattern)
            if found is not None:
                cid = next(r.id for r in spans if r.start_line <= start + found <= r.end_line)
        out.append(cid)
    return out


@lru_cache(maxsize=65_536)
def _modules(path: str) -> tuple[str, ...]:
    """The directories and the file name without extension: ``lib/std/testing.zig`` -> (lib, std, testing)."""
    *dirs, name = path.split("/")
    return (*dirs, name.split(".", 1)[0])


_STEMMER = Stemmer.Stemmer("english")
_STEMMER_LOCK = threading.Lock()  # a stemmer object is not safe to share between threads


@lru_cache(maxsize=65_536)
def _stem(w: str) -> str:
    """The Snowball (Porter 2) stem: ``routing`` -> rout, ``validation`` / ``validator`` -> valid."""
    with _STEMMER_LOCK:
        return str(_STEMMER.stemWord(w))


def _squash(name: str) -> str:
    return re.sub(r"[-_.\s]+", "", name).casefold()


def _file_name(path: str) -> str:
    """A file's name without its extension: ``Src/JsonTextReader.Async.cs`` -> JsonTextReader.Async.
    That partial class is not the file named ``JsonTextReader``."""
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0]


@lru_cache(maxsize=65_536)
def _file_stem(path: str) -> str:
    """A file's name without its extension or separators, folded: ``src/Http/Request.php`` -> request."""
    return _squash(_file_name(path))


@lru_cache(maxsize=65_536)
def _path_words(path: str) -> frozenset[str]:
    """The stemmed words of a path's directories and file name (``src/oauth2/TokenStore.py`` ->
    src, oauth2, token, store, tokenstore, ...); cached, as the same paths recur in every query."""
    out: set[str] = set()
    for comp in re.split(r"[/\\]", path):
        stem = comp.rsplit(".", 1)[0] if "." in comp[1:] else comp
        for piece in re.split(r"[-_.\s]+", stem):
            if piece:
                out.add(piece.lower())
                out.update(split_identifier(piece))
    return frozenset(_stem(w) for w in out)


@lru_cache(maxsize=65_536)
def _name_words(path: str) -> tuple[frozenset[str], ...]:
    """The words of a file's name, each as the stems a query may say it with:
    ``ser/BeanSerializer.java`` -> ({bean}, {serial}). A name that is an agent noun also stands for
    its verb: ``Parser`` for "parses", ``ObjectReader`` for "reading", ``Formatter`` for "format"."""
    out = []
    for w in split_identifier(_file_name(path)):
        if w in STOPWORDS:
            continue
        alts = {_stem(w)}
        if len(w) > 4 and w.endswith(("er", "or")):
            verb = w[:-2]
            alts.update((_stem(verb), _stem(verb + "e")))
            if verb[-1] == verb[-2]:  # formatter -> format, logger -> log
                alts.add(_stem(verb[:-1]))
        out.append(frozenset(alts))
    return tuple(out)


def _names_file(path: str, qwords: set[str]) -> bool:
    """Does the query say every word of the file's name (step 3)?"""
    named = _name_words(path)
    return bool(named) and all(alts & qwords for alts in named)


def _roots_module(path: str, qwords: set[str]) -> bool:
    """Is the file its folder's module root (``mod.rs``, ``__init__.py``, ``index.ts``, a Go or
    Python file named after its folder), and does the query name the folder, each of its words
    (step 3c)?"""
    folder, _, name = path.rpartition("/")
    folder = folder.rpartition("/")[2]
    stem = name.partition(".")[0]
    if not folder or not (stem in MODULE_ROOTS or stem == folder):
        return False
    # A folder of several words (mcp_server, web-socket, HttpClient) is named by all of them.
    words = [w for w in split_identifier(folder) if w not in STOPWORDS]
    return _stem(folder.lower()) in qwords or (len(words) > 1 and all(_stem(w) in qwords for w in words))


def _names_places(q: QueryInfo) -> bool:
    """Is the query a short question, whose words may name a file or a folder (steps 3 and 3c)? A
    symbol has its own file bonus."""
    return q.typed <= TOPIC_MAX_WORDS and q.kind != "symbol"


def _grain(path: str, language: str | None, qwords: set[str]) -> str | None:
    """``file`` where the query's words name the whole file (step 3), ``module`` where they name
    the folder the file is the root of (step 3c), else None."""
    if language in NAMED_LANGUAGES and _names_file(path, qwords):
        return FILE_GRAIN
    return MODULE_GRAIN if _roots_module(path, qwords) else None


def file_grain(query: str) -> Callable[[str, str | None], str | None] | None:
    """For a short question that names a file or a folder, which hits stand for their whole file:
    ``grain(path, language)`` is ``module``, ``file`` or None (the files steps 3 and 3c lift). None
    where the query names no place, or names a symbol: its answer is the definition."""
    q = analyze(query)
    if not _names_places(q) or q.identifiers:
        return None
    qwords = {_stem(w) for w in q.words}
    return lambda path, language: _grain(path, language, qwords)


def rerank(
    store: Chunks,
    rankings: dict[str, list[int]],
    query: str,
    *,
    rrf_k: int = 60,
    glob: str | None = None,
    language: str | None = None,
    query_vector: np.ndarray | None = None,
    coverage: float = 1.0,
    vectors_for: VectorsFn | None = None,
    static_weight: float = 0.0,
    static_vector: np.ndarray | None = None,
    static_vectors_for: VectorsFn | None = None,
    links: LinksFn | None = None,
) -> list[tuple[int, float, dict[str, int], bool]]:
    """``(chunk id, score, {retriever: rank}, is_definition)``, best first.

    ``coverage`` is the share of chunks that have a vector (it weights the vector list).
    With ``query_vector`` and ``vectors_for`` (the stored vectors of ``ChunkRow``s, by id), the
    vector ranking is redone once by feedback from the first ranking's top hit (step 6).
    ``static_weight`` (the static tier's coverage times the share the full model has not
    embedded) weights the ``static`` list like ``coverage`` the vector list; ``static_vector``
    and ``static_vectors_for`` redo it by feedback the same way. ``links`` gives files' names for
    step 8 (without it, the step is skipped)."""
    from codesight_tui.core.fusion import rrf_scores

    q = analyze(query)
    wb, wv = WEIGHTS[q.kind]
    # Part-way through embedding, the vector list ranks only the chunks that have a vector: its
    # "best" hits are the best of a sample. It counts less the smaller the share it can see.
    weight = {
        "bm25": wb,
        "vector": wv * max(0.0, min(1.0, coverage)) ** COVERAGE_EXPONENT,
        "static": wv * STATIC_WEIGHT * max(0.0, min(1.0, static_weight)) ** COVERAGE_EXPONENT,
    }
    defs: set[int] = set()
    for ident in q.identifiers[:4]:
        defs.update(definitions(store, ident))
    candidates = {cid for ids in rankings.values() for cid in ids}
    rows = store.get_chunks(list(candidates | defs))
    topic = q.typed <= TOPIC_MAX_WORDS
    saturate = FILE_SATURATION < 1.0 and topic
    factor = _factors(q, rows, candidates, defs, glob, language)

    def score(rankings: dict[str, list[int]]) -> list[tuple[int, float, dict[str, int], bool]]:
        fused, ranks = rrf_scores(rankings, rrf_k, weight)
        if FILE_EVIDENCE and "bm25" in rankings and "vector" not in rankings:
            fused = _file_evidence(fused, rows, ranks if len(rankings) > 1 else None)
        best = max(fused.values(), default=1.0 / (rrf_k + 1))
        scored = [
            ((fused.get(cid, 0.0) + (DEFINITION_BONUS * best if cid in defs else 0.0)) * f, cid)
            for cid, f in factor.items()
        ]
        scored.sort(key=lambda t: (-t[0], t[1]))
        if saturate:
            scored = _saturate(scored, rows)
        return [(cid, s, ranks.get(cid, {}), cid in defs) for s, cid in scored]

    out = score(rankings)
    fast = "static" in rankings and "vector" not in rankings
    if out and links is not None and fast and asks_where(q) and _lift_central(out, rows, factor, links):
        out = score(rankings)
    if out and FEEDBACK_WEIGHT:
        lists = (("vector", query_vector, vectors_for), ("static", static_vector, static_vectors_for))
        redone = _redone(out, rows, rankings, lists)
        if redone:  # the ranks shown stay those the retrievers gave
            ranks = {cid: r for cid, _, r, _ in out}
            out = [(cid, s, ranks[cid], d) for cid, s, _, d in score({**rankings, **redone})]
    return out


def _factors(
    q: QueryInfo,
    rows: dict[int, ChunkRow],
    candidates: set[int],
    defs: set[int],
    glob: str | None,
    language: str | None,
) -> dict[int, float]:
    """Everything but fusion, per chunk: its class's penalty (unless the query asks for the class,
    or names a declaration), the file name and path bonuses. A definition neither retriever found
    passes the filters first."""
    from codesight_tui.core.store.store import path_matches

    qwords = {_stem(w) for w in q.words}
    asks = {cls for cls, words in ASKS_FOR.items() if words & q.words}
    stems = {_squash(i.split(".")[-1]) for i in q.identifiers} if q.kind == "symbol" else set()
    by_name = _names_places(q)
    meets = _WordMeets(qwords)
    factor: dict[int, float] = {}
    for cid, row in rows.items():
        if cid not in candidates and (
            (language and row.language != language) or (glob and not path_matches(row.path, glob))
        ):
            continue
        f = 1.0
        cls = _kind(row)
        # A declaration the query names (an interface, a typed signature) keeps its place.
        if cls not in asks and not (cls == DECLARATIONS and cid in defs):
            f *= CLASS_FACTOR[cls]
        hits = len(meets(_path_words(row.path)))
        grain = _grain(row.path, row.language, qwords) if by_name else None
        if stems and _file_stem(row.path) in stems:
            f *= 1 + FILE_STEM_BONUS
        elif grain == FILE_GRAIN:
            f *= 1 + FILE_NAME_BONUS
        elif grain == MODULE_GRAIN:
            f *= 1 + MODULE_ROOT_BONUS
        factor[cid] = f * (1 + PATH_BONUS * min(hits, 2))
    return factor


class _WordMeets:
    """The query's stems that a path's stems name (``_prefixed``), each path and stem met once a query."""

    def __init__(self, qwords: set[str]) -> None:
        self.heads: dict[str, list[str]] = {}  # by their first PREFIX_MIN letters: only these can meet
        for q in qwords:
            self.heads.setdefault(q[:PREFIX_MIN], []).append(q)
        self.seen: dict[str, frozenset[str]] = {}
        self.paths: dict[frozenset[str], frozenset[str]] = {}  # a file's chunks come in together

    def __call__(self, stems: frozenset[str]) -> frozenset[str]:
        if stems not in self.paths:
            self.paths[stems] = frozenset().union(*(self._word(w) for w in stems))
        return self.paths[stems]

    def _word(self, w: str) -> frozenset[str]:
        if w not in self.seen:
            self.seen[w] = frozenset(q for q in self.heads.get(w[:PREFIX_MIN], ()) if _prefixed(q, w))
        return self.seen[w]


def _prefixed(a: str, b: str) -> bool:
    """Are two stems one word: equal, or one of PREFIX_MIN letters or more the start of the other?"""
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return short == long or (len(short) >= PREFIX_MIN and long.startswith(short))


def asks_where(q: QueryInfo) -> bool:
    """A question of words alone, asked as one: its first word is how, where, what, which, why or who
    (``where's`` too)."""
    first = re.match(r"\s*([A-Za-z]+)", q.text)
    return q.kind == "natural" and first is not None and first[1].lower() in QUESTION_WORDS


def central(paths: list[str], links: dict[str, FileLinks]) -> dict[str, float]:
    """Step 8: of ``paths`` (a first page's files), each one's share of the others that use a name it
    alone of them defines; a file no other uses is left out."""
    known = [p for p in paths if p in links]
    if len(known) < 2:
        return {}
    owners = Counter(n for p in known for n in links[p].defines if len(n) >= CENTRAL_MIN_NAME)
    own = {p: {n for n in links[p].defines if owners.get(n) == 1} for p in known}
    for p, n in _split_types(known, links, owners):
        own[p].add(n)
    used_by: Counter[str] = Counter()
    for p in known:
        for g in known:
            if g != p and not own[g].isdisjoint(links[p].uses):
                used_by[g] += 1
    return {p: k / (len(known) - 1) for p, k in used_by.items()}


def _split_types(known: list[str], links: dict[str, FileLinks], owners: Counter[str]) -> list[tuple[str, str]]:
    """``(file, name)`` for each type on the page split over several of its files, the rest named
    after it as parts (Swift's ``Application+Servers.swift`` extending ``Application``, C#'s partial
    ``SqlMapper.Async.cs``): the file named after the type alone owns it."""
    out = []
    for p in known:
        stem = _file_stem(p)
        named = [n for n in links[p].defines if owners.get(n, 0) > 1 and _squash(n) == stem]
        for n in named:
            parts = [_file_stem(g) for g in known if g != p and n in links[g].defines]
            if all(part.startswith(stem) and part != stem for part in parts):
                out.append((p, n))
    return out


def _lift_central(
    out: list[tuple[int, float, dict[str, int], bool]],
    rows: dict[int, ChunkRow],
    factor: dict[int, float],
    links: LinksFn,
) -> bool:
    """Step 8 on a first ranking: each chunk of a first-page file that the others use scores more
    (``factor``, in place). False if no file is."""
    paths = list(dict.fromkeys(rows[cid].path for cid, *_ in out))[:CENTRAL_FILES]
    shares = central(paths, links(paths))
    for cid in factor:
        share = shares.get(rows[cid].path)
        if share:
            factor[cid] *= 1 + CENTRAL_BONUS * share
    return bool(shares)


def _redone(
    out: list[tuple[int, float, dict[str, int], bool]],
    rows: dict[int, ChunkRow],
    rankings: dict[str, list[int]],
    lists: tuple[tuple[str, np.ndarray | None, VectorsFn | None], ...],
) -> dict[str, list[int]]:
    """Step 6: each vector list ranked again by feedback from the first ranking's top hit."""
    pool = [cid for cid, *_ in out]
    redone = {}
    for name, qv, lookup in lists:
        if qv is not None and lookup is not None and rankings.get(name):
            again = feedback_ranking(qv, pool[0], pool, lookup([rows[cid] for cid in pool]), len(rankings[name]))
            if again:
                redone[name] = again
    return redone


def _inline_test(row: ChunkRow) -> bool:
    """Is the chunk a test written in a source file: Rust's ``mod tests`` (``#[cfg(test)]``), Zig's
    ``test "name"`` blocks, all of its outermost scope's labels?"""
    prefix = INLINE_TESTS.get(row.language or "")
    labels = (row.scope or "").split(" > ", 1)[0].split(", ")
    return prefix is not None and all(label == prefix or label.startswith(prefix + " ") for label in labels)


def _kind(row: ChunkRow) -> int:
    """A chunk's class: its file's (``paths.classify``), but a test written in a source file is a
    test, and a function defined in a C header (a ``static inline`` one) is source, not a
    declaration."""
    cls = classify(row.path, row.language)
    if cls == SOURCE and _inline_test(row):
        return TEST
    if cls == DECLARATIONS and row.language == "c" and row.path.endswith(".h"):
        innermost = (row.scope or "").rsplit(" > ", 1)[-1]
        if any(label.startswith("function ") for label in innermost.split(", ")):
            return SOURCE
    return cls


def _file_evidence(
    fused: dict[int, float], rows: dict[int, ChunkRow], ranks: dict[int, dict[str, int]] | None = None
) -> dict[int, float]:
    """Step 3b: each file's best chunk gains ``FILE_EVIDENCE`` times the fused scores of the file's
    next ``FILE_EVIDENCE_CHUNKS`` best chunks. Only the best: the file rises as one hit, and its
    other chunks do not crowd out other files' answers. Given the lists' ``ranks``, a chunk counts
    as evidence only where BM25 put it in its first ``FILE_EVIDENCE_TOP`` (the file's best chunk
    gains either way)."""
    per_file: dict[str, list[tuple[float, int]]] = {}
    for cid, sc in fused.items():
        row = rows.get(cid)
        if row is not None:
            per_file.setdefault(row.path, []).append((sc, cid))
    out = dict(fused)
    for chunks in per_file.values():
        if len(chunks) > 1:
            chunks.sort(key=lambda t: (-t[0], t[1]))
            best_score, best = chunks[0]
            evidence = [
                sc
                for sc, cid in chunks[1:]
                if ranks is None or ranks.get(cid, {}).get("bm25", FILE_EVIDENCE_TOP + 1) <= FILE_EVIDENCE_TOP
            ]
            out[best] = best_score + FILE_EVIDENCE * sum(evidence[:FILE_EVIDENCE_CHUNKS])
    return out


def _saturate(scored: list[tuple[float, int]], rows: dict[int, ChunkRow]) -> list[tuple[float, int]]:
    """Step 5: each later chunk of a file already listed scores less (``scored`` is best first).
    A window that continues a listed chunk of the same definition (same scope, touching lines)
    keeps that chunk's place: grouping folds the two into one hit."""
    count: dict[str, int] = {}
    listed: dict[tuple[str, str], list[tuple[int, int, int]]] = {}
    out = []
    for sc, cid in scored:
        row = rows[cid]
        spans = listed.setdefault((row.path, row.scope or ""), [])
        n = next((k for s, e, k in spans if row.start_line <= e + 1 and s <= row.end_line + 1), None)
        if n is None:
            n = count.get(row.path, 0)
            count[row.path] = n + 1
        spans.append((row.start_line, row.end_line, n))
        out.append((sc * FILE_SATURATION**n, cid))
    out.sort(key=lambda t: (-t[0], t[1]))
    return out


def feedback_ranking(
    query_vector: np.ndarray, top: int, pool: list[int], vecs: dict[int, np.ndarray], depth: int
) -> list[int]:
    """Pseudo-relevance feedback (Rocchio) from the top hit: the candidates in ``pool`` that have a
    vector in ``vecs``, ranked by cosine to the query vector moved toward the top hit's vector.
    Empty if the top hit has no vector (yet)."""
    if top not in vecs:
        return []
    q = np.asarray(query_vector, dtype=np.float32) + FEEDBACK_WEIGHT * vecs[top]
    q /= np.linalg.norm(q) or 1.0
    have = [cid for cid in pool if cid in vecs]
    sims = np.stack([vecs[cid] for cid in have]) @ q
    return [have[k] for k in np.argsort(-sims, kind="stable")[:depth]]
