"""The MCP tools' output schemas: the structured content of each answer, declared to clients."""

from __future__ import annotations

from pydantic import BaseModel, Field


# --- output schemas (the structured content of each tool) -------------------------------------
class IndexState(BaseModel):
    """How complete a repository's index is right now."""

    repo: str = Field(description="the repository's root")
    indexed: bool = Field(description="a lexical pass has completed: BM25 search covers the repository")
    files: int
    chunks: int
    vectors: int = Field(description="chunks with an embedding")
    vector_coverage: float = Field(description="share of chunks with an embedding, 0 to 1")
    indexing: bool = Field(description="an indexer (this server or another process) is writing now")
    phase: str | None = Field(default=None, description="this server's indexer: scan, lexical or embed")
    progress: str | None = Field(default=None, description="e.g. 'embed 1200/5000'")
    watching: bool = False
    model: str = Field(description="the embedding model: name and state (loading, ready, failed: ...)")
    last_indexed: str | None = Field(default=None, description="ISO time of the last completed lexical pass")


class Hit(BaseModel):
    repo: str = Field(description="the repository's root; for a fleet store's hit, its name in the store")
    commit: str | None = Field(default=None, description="a fleet store's hit: the commit it was indexed at")
    path: str = Field(description="relative to repo")
    start_line: int
    end_line: int
    line: int = Field(description="the line to open: the definition's own line, else the first matching line")
    scope: str = Field(description="enclosing definitions, e.g. 'class Flask > def url_for'")
    name: str = Field(description="compact scope, e.g. 'Flask.url_for'")
    language: str
    score: float
    found_by: list[str] = Field(description="retrievers that found it: bm25, static, vector, symbol")
    bm25_rank: int | None = None
    vector_rank: int | None = None
    static_rank: int | None = Field(default=None, description="rank in the static tier's list")
    page: int | None = Field(default=None, description="a PDF hit's page (its lines are those of the extracted text)")
    slide: int | None = Field(default=None, description="a PPTX hit's slide")
    location: str = Field(description="where a person finds it: 'src/app.py:42', 'spec.pdf p.12', 'deck.pptx slide 4'")
    snippet: str
    translations: int = Field(default=0, description="the same page in other languages, folded into this hit")
    grain: str = Field(
        default="chunk",
        description="chunk, or a hit for the whole file: module (the root of a folder the question names: its lines"
        " and snippet are the file's top) or file (a file it names: its best chunk's); either holds the file's"
        " other matching chunks (parts)",
    )
    parts: list[list[int]] = Field(
        default_factory=list, description="a whole-file hit: [start_line, end_line] of each chunk it holds, best first"
    )


class GrepMatch(BaseModel):
    repo: str = Field(description="the repository's root")
    path: str = Field(description="relative to repo")
    line: int
    column: int = Field(description="1-based byte column of the first match on the line")
    text: str = Field(description="the matching line")
    spans: list[list[int]] = Field(description="[start, end) character offsets of each match in text")
    scope: str = Field(description="the enclosing definition, e.g. 'class Cache > def get'; '' at top level")
    before: list[str] = Field(default_factory=list, description="context lines before it")
    after: list[str] = Field(default_factory=list, description="context lines after it")
    commit: str = Field(default="", description="a fleet store's line: its repository's commit (repo is then its name)")


class GrepOutput(BaseModel):
    pattern: str
    matches: list[GrepMatch]
    truncated: bool = Field(description="more lines matched than limit: narrow with file_glob or the pattern")
    notices: list[str] = Field(default_factory=list)
    elapsed_ms: float


class SearchOutput(BaseModel):
    query: str
    mode: str
    results: list[Hit]
    retrievers: list[str] = Field(
        default_factory=list,
        description="the lists fused for this answer: bm25,"
        " static (fast static-model vectors), vector (the full model)",
    )
    index: list[IndexState] = Field(description="completeness of each repository searched")
    notices: list[str] = Field(default_factory=list, description="what this answer lacks, in words")
    elapsed_ms: float = Field(description="time the server spent on this call")
    tokens: int = Field(default=0, description="this answer's size in tokens (the model tokenizer codesight ships)")


class SymbolOut(BaseModel):
    name: str
    kind: str = Field(description="the language's word for it: def, class, func, fn, struct, method, ...")
    scope: str = Field(description="its enclosing definitions, outermost first, '.' between")
    path: str
    line: int = Field(description="the line of its name")
    start_line: int
    end_line: int


class SiteOut(BaseModel):
    path: str
    line: int
    name: str
    kind: str = Field(description="call, type, import, other; 'definition' for a definition's own name")
    text: str = Field(description="the line")
    within: SymbolOut | None = Field(default=None, description="the definition it is in (for callers: the caller)")
    target: SymbolOut | None = Field(default=None, description="callees: the definition the call resolves to")
    resolution: str = Field(description="'resolved', 'one of N candidates (same folder)', or 'not defined here'")


class NavigationOutput(BaseModel):
    action: str
    target: str
    name: str
    resolution: str = Field(description="'resolved' where the target names one definition, else 'one of N candidates'")
    symbol: SymbolOut | None = Field(default=None, description="the definition followed")
    candidates: list[SymbolOut] = Field(description="every definition the name has")
    sites: list[SiteOut]
    truncated: bool = False
    index: IndexState
    elapsed_ms: float = 0.0
    tokens: int = Field(default=0, description="this answer's size in tokens (the model tokenizer codesight ships)")


class IndexOutput(BaseModel):
    repo: str
    started: bool = Field(description="this call started an index run (false: one was already running)")
    message: str
    state: IndexState


class StatusOutput(BaseModel):
    state: IndexState
    pending: int = Field(description="chunks still without an embedding")
    stale_files: int | None = Field(description="files changed on disk since the last index run")
    changed: dict[str, list[str]] = Field(default_factory=dict, description="added, modified, deleted (first 50 each)")
    index_bytes: int
    skipped: dict[str, int] = Field(default_factory=dict, description="files passed over, by reason")
    read_only: bool = False
    notices: list[str] = Field(default_factory=list)


class WatchOutput(BaseModel):
    repo: str
    watching: bool
    mode: str | None = Field(default=None, description="events (inotify) or poll")
    batches: int = Field(default=0, description="batches of changes indexed so far")
    message: str
