"""The search contract every searcher keeps: a typed ``SearchRequest`` in, a ``SearchResponse``
out. A repository's index (``CodeSight``), a fleet store (``Fleet``) and several of them searched
as one (``core.repo.retrieval.Several``) implement ``Searcher``; each surface builds a request and
renders the response, hits and what the answer lacks (``SearchResponse.gaps``) alike.

What an answer lacks is decided here, once: tiers missing, the full model's coverage, the model's
state, an index run going on. The surfaces choose which of it to show, never how it is worked out.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.languages import DOCUMENT_LANGUAGES
from codesight_tui.core.modes import Mode, Vectors

if TYPE_CHECKING:
    from codesight_tui.core.search.related import RelatedSource


@dataclass(frozen=True, slots=True)
class Filters:
    """What narrows a search: ``glob``, a gitignore-style path filter; ``language``, a language by
    any name it goes by; ``repo``, a glob over a fleet store's repository names."""

    glob: str | None = None
    language: str | None = None
    repo: str | None = None


class Cancelled(CodeSightError):
    """The search was cancelled by its caller (a newer keystroke): nobody waits for its answer."""


class Cancel:
    """A token that stops a search at its next step: the TUI cancels the last search with the
    newest keystroke. Thread-safe; a cancelled token stays cancelled."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        """Raise ``Cancelled`` if the token was cancelled."""
        if self._event.is_set():
            raise Cancelled("search cancelled")


def check(cancel: Cancel | None) -> None:
    """``cancel.check()``, where there is a token."""
    if cancel is not None:
        cancel.check()


Case = Literal["sensitive", "insensitive", "smart"]


@dataclass(frozen=True, slots=True)
class GrepOptions:
    """An exact or regex search instead of a ranked one (``SearchRequest.grep``; ``query`` is then
    the pattern, in RE2's syntax, which is ripgrep's). ``fixed``: a literal string (``-F``);
    ``case``: ``sensitive`` (ripgrep's default), ``insensitive`` (``-i``) or ``smart`` (``-S``:
    insensitive unless the pattern has an upper-case letter); ``word``: whole words (``-w``);
    ``types``: languages (``-t``); ``before``, ``after``: context lines; ``max_per_file``:
    matching lines per file (``-m``); ``scopes``: each hit's enclosing definition (``scope``),
    which a printer of plain lines does not need; ``every_span``: every match on a line, not
    only its first (what a plain printer off a terminal shows)."""

    fixed: bool = False
    case: Case = "sensitive"
    word: bool = False
    types: tuple[str, ...] = ()
    before: int = 0
    after: int = 0
    max_per_file: int | None = None
    scopes: bool = True
    every_span: bool = True


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One search, as every searcher takes it.

    ``query``: words or a symbol. ``mode``: ``hybrid``, ``bm25`` or ``vector`` (None: the
    settings' ``default_mode``). ``tier``: which vector lists the answer may use (``Vectors``).
    ``filters``: path, language and fleet repository. ``limit``: how many hits. ``like``: a
    "more like this" instead of ``query``: what it names (``path:line``, a file, a symbol), looked
    up by the searcher; ``source``: that place once found (``related_source``). ``grep``: every
    line that matches ``query`` instead, as a pattern (``GrepOptions``), ``limit`` lines at most.
    ``cancel``: a token that stops the search at its next step."""

    query: str
    mode: Mode | None = None
    tier: Vectors = Vectors.LOAD
    filters: Filters = field(default_factory=Filters)
    limit: int = 10
    like: str | None = None
    source: RelatedSource | None = None
    grep: GrepOptions | None = None
    cancel: Cancel | None = None


CHUNK_GRAIN, MODULE_GRAIN, FILE_GRAIN = "chunk", "module", "file"  # SearchResult.grain


@dataclass(slots=True)
class SearchResult:
    """One hit. Lines are 1-based and inclusive; ranks are 1-based, None where not retrieved."""

    path: str
    start_line: int
    end_line: int
    scope: str
    language: str
    score: float
    bm25_rank: int | None
    vector_rank: int | None
    content: str
    chunk_id: int
    definition: bool = False  # the query names what this chunk defines
    line: int = 0  # where to open it: the definition's own line, else the first line with a query word
    repo: str = ""  # the repository's root, set when several repositories are searched at once
    static_rank: int | None = None  # rank in the static tier's list (core.index.static)
    page: int | None = None  # a PDF hit's page (its first line's)
    slide: int | None = None  # a PPTX hit's slide
    commit: str = ""  # a fleet hit's commit (core.fleet); repo is then the repository's name there
    translations: int = 0  # the same page in other languages, folded into this hit (core.translations)
    spans: tuple[tuple[int, int], ...] = ()  # a grep hit: its matches, character offsets in match_text
    # ``chunk``, or a hit that stands for its whole file: ``module`` (the root of a folder a short
    # question names: routing/mod.rs for "how does routing work") or ``file`` (a file it names by
    # its whole name). Such a hit holds the file's matching chunks (``parts``); a module's root opens
    # at its top (its lines and text are its first chunk's), a named file at its best chunk.
    grain: str = CHUNK_GRAIN
    parts: tuple[tuple[int, int], ...] = ()  # a file-level hit: the lines of the chunks it holds, best first

    @property
    def name(self) -> str:
        """The scope as a reader names it: ``class Flask > def url_for`` -> ``Flask.url_for``; a
        document's scope (``slide 4: Plan``, ``Design > Retries``) as it is."""
        if self.language in DOCUMENT_LANGUAGES:
            return self.scope
        return short_scope(self.scope)

    @property
    def whole_file(self) -> bool:
        """A file-level hit (``grain`` module or file), not one chunk."""
        return self.grain != CHUNK_GRAIN

    @property
    def is_document(self) -> bool:
        """A PDF, DOCX or PPTX hit: its lines are those of the extracted text."""
        return self.language in DOCUMENT_LANGUAGES

    @property
    def location(self) -> str:
        """Where a person finds it: ``src/app.py:42``, ``spec.pdf p.12``, ``deck.pptx slide 4``."""
        if self.page is not None:
            return f"{self.path} p.{self.page}"
        if self.slide is not None:
            return f"{self.path} slide {self.slide}"
        if self.language == "docx" and self.scope:  # Word has no stable pages: its heading
            return f"{self.path} § {self.scope.rsplit(' > ', 1)[-1]}"
        return f"{self.path}:{self.line or self.start_line}"

    @property
    def match_text(self) -> str:
        """The text of the hit's own line (``line``; its first where it has none)."""
        if self.start_line == self.end_line and self.line in (0, self.start_line):
            return self.content  # one line (a grep hit without context): no split
        lines = self.content.split("\n")
        at = (self.line or self.start_line) - self.start_line
        return lines[at] if 0 <= at < len(lines) else ""

    @property
    def context(self) -> tuple[list[str], list[str]]:
        """The lines of ``content`` before and after the hit's own line (a grep hit's context)."""
        lines = self.content.split("\n")
        at = (self.line or self.start_line) - self.start_line
        return lines[:at], lines[at + 1 :]

    @property
    def column(self) -> int:
        """A grep hit's first match's 1-based byte column, as ripgrep and editors count; else 1."""
        return byte_column(self.match_text, self.spans[0][0]) if self.spans else 1

    @property
    def found_by(self) -> str:
        """``both`` (BM25 and a vector list), ``bm25``, ``vector`` (the full model), ``static``
        (the static tier alone), ``symbol`` (a definition no retriever ranked), or ``grep`` (a
        line an exact or regex search matched)."""
        if self.spans:
            return "grep"
        dense = self.vector_rank or self.static_rank
        if self.bm25_rank and dense:
            return "both"
        if self.bm25_rank:
            return "bm25"
        if self.vector_rank:
            return "vector"
        if self.static_rank:
            return "static"
        return "symbol" if self.definition else "bm25"

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def byte_column(text: str, char: int) -> int:
    """The 1-based byte column of character ``char`` of ``text``, as ripgrep and editors count."""
    if text.isascii():  # a flag of the string: most lines, no slice made
        return char + 1
    head = text[:char]
    return (len(head) if head.isascii() else len(head.encode("utf-8", "surrogatepass"))) + 1


_KEYWORDS = re.compile(r"^(?:[a-z_]+\s+)+(?=[^\s])")


def short_scope(scope: str | None) -> str:
    """``class Flask > def url_for`` -> ``Flask.url_for``; ``impl Display for Foo`` -> ``Display for Foo``:
    the names without the keywords that introduce them."""
    parts = []
    for segment in (scope or "").split(" > "):
        names = [_KEYWORDS.sub("", label.strip()) or label.strip() for label in segment.split(", ")]
        parts.append(", ".join(n for n in names if n))
    return ".".join(p for p in parts if p)


class ModelState(str, Enum):
    """The full model's part in an answer."""

    USED = "used"  # its list was fused
    NOT_WANTED = "not wanted"  # bm25 mode, the static tier asked for, or no vector of it to search
    NOT_LOADED = "not loaded"  # not loaded yet, and not waited for (Vectors.LOADED)
    FAILED = "failed"  # it could not load: RepoState.model_error says why


@dataclass(frozen=True, slots=True)
class RepoState:
    """One repository (or fleet store) as an answer found it: whether it has an index, how much of
    it the full model's vectors cover, and the model's part."""

    repo: str  # the root, or a fleet store's address
    indexed: bool = True
    chunks: int = 0
    full_vectors: int = 0  # chunks with a vector of the full model
    static: bool = False  # whether the static tier's vectors were there to search
    model: ModelState = ModelState.NOT_WANTED
    model_error: str = ""
    full_pass: bool = False  # a plain `codesight index` computes the missing vectors (else --full)
    full_estimate: str = ""  # how long computing them takes on this machine, in words
    indexing: str = ""  # an index run going on: where it is ("lexical 40/200"), else ""

    @property
    def pending(self) -> int:
        """Chunks without a vector of the full model."""
        return max(0, self.chunks - self.full_vectors)

    @property
    def coverage(self) -> float:
        """The share of chunks that have a vector of the full model."""
        return self.full_vectors / self.chunks if self.chunks else 0.0


class Lack(str, Enum):
    """What an answer can lack."""

    NOT_INDEXED = "not indexed"  # a repository had no index yet: nothing of it is in the answer
    PARTIAL_VECTORS = "partial vectors"  # some chunks have no vector of the full model yet
    FULL_UNUSED = "full vectors unused"  # a fast answer, where full-model vectors exist
    MODEL_LOADING = "model loading"  # the full model was not loaded yet: BM25 and the static tier answered
    MODEL_FAILED = "model failed"  # the full model could not load


@dataclass(frozen=True, slots=True)
class Gap:
    """One thing an answer lacks, for one repository ("" for all), said in one line."""

    lack: Lack
    repo: str
    text: str


class SearchResponse(list[SearchResult]):
    """What a ``Searcher`` answers: the hits, best first (it is the list of ``SearchResult``), and
    what the answer is made of: ``mode`` and ``tier``; ``retrievers``, the lists fused (``bm25``,
    ``static``, ``vector``); ``repos``, each repository's ``RepoState``; ``notices``, what happened
    to an index since the last call (rebuilt, read-only, a damaged table). ``gaps`` says what the
    answer lacks."""

    def __init__(
        self,
        hits: Iterable[SearchResult] = (),
        notices: Sequence[str] = (),
        retrievers: Sequence[str] = (),
        *,
        mode: Mode | None = None,
        tier: Vectors | None = None,
        repos: Sequence[RepoState] = (),
    ) -> None:
        super().__init__(hits)
        self.notices: list[str] = list(notices)
        self.retrievers: list[str] = list(retrievers)
        self.mode = mode
        self.tier = tier
        self.repos: list[RepoState] = list(repos)

    @property
    def hits(self) -> list[SearchResult]:
        """The hits as a plain list."""
        return list(self)

    def with_hits(self, hits: Iterable[SearchResult]) -> SearchResponse:
        """The same answer's facts over other hits (filtered, cut, or some left out)."""
        return SearchResponse(hits, self.notices, self.retrievers, mode=self.mode, tier=self.tier, repos=self.repos)

    @property
    def gaps(self) -> list[Gap]:
        """What this answer lacks, one line each, each said once (``gaps_of``)."""
        return gaps_of(self)


def _how_to_finish(state: RepoState) -> str:
    if state.indexing:
        return f"indexing: {state.indexing}"
    if state.full_pass:
        return "`codesight index` computes them"
    return f"`codesight index --full` computes them: {state.full_estimate or 'a while'} here"


def _gaps_of_repo(response: SearchResponse, state: RepoState, label: str) -> list[Gap]:
    by = "BM25 and the static tier" if state.static else "BM25"
    if not state.indexed:
        doing = f" ({state.indexing}); search again in a few seconds" if state.indexing else ": run `codesight index`"
        return [Gap(Lack.NOT_INDEXED, state.repo, f"{label}not indexed yet{doing}")]
    if response.mode == "bm25" or "grep" in response.retrievers:
        return []
    if state.model is ModelState.FAILED:
        return [Gap(Lack.MODEL_FAILED, "", f"the full model could not load ({state.model_error}): {by} answered")]
    if response.tier is Vectors.STATIC:
        if state.full_vectors and response.mode == "hybrid":
            return [
                Gap(
                    Lack.FULL_UNUSED,
                    state.repo,
                    f"{label}answered from {by}; the full model's vectors ({state.full_vectors:,} chunks) were not used",
                )
            ]
        return []
    gaps: list[Gap] = []
    if state.model is ModelState.NOT_LOADED:
        gaps.append(Gap(Lack.MODEL_LOADING, "", f"the full model is still loading: this answer is {by}"))
    if state.pending and state.chunks:
        gaps.append(
            Gap(
                Lack.PARTIAL_VECTORS,
                state.repo,
                f"{label}index incomplete: vectors cover {state.coverage:.0%} of chunks; {state.pending:,}"
                f" without the full model's are found by {by} ({_how_to_finish(state)})",
            )
        )
    return gaps


def gaps_of(response: SearchResponse) -> list[Gap]:
    """What ``response`` lacks: a repository not indexed yet; the full model failed or still
    loading; chunks it has not embedded yet; a fast answer where its vectors exist. Each line once
    (the model is shared); each names its repository where several were searched."""
    several = len(response.repos) > 1
    out: list[Gap] = []
    for state in response.repos:
        label = f"{Path(state.repo).name}: " if several else ""
        for gap in _gaps_of_repo(response, state, label):
            if gap not in out:
                out.append(gap)
    return out


class Searcher(Protocol):
    """What answers a ``SearchRequest``: a repository's index (``CodeSight``), a fleet store
    (``Fleet``), several together (``core.repo.retrieval.Several``)."""

    def search(self, request: SearchRequest) -> SearchResponse: ...


class RepoSearcher(Searcher, Protocol):
    """A repository's ``Searcher``: it has a root, and finds the chunk a "more like this" starts
    from (``CodeSight``)."""

    @property
    def root(self) -> Path: ...

    def related_source(self, target: str) -> RelatedSource: ...
