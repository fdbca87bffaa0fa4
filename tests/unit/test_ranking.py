"""The hybrid ranking stack: query routing, symbol definitions first, penalties for tests and docs,
one result per definition; and the plain-RRF switch that reproduces the starting point."""

from pathlib import Path

import numpy as np
import pytest
from conftest import HashEmbedder

from codesight_tui import CodeSight
from codesight_tui.core.config import Settings
from codesight_tui.core.search.ranking import _prefixed, analyze, definitions, is_code_like
from codesight_tui.core.store.store import ChunkRow

RETRY = '''"""Retry policies for uploads."""


class RetryPolicy:
    """How often and how long to retry a failed upload."""

    def __init__(self, attempts=3, backoff=2.0):
        self.attempts = attempts
        self.backoff = backoff

    def delays(self):
        return [self.backoff ** i for i in range(self.attempts)]


def retry_policy_from_env(env):
    return RetryPolicy(int(env.get("RETRIES", 3)))
'''

TESTS = """from uploads.retry import RetryPolicy


def test_retry_policy_default_attempts():
    assert RetryPolicy().attempts == 3  # RetryPolicy RetryPolicy retry policy


def test_retry_policy_delays():
    assert RetryPolicy(2, 2.0).delays() == [1.0, 2.0]  # RetryPolicy retry policy delays
"""

DOCS = "# Retrying\n\nThe RetryPolicy class decides how often a failed upload is retried. RetryPolicy!\n"

LONG = (
    "def build_report(rows):\n"
    + "".join(
        f"    total_{i} = sum(r.amount_{i} for r in rows)  # report total column {i} of the quarterly ledger\n"
        for i in range(120)
    )
    + "    return locals()\n"
)


JS = (
    "export class UploadClient {\n  constructor(url) {\n"
    + "".join(
        f"    this.option{i} = url + '/endpoint/{i}';  // configure the upload endpoint number {i}\n" for i in range(30)
    )
    + "  }\n\n  retryUpload(file) {\n"
    + "".join(
        f"    const attempt{i} = send(file, {i});  // try sending the file again, attempt {i}\n" for i in range(30)
    )
    + "  }\n}\n"
)


@pytest.fixture
def repo2(tmp_path: Path) -> Path:
    root = tmp_path / "r"
    for rel, text in {
        "uploads/retry.py": RETRY,
        "tests/test_retry.py": TESTS,
        "docs/retrying.md": DOCS,
        "uploads/report.py": LONG,
        "web/client.js": JS,
    }.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


@pytest.fixture
def cs(repo2: Path, settings: Settings, hash_embedder: HashEmbedder) -> CodeSight:
    c = CodeSight(repo2, settings=settings, embedder=hash_embedder)
    c.index()
    return c


def test_query_kinds() -> None:
    assert analyze("RetryPolicy").kind == "symbol" and analyze("RetryPolicy").identifiers == ["RetryPolicy"]
    assert analyze("slugify").kind == "symbol"
    assert analyze("Client.send").identifiers == ["Client.send"]
    q = analyze("where do we use retry_policy_from_env")
    assert q.kind == "mixed" and q.identifiers == ["retry_policy_from_env"]
    q = analyze("How does the upload get retried")
    assert q.kind == "natural" and not q.identifiers and {"upload", "retried"} <= q.words
    assert is_code_like("parseConfigFile") and is_code_like("MAX_SIZE") and not is_code_like("How")


def test_definitions_in_every_spelling(cs: CodeSight) -> None:
    rows = cs.store.get_chunks(definitions(cs.store, "RetryPolicy"))
    (r,) = rows.values()
    assert r.path == "uploads/retry.py" and r.start_line <= 4 <= r.end_line  # `class RetryPolicy:` is line 4
    assert definitions(cs.store, "retrypolicy") == definitions(cs.store, "RetryPolicy")  # case-folded fallback
    (d,) = cs.store.get_chunks(definitions(cs.store, "UploadClient.retryUpload")).values()
    assert d.path == "web/client.js"
    assert definitions(cs.store, "Nope.retryUpload") == [] and definitions(cs.store, "") == []


@pytest.mark.parametrize("query", ["RetryPolicy", "retry_policy_from_env", "RetryPolicy delays"])
def test_the_definition_comes_first(cs: CodeSight, query: str) -> None:
    top = cs.search(query, top_k=5)[0]
    assert top.path == "uploads/retry.py" and top.definition


def test_tests_and_docs_rank_below_source_unless_asked_for(cs: CodeSight) -> None:
    paths = [h.path for h in cs.search("retry policy", top_k=10)]
    assert paths.index("uploads/retry.py") < paths.index("tests/test_retry.py")
    assert paths.index("uploads/retry.py") < paths.index("docs/retrying.md")
    assert cs.search("tests for the retry policy", top_k=3)[0].path == "tests/test_retry.py"


def test_one_long_definition_is_one_result(cs: CodeSight) -> None:
    assert cs.store.conn.execute("SELECT count(*) FROM chunks WHERE path='uploads/report.py'").fetchone()[0] >= 3
    hits = [h for h in cs.search("quarterly ledger report total column", top_k=10) if h.path == "uploads/report.py"]
    assert len(hits) == 1
    h = hits[0]
    assert h.end_line - h.start_line + 1 == len(h.content.split("\n"))
    lines = LONG.split("\n")
    assert h.content.split("\n") == lines[h.start_line - 1 : h.end_line]


def test_plain_rrf_is_the_formula(repo2: Path, settings: Settings, hash_embedder: HashEmbedder) -> None:
    c = CodeSight(repo2, settings=settings.model_copy(update={"ranking": "plain"}), embedder=hash_embedder)
    c.index()
    for h in c.search("retry policy delays", top_k=5):
        expect = sum(1 / (c.settings.rrf_k + r) for r in (h.bm25_rank, h.vector_rank) if r)
        assert h.score == pytest.approx(expect, rel=1e-4) and not h.definition


IMPL = """export class UploadClient {
  // Send the file again after a failed upload, waiting longer between attempts.
  async retryUpload(file) {
    for (let attempt = 0; attempt < this.attempts; attempt++) {
      if (await this.send(file)) return;
      await sleep(this.backoff * 2 ** attempt);
    }
  }
}
"""

DTS = """export declare class UploadClient {
  /** Send the file again after a failed upload, with backoff between attempts. */
  retryUpload(file: File): Promise<void>;
}

/** Options for retrying a failed upload. */
export interface RetryOptions {
  attempts: number;
}
"""


def test_minified_bundles_are_vendored() -> None:
    # ``app.min.js`` and ``rapidoc-min.js`` alike: a minified bundle ranked 2nd for "how does the
    # openapi derive work" on poem, a line of it.
    from codesight_tui.core.ingest.paths import SOURCE, VENDOR, classify

    assert (
        classify("static/app.min.js") == VENDOR == classify("ui/rapidoc/rapidoc-min.js") == classify("css/site-min.css")
    )
    assert classify("lib/min.js") == SOURCE == classify("src/vmin.js") == classify("src/admin.js")


def test_declarations_rank_below_their_implementation_unless_named(
    tmp_path: Path, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    from codesight_tui.core.ingest.paths import DECLARATIONS, SOURCE, classify

    assert classify("typings/index.d.ts") == DECLARATIONS == classify("pkg/mod.pyi") and classify("lib/a.ts") == SOURCE
    root = tmp_path / "r"
    for rel, text in {"lib/client.js": IMPL, "typings/index.d.ts": DTS}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    c = CodeSight(root, settings=settings, embedder=hash_embedder)
    c.index()
    # The declaration matches the words better (BM25 ranks it first, and vectors find it too),
    # yet the implementation is what a reader wants.
    hits = c.search("send the file again after a failed upload", top_k=5)
    assert [h.path for h in hits] == ["lib/client.js", "typings/index.d.ts"]
    assert hits[1].bm25_rank == 1 and hits[1].vector_rank is not None
    top = c.search("RetryOptions", top_k=3)[0]  # declared only in the .d.ts: still first
    assert top.path == "typings/index.d.ts" and top.definition
    assert c.search("typings for a failed upload", top_k=3)[0].path == "typings/index.d.ts"


# --- step 6: feedback from the top hit --------------------------------------------------------


def _unit(*xs: tuple[int, float]) -> np.ndarray:
    v = np.zeros(8, dtype=np.float32)
    for i, w in xs:
        v[i] = w
    return v / np.linalg.norm(v)


def test_feedback_ranking_moves_the_query_toward_the_top_hit() -> None:
    from codesight_tui.core.search.ranking import feedback_ranking

    q = _unit((0, 1))
    vecs = {1: _unit((1, 1)), 2: _unit((2, 1)), 3: _unit((1, 1), (3, 0.2)), 4: _unit((0, 1), (2, 1.5))}
    # Alone, the query is as far from 1 and 3 as from 2; moved toward hit 1, it prefers 1 and 3.
    assert feedback_ranking(q, 1, [1, 2, 3, 4, 5], vecs, depth=10) == [1, 3, 4, 2]  # 5 has no vector
    assert feedback_ranking(q, 1, [1, 2, 3, 4], vecs, depth=2) == [1, 3]
    assert feedback_ranking(q, 5, [5, 1, 2], vecs, depth=10) == []  # the top hit has no vector yet


def test_feedback_lifts_a_lexical_hit_like_the_top_hit(cs: CodeSight) -> None:
    from codesight_tui.core.search.ranking import rerank

    ids = [
        i
        for (i,) in cs.store.conn.execute(
            "SELECT id FROM chunks WHERE path IN ('uploads/retry.py', 'uploads/report.py', 'web/client.js') ORDER BY id"
        )
    ]
    a, b, c, d, e = ids[:5]
    rankings = {"bm25": [a, b, c], "vector": [a, d, e]}
    vecs = {a: _unit((1, 1)), b: _unit((2, 1)), c: _unit((1, 1), (3, 0.1)), d: _unit((0, 1)), e: _unit((4, 1))}
    asked: list[list[int]] = []

    def vectors_for(rows: list[ChunkRow]) -> dict[int, np.ndarray]:
        asked.append(sorted(r.id for r in rows))
        return {r.id: vecs[r.id] for r in rows}

    query = "zzyzx qwvp"  # words no path holds: fusion and feedback alone decide
    plain = [cid for cid, *_ in rerank(cs.store, rankings, query)]
    assert plain.index(b) < plain.index(c)  # BM25 ranked b above c, and no vector ranked either
    out = rerank(cs.store, rankings, query, query_vector=_unit((0, 1)), vectors_for=vectors_for)
    order = [cid for cid, *_ in out]
    assert order[0] == a and order.index(c) < order.index(b)  # c is like the top hit; b is not
    assert asked == [sorted(ids[:5])]  # one lookup, for every candidate
    assert {cid: r for cid, _, r, _ in out}[c] == {"bm25": 3}  # ranks shown are the retrievers' own


def test_search_reads_feedback_vectors_from_the_cache(cs: CodeSight, monkeypatch: pytest.MonkeyPatch) -> None:
    from codesight_tui.core.store.vectors import VectorStore

    expect = [h.chunk_id for h in cs.search("retry a failed upload", top_k=5)]
    monkeypatch.setattr(VectorStore, "vectors", lambda self, ids: pytest.fail("LanceDB lookup with a warm cache"))
    assert [h.chunk_id for h in cs.search("retry a failed upload", top_k=5)] == expect
    monkeypatch.undo()
    for p in cs.settings.cache_dir.glob("*.sqlite"):  # the cache is gone: LanceDB has every vector
        p.unlink()
    other = CodeSight(cs.root, settings=cs.settings, embedder=cs.models.loaded)
    assert [h.chunk_id for h in other.search("retry a failed upload", top_k=5)] == expect


# --- the lexical stack, saturation, coverage, data files --------------------------------------


def _lexical(tmp_path: Path, settings: Settings, files: dict[str, str]) -> CodeSight:
    """A repository of ``files`` with its lexical index (no vectors)."""
    root = tmp_path / "r"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    c = CodeSight(root, settings=settings)
    c.index(embed=False)
    return c


def test_bm25_mode_gets_the_lexical_stack(repo2: Path, settings: Settings) -> None:
    # No vectors at all: bm25 mode still puts the definition first, above tests that repeat the name.
    c = CodeSight(repo2, settings=settings)
    c.index(embed=False)
    top = c.search("RetryPolicy", top_k=5, mode="bm25")
    assert top[0].path == "uploads/retry.py" and top[0].definition
    paths = [h.path for h in c.search("retry policy", top_k=10, mode="bm25")]
    assert paths.index("uploads/retry.py") < paths.index("tests/test_retry.py")


def test_qualified_names_in_other_spellings() -> None:
    assert analyze("Rack::Builder").identifiers == ["Rack.Builder"] and analyze("Rack::Builder").kind == "symbol"
    assert analyze("Illuminate\\Http\\Request").identifiers == ["Illuminate.Http.Request"]


def test_the_file_named_after_a_symbol_comes_first(tmp_path: Path, settings: Settings) -> None:
    c = _lexical(
        tmp_path,
        settings,
        {
            "src/client/Request.php": "<?php\nclass Request extends Message\n{\n    public $uri;\n}\n",
            "src/client/Pending.php": "<?php\nclass Pending\n{\n    // Request Request Request\n}\n"
            "class Request\n{\n    public $body;\n}\n",
        },
    )
    hits = c.search("Request", top_k=5, mode="bm25")
    assert hits[0].path == "src/client/Request.php" and hits[0].definition


def test_the_file_named_after_a_symbol_beats_its_partial_classes(tmp_path: Path, settings: Settings) -> None:
    # C# spreads one class over SqlMapper.cs, SqlMapper.Async.cs, ...: the file named SqlMapper is it.
    part = "namespace Dapper\n{{\n    public static partial class SqlMapper\n    {{\n        // SqlMapper {0}\n    }}\n}}\n"
    c = _lexical(
        tmp_path,
        settings,
        {
            "Dapper/SqlMapper.Async.cs": part.format("async SqlMapper queries, SqlMapper SqlMapper"),
            "Dapper/SqlMapper.GridReader.cs": part.format("grid reader of SqlMapper SqlMapper"),
            "Dapper/SqlMapper.cs": part.format("") + "\n" * 40 + "// the core of it\n",
        },
    )
    assert c.search("SqlMapper", top_k=5, mode="bm25")[0].path == "Dapper/SqlMapper.cs"


def test_the_named_file_survives_many_extensions(tmp_path: Path, settings: Settings) -> None:
    # Swift extends a type in files of its own, each defining "Request" on its first lines; the type
    # itself sits lower in Request.swift. It must not be cut from the few definitions kept.
    files = {
        f"Sources/Request+Part{i}.swift": f"extension Request {{\n    var part{i}: Int {{ {i} }}\n}}\n"
        for i in range(12)
    }
    body = "".join(f'    var field{i}: String = "value of header {i} in the outgoing message"\n' for i in range(40))
    files["Sources/Request.swift"] = "import Foundation\n" + "\n" * 60 + "final class Request {\n" + body + "}\n"
    c = _lexical(tmp_path, settings, files)
    assert c.search("Request", top_k=5, mode="bm25")[0].path == "Sources/Request.swift"


def test_a_short_query_naming_a_file_lifts_it(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codesight_tui.core.search import ranking

    # Dispatcher.php says "event" and "listener" less often than the helpers around it, but a short
    # query naming it ("dispatching" meets "Dispatcher" by its stem) is about it.
    helper = (
        "<?php\nclass {0}\n{{\n    // event listener: register the event listener, the event listener"
        " registration, event event listener\n    public function handle($event) {{ return $event; }}\n}}\n"
    )
    files = {f"src/Events/{n}.php": helper.format(n) for n in ("QueuedClosure", "NullQueue", "CallQueuedListener")}
    body = "".join(f"        $this->wildcards[{i}] = $this->container->make($name, $payload);\n" for i in range(20))
    files["src/Events/Dispatcher.php"] = (
        "<?php\nclass Dispatcher\n{\n    // Register an event listener.\n"
        "    public function listen($event, $listener)\n    {\n" + body + "    }\n}\n"
    )
    c = _lexical(tmp_path, settings, files)
    short = "event dispatching and listener registration"
    long = "where does the code register an event listener for each event and keep the dispatching order stable"

    def scores(query: str) -> dict[str, float]:
        return {h.path: h.score for h in c.search(query, top_k=5, mode="bm25")}

    monkeypatch.setattr(ranking, "FILE_EVIDENCE", 0.0)  # Dispatcher.php's several chunks would lift it too
    with_bonus = {q: scores(q) for q in (short, long)}
    monkeypatch.setattr(ranking, "FILE_NAME_BONUS", 0.0)
    without = {q: scores(q) for q in (short, long)}
    assert max(with_bonus[short], key=with_bonus[short].__getitem__) == "src/Events/Dispatcher.php"
    assert max(without[short], key=without[short].__getitem__) != "src/Events/Dispatcher.php"
    # A long query describes one piece of code: a file sharing one of its many words gets nothing.
    assert with_bonus[long] == without[long]
    assert {"php", "python", "pdf"} <= ranking.NAMED_LANGUAGES and "json" not in ranking.NAMED_LANGUAGES
    said = {ranking._stem(w) for w in ("bean", "deserialization", "parses", "reading", "json", "sql", "mapper")}
    assert ranking._names_file("deser/BeanDeserializer.java", said)
    assert ranking._names_file("io/circe/Parser.scala", said) and ranking._names_file(
        "ObjectReader.java", said | {"object"}
    )
    assert ranking._names_file("Dapper/SqlMapper.cs", said) and not ranking._names_file(
        "Dapper/SqlMapper.Async.cs", said
    )
    assert ranking._stem("validation") == ranking._stem("validator") and ranking._stem("routing") == ranking._stem(
        "route"
    )


def test_saturation_lets_the_next_file_up_for_short_queries() -> None:
    from codesight_tui.core.search import ranking

    def Row(path: str, scope: str, start: int, end: int) -> ChunkRow:  # noqa: N802 - reads as the row it makes
        return ChunkRow(0, path, start, end, "python", scope, "")

    # 1, 2 and 5 are three definitions in a.py; 3 continues 1 (the next window of the same definition)
    rows = {
        1: Row("a.py", "def f", 1, 10),
        2: Row("a.py", "def g", 20, 30),
        3: Row("a.py", "def f", 11, 15),
        4: Row("b.py", "def h", 1, 9),
        5: Row("a.py", "def k", 40, 50),
    }
    scored = [(1.0, 1), (0.9, 2), (0.8, 3), (0.6, 4), (0.55, 5)]
    assert [cid for _, cid in ranking._saturate(scored, rows)] == [1, 3, 4, 2, 5]
    assert ranking.analyze("session management").typed <= ranking.TOPIC_MAX_WORDS
    long = "How does the auto-updating live display redraw itself on a timer, and what decides its refresh rate"
    assert ranking.analyze(long).typed > ranking.TOPIC_MAX_WORDS
    # A topic is counted in the words typed: an identifier is one word, not its parts as well.
    q = ranking.analyze("how Monad composes dependent effectful computations with flatMap")
    assert q.typed == 6 <= ranking.TOPIC_MAX_WORDS and {"flatmap", "flat", "map"} <= q.words


def test_partial_vectors_count_by_coverage(cs: CodeSight) -> None:
    from codesight_tui.core.search.ranking import rerank

    ids = [r[0] for r in cs.store.conn.execute("SELECT id FROM chunks WHERE path LIKE 'uploads/%' ORDER BY id")]
    a, b = ids[0], ids[-1]
    rankings = {"bm25": [a], "vector": [b]}
    full = rerank(cs.store, rankings, "how do uploads get retried", coverage=1.0)
    partial = rerank(cs.store, rankings, "how do uploads get retried", coverage=0.05)
    assert full[0][0] == b  # a question leans on vectors when they are all there
    assert partial[0][0] == a  # but 5% of the vectors can't outvote BM25


def test_translation_catalogs_are_data() -> None:
    from codesight_tui.core.index.indexer import _priority
    from codesight_tui.core.ingest.paths import DATA, SOURCE, classify

    assert classify("django/conf/locale/de/LC_MESSAGES/django.po") == DATA
    assert classify("app/i18n/fr.json") == DATA and classify("res/strings.xliff") == DATA
    assert classify("src/locale.py") == SOURCE and classify("src/config.json") != DATA
    from codesight_tui.core.ingest.paths import DOCS

    # scaffolding templates that generators copy into new projects rank as docs
    assert classify("Routing/Console/stubs/controller.plain.stub") == DOCS
    assert classify("generators/rails/app/templates/Gemfile.tt") == DOCS
    # embedded last: after docs and tests
    assert (
        _priority("conf/locale/de/django.po", 0, "text")
        > _priority("docs/index.md", 0, "markdown")
        > _priority("src/a.py", 0, "python")
    )


def test_configuration_and_data_formats_are_not_code() -> None:
    from codesight_tui.core.index.indexer import _priority
    from codesight_tui.core.ingest.paths import CONFIG, SOURCE, classify

    for path in (
        "src/commands/setrange.json",
        ".github/workflows/test.yml",
        "pyproject.toml",
        "setup.cfg",
        "pom.xml",
        "src/commands.def",
        "BUILD.bazel",
    ):
        assert classify(path) == CONFIG, path
    # a script without an extension is code by its shebang line (the language the index detected)
    assert classify("libexec/bats", "shell") == SOURCE and classify("libexec/bats") == CONFIG
    assert _priority("config/app.yml", 0, "yaml") > _priority("docs/index.md", 0, "markdown")


def test_configuration_ranks_below_the_code_it_describes_unless_asked_for(tmp_path: Path, settings: Settings) -> None:
    c = _lexical(
        tmp_path,
        settings,
        {
            "src/t_string.c": "void setrangeCommand(client *c) {\n    sds value = c->argv[3]->ptr;\n"
            "    o = dbUnshareStringValue(c->db, c->argv[1], o);\n"
            "    memcpy((char*)o->ptr + offset, value, sdslen(value));\n}\n",
            "src/commands/setrange.json": '{\n  "SETRANGE": {\n    "summary": "Overwrites a part of a string value '
            "with another by an offset. Creates the key if it doesn't exist.\",\n"
            '    "group": "string",\n    "arguments": ["key", "offset", "value"]\n  }\n}\n',
        },
    )
    query = "how SETRANGE overwrites part of a string value"
    assert c.search(query, top_k=2, mode="bm25")[0].path == "src/t_string.c"
    assert c.search(query + " json", top_k=2, mode="bm25")[0].path == "src/commands/setrange.json"


def test_catalog_hits_rank_below_code_unless_asked_for(tmp_path: Path, settings: Settings) -> None:
    c = _lexical(
        tmp_path,
        settings,
        {
            "middleware/csrf.py": "def check_token(request):\n    # the csrf token is checked here\n"
            "    return request.token == request.cookie\n",
            "locale/de/django.po": "".join(
                f'msgid "csrf token check failed {i}"\nmsgstr "CSRF-Token {i}"\n\n' for i in range(40)
            ),
        },
    )
    assert c.search("where is the csrf token checked", top_k=3, mode="bm25")[0].path == "middleware/csrf.py"
    assert any(h.path.endswith(".po") for h in c.search("csrf token translation", top_k=3, mode="bm25"))


@pytest.mark.parametrize(
    "files, ident, where",
    [
        # a qualified definition (Elixir's defmodule Phoenix.Router) also defines its last part
        (
            {
                "lib/router.ex": "defmodule Phoenix.Router do\n  def match(conn), do: conn\nend\n",
                "lib/helpers.ex": "defmodule Phoenix.Router.Helpers do\n  def url(x), do: x\nend\n",
            },
            "Router",
            "lib/router.ex",
        ),
        # a qualifier may name the module file (Zig, Python, Rust): std.testing.expect is in std/testing.zig
        (
            {
                "std/testing.zig": "pub fn expect(ok: bool) !void {\n    if (!ok) return error.Fail;\n}\n",
                "std/debug.zig": "pub fn expect(ok: bool) void {\n    _ = ok;\n}\n",
            },
            "std.testing.expect",
            "std/testing.zig",
        ),
    ],
)
def test_qualified_names_find_their_definition(
    tmp_path: Path, settings: Settings, files: dict[str, str], ident: str, where: str
) -> None:
    c = _lexical(tmp_path, settings, files)
    (row,) = c.store.get_chunks(definitions(c.store, ident)).values()
    assert row.path == where
    assert c.search(ident, top_k=3, mode="bm25")[0].path == where
    assert definitions(c.store, "nope." + ident.split(".")[-1]) == []


def test_a_file_that_matches_in_several_places_outranks_one_lucky_chunk(tmp_path: Path, settings: Settings) -> None:
    """File-level evidence (BM25 alone): a question about how something works is answered by the
    file whose several chunks match, not by the one chunk elsewhere that matches a little better."""
    from codesight_tui.core.search import ranking

    (tmp_path / "alpha.py").write_text(
        "".join(
            f'def session_step_{i}(store):\n    """Expire the session token after idle {i}."""\n'
            + "".join(f"    value_{j} = store.lookup({j}) + compute_{j}(value_{j})\n" for j in range(40))
            + f"    return store.expire(session_token_{i})\n\n\n"
            for i in range(3)
        )
    )
    (tmp_path / "beta.py").write_text(
        'def expire_note():\n    """Session token idle expire: session token expire idle."""\n    return None\n'
    )
    for i in range(6):  # enough other files that the words are not everywhere
        (tmp_path / f"other_{i}.py").write_text(f"def unrelated_{i}(x):\n    return x * {i}\n")
    cs = CodeSight(tmp_path, settings=settings)
    cs.index(embed=False, static=False)
    question = "how does an idle session token expire"
    with_evidence = [h.path for h in cs.search(question, mode="bm25")]
    saved = ranking.FILE_EVIDENCE
    try:
        ranking.FILE_EVIDENCE = 0.0
        without = [h.path for h in cs.search(question, mode="bm25")]
    finally:
        ranking.FILE_EVIDENCE = saved
    assert without[0] == "beta.py" and with_evidence[0] == "alpha.py", (without, with_evidence)


def test_file_evidence_with_several_lists_counts_only_chunks_bm25_ranked_high() -> None:
    """With BM25 and the static tier fused, the deep end of both lists holds many chunks of a big
    file, and the static list ranks every chunk however unlike the question: neither is evidence
    that the file answers it. Chunks BM25 put in its first FILE_EVIDENCE_TOP are."""
    from codesight_tui.core.fusion import rrf_scores
    from codesight_tui.core.search import ranking

    def Row(path: str) -> ChunkRow:  # noqa: N802 - reads as the row it makes
        return ChunkRow(0, path, 1, 1, "python", "", "")

    deep = ranking.FILE_EVIDENCE_TOP + 5
    filler = list(range(100, 100 + deep))  # other files' chunks, ahead of big.py's deep ones
    # big.py: its best chunk 1 at rank 3, and chunks 2 and 3 high in the static list only;
    # small.py: its best chunk 4 at rank 2 and its chunk 5 at rank 6 of BM25.
    rankings = {"bm25": [9, 4, 1, 8, 7, 5] + filler + [2, 3], "static": [9, 2, 3, 6, 1] + filler}
    rows = {1: Row("big.py"), 2: Row("big.py"), 3: Row("big.py"), 4: Row("small.py"), 5: Row("small.py")}
    rows.update({cid: Row(f"f{cid}.py") for cid in [6, 7, 8, 9, *filler]})
    fused, ranks = rrf_scores(rankings)
    ungated = ranking._file_evidence(fused, rows)
    gated = ranking._file_evidence(fused, rows, ranks)
    assert ungated[1] > fused[1] and gated[1] == fused[1]  # big.py's other chunks: evidence only ungated
    assert gated[4] == pytest.approx(fused[4] + ranking.FILE_EVIDENCE * fused[5])  # chunk 5: BM25's 6th
    assert gated[2] == fused[2] and gated[5] == fused[5]  # only a file's best chunk gains


def test_a_symbol_opens_at_its_declaration_below_a_long_doc_comment(tmp_path: Path, settings: Settings) -> None:
    # A Javadoc of 60 lines, with a code sample naming the class, fills the class's first windows:
    # the symbol's hit is the window that declares it, and Enter opens at that line.
    doc = "".join(f" * The mapper reads and writes values, note {i} of many.\n" for i in range(50))
    sample = " *<pre>\n   final Mapper mapper = new Mapper();\n   mapper.read(json);\n *</pre>\n"
    body = "".join(f"    private int field{i} = {i};\n" for i in range(30))
    c = _lexical(
        tmp_path,
        settings,
        {
            "src/Mapper.java": "package demo;\n\nimport java.io.*;\n\n/**\n" + doc + sample + " */\n"
            "public class Mapper\n{\n" + body + "}\n"
        },
    )
    declared = 5 + 1 + 50 + 4 + 1
    hit = c.search("Mapper", top_k=3, mode="bm25")[0]
    assert hit.definition and hit.start_line <= declared <= hit.end_line
    assert hit.line == declared


def test_code_named_like_a_projects_notes_is_source(tmp_path: Path, settings: Settings) -> None:
    # "CHANGES" and "HISTORY" name notes, but changeset.ex and history.lua are code: the notes'
    # penalty buried Ecto's Changeset module under a file that merely uses it.
    from codesight_tui.core.ingest.paths import DOCS, SOURCE, classify

    for notes in (
        "LICENSE",
        "LICENSE-MIT",
        "COPYING.LESSER",
        "README",
        "README.zoneinfo",
        "Changes",
        "HISTORY.rst",
        "AUTHORS",
        "pkg/CHANGELOG",
    ):
        assert classify(notes) == DOCS, notes
    for code in (
        "lib/ecto/changeset.ex",
        "lua/history.lua",
        "plugins/history.plugin.bash",
        "license_check.go",
        "src/notices.py",
        "authors_controller.rb",
    ):
        assert classify(code) == SOURCE, code
    c = _lexical(
        tmp_path,
        settings,
        {
            "lib/ecto/changeset.ex": 'defmodule Ecto.Changeset do\n  @moduledoc "Changesets filter and cast data."\n'
            "  def cast(data, params), do: {data, params}\nend\n",
            "lib/ecto/changeset/relation.ex": "defmodule Ecto.Changeset.Relation do\n  # Changeset Changeset Changeset\n"
            "  def change(changeset), do: changeset\nend\n",
        },
    )
    assert c.search("Changeset", top_k=3, mode="bm25")[0].path == "lib/ecto/changeset.ex"


def test_a_cpp_header_is_parsed_as_cpp(tmp_path: Path, settings: Settings) -> None:
    # .h is C by its name; fmt's and abseil's headers are C++, and the C grammar read fmt's
    # `template <typename Context> class basic_format_args { ... }` as no definition at all.
    from codesight_tui.core.languages import detect_language

    c_header = (
        '#ifndef UV_H\n#define UV_H\n#ifdef __cplusplus\nextern "C" {\n#endif\n'
        "struct uv_loop_s { int active; };\nint uv_run(struct uv_loop_s *loop);\n#endif\n"
    )
    assert detect_language("include/uv.h", b"", c_header) == "c"
    for cpp in (
        "template <typename T> class Box;\n",
        "namespace absl {\n}\n",
        "#include <vector>\n",
        "class Foo : public Bar {\n",
        "  std::string name;\n",
    ):
        assert detect_language("x.h", b"", "// header\n" + cpp) == "cpp", cpp
    members = "".join(f"  auto get{i}(int id) const -> int {{ return values_[id] + {i}; }}\n" for i in range(40))
    c = _lexical(
        tmp_path,
        settings,
        {
            "include/fmt/base.h": "#pragma once\n#include <string>\n\ntemplate <typename Context> class basic_format_args {\n"
            " private:\n  int values_[8];\n public:\n" + members + "};\n",
            "include/fmt/args.h": '#include "base.h"\n\ntemplate <typename Context> class dynamic_store {\n'
            "  // converts to basic_format_args, basic_format_args of the basic_format_args\n"
            "  operator basic_format_args<Context>() const { return {}; }\n};\n",
        },
    )
    hit = c.search("basic_format_args", top_k=3, mode="bm25")[0]
    assert hit.path == "include/fmt/base.h" and hit.definition and hit.scope.startswith("class basic_format_args")


C_HEADER = """/* The keyspace: every key of a database and the value it holds. */
typedef struct keyspace {
    dict *keys;     /* the keys and their values */
    dict *expires;  /* keys with an expire time */
} keyspace;

/* Look up a key in the keyspace; NULL if it does not exist. */
robj *lookupKey(keyspace *ks, robj *key);
void keyspaceAdd(keyspace *ks, robj *key, robj *value);
"""

C_INLINE = """static inline int dictIsEmpty(const dict *d) {
    return d->used == 0;
}
"""

C_SOURCE = """robj *lookupKey(keyspace *ks, robj *key) {
    dictEntry *de = dictFind(ks->keys, key->ptr);
    if (de == NULL) return NULL;
    return dictGetVal(de);
}
"""


def test_a_c_header_ranks_as_declarations_below_its_implementation(tmp_path: Path, settings: Settings) -> None:
    c = _lexical(tmp_path, settings, {"src/db.h": C_HEADER, "src/db.c": C_SOURCE, "src/dict.h": C_INLINE})
    query = "how a key is looked up in the keyspace"
    assert c.search(query, top_k=2, mode="bm25")[0].path == "src/db.c"
    assert c.search(query + " header", top_k=2, mode="bm25")[0].path == "src/db.h"  # asked for
    assert c.search("keyspace", top_k=1, mode="bm25")[0].path == "src/db.h"  # the struct it defines
    from codesight_tui.core.ingest.paths import DECLARATIONS, SOURCE
    from codesight_tui.core.search.ranking import _kind

    kinds = {
        r.path: _kind(r)
        for r in c.store.get_chunks([i for (i,) in c.store.conn.execute("SELECT id FROM chunks")]).values()
    }
    # a function defined in a header (static inline) is an implementation
    assert kinds == {"src/db.h": DECLARATIONS, "src/db.c": SOURCE, "src/dict.h": SOURCE}
    from codesight_tui.core.index.indexer import _priority
    from codesight_tui.core.ingest.paths import classify

    # the file's class is the classifier's, so headers are embedded after the code they declare
    assert classify("src/db.h", "c") == DECLARATIONS and classify("include/fmt/base.h", "cpp") == SOURCE
    assert _priority("src/db.h", 0, "c") > _priority("src/db.c", 0, "c")


def test_a_question_naming_a_module_lifts_its_root(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codesight_tui.core.search import ranking

    # Each child of src/routing/ says "route" more often than the module's root, which declares it.
    child = "use super::Router;\n\n/// Match a route: the route's path, the route's handler.\npub fn {0}(route: &str) -> bool {{ route.is_empty() }}\n"
    files = {f"src/routing/{n}.rs": child.format(n) for n in ("path_router", "method_filter", "strip_prefix")}
    files["src/routing/mod.rs"] = (
        "//! The router.\nmod path_router;\nmod method_filter;\n\npub struct Router { routes: Vec<String> }\n\n"
        "impl Router {\n    pub fn new() -> Self { Router { routes: Vec::new() } }\n}\n"
    )
    c = _lexical(tmp_path, settings, files)

    def first(query: str) -> str:
        return c.search(query, top_k=5, mode="bm25")[0].path

    assert first("how does routing work") == "src/routing/mod.rs"
    monkeypatch.setattr(ranking, "MODULE_ROOT_BONUS", 0.0)
    assert first("how does routing work") != "src/routing/mod.rs"
    said = {ranking._stem(w) for w in ("how", "does", "routing", "work")}
    assert ranking._roots_module("src/routing/mod.rs", said) and ranking._roots_module("pkg/route/route.go", said)
    assert ranking._roots_module("app/routing/__init__.py", said) and ranking._roots_module(
        "lib/routing/index.ts", said
    )
    assert not ranking._roots_module("src/routing/path_router.rs", said) and not ranking._roots_module("mod.rs", said)
    # a folder of several words is named by all of them
    both = {ranking._stem(w) for w in ("how", "does", "mcp", "server", "web", "socket", "work")}
    assert ranking._roots_module("pkg/mcp_server/__init__.py", both) and ranking._roots_module(
        "src/web-socket/index.ts", both
    )
    assert ranking._roots_module("src/HttpClient/mod.rs", both | {"http", "client"})
    assert not ranking._roots_module("pkg/mcp_server/__init__.py", {ranking._stem("server")})


def test_a_question_naming_a_module_gets_its_root_as_one_file_level_hit(tmp_path: Path, settings: Settings) -> None:
    # The root and a child, each long enough for several chunks: the root's chunks fold into one hit
    # for the whole file, which opens at its top; a child the question does not name stays chunks.
    fns = "".join(f"pub fn route_{k}(route: &str) -> bool {{\n    route.len() > {k}\n}}\n\n" for k in range(40))
    root = "//! The router: routes and their handlers.\nmod table;\n\npub struct Router {}\n\n" + fns
    c = _lexical(tmp_path, settings, {"src/routing/mod.rs": root, "src/routing/table.rs": fns})
    assert (
        len({h.start_line for h in c.search("route_3 route_30", top_k=10, mode="bm25") if h.path.endswith("mod.rs")})
        > 1
    )
    hits = c.search("how does routing work", top_k=10, mode="bm25")
    top = hits[0]
    assert (top.path, top.grain, top.whole_file, top.line, top.start_line) == (
        "src/routing/mod.rs",
        "module",
        True,
        1,
        1,
    )
    assert top.content.startswith("//! The router") and top.end_line - top.start_line == top.content.count("\n")
    assert [h.path for h in hits].count("src/routing/mod.rs") == 1
    assert len(top.parts) > 1 and all(1 <= a <= b <= 165 for a, b in top.parts)  # the chunks it holds
    assert {h.grain for h in hits[1:]} == {"chunk"} and all(h.path == "src/routing/table.rs" for h in hits[1:])
    # A symbol, or a long question, is answered at the definition's grain.
    assert {h.grain for h in c.search("Router", top_k=5, mode="bm25")} == {"chunk"}
    long = "which function checks that a route is longer than the given number of characters in routing"
    assert {h.grain for h in c.search(long, top_k=5, mode="bm25")} == {"chunk"}
    # Every surface says so: JSON, the CLI's text and the MCP server's hits.
    from codesight_tui.mcp_server.tools import _hit

    assert top.to_dict()["grain"] == "module" and (_hit(top).grain, len(_hit(top).parts)) == ("module", len(top.parts))
    # The evaluation counts a target in a chunk the hit holds, as a reader sees it listed there.
    from codesight_tui.core.apps.evaluation import Target, score

    far = top.parts[-1]
    assert score([top], [Target("src/routing/mod.rs", far[0], far[1])])["mrr@10"] == 1.0
    assert score([top], [Target("src/routing/mod.rs", 500, 600)])["mrr@10"] == 0.0


def test_tests_inside_source_files_rank_below_the_code_unless_asked_for(tmp_path: Path, settings: Settings) -> None:
    helpers = "".join(
        f"    fn helper_{k}(&self) -> usize {{\n        self.routes.len() + {k}\n    }}\n\n" for k in range(12)
    )
    router = (
        "pub struct Router {\n    routes: Vec<Route>,\n}\n\n"
        "impl Router {\n    /// Adds a route to the router.\n"
        "    pub fn at(&mut self, path: &str, route: Route) {\n        self.routes.push(route);\n    }\n\n"
        + helpers
        + "}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn router_route_route() {\n"
        + "        let mut router = Router::default();\n"
        + "".join(f'        router.at("/{k}", Route::new()); // route {k} on the router\n' for k in range(6))
        + "        assert_eq!(router.routes.len(), 6);\n    }\n"
        + "".join(f"\n    #[test]\n    fn check_{k}() {{\n        assert_eq!({k}, {k});\n    }}\n" for k in range(12))
        + "}\n"
    )
    parse = "".join(f"fn step_{k}(x: u32) u32 {{\n    return x + {k};\n}}\n\n" for k in range(12))
    clap = (
        "/// Parses the args.\npub fn parse(args: []const u8) !Args {\n    return Args.init(args);\n}\n\n"
        + parse
        + 'test "parse args parse" {\n'
        + "".join(f'    try std.testing.expect((try parse("args {k}")).len == 2); // parse args\n' for k in range(6))
        + "}\n"
        + "".join(f'\ntest "step {k}" {{\n    try std.testing.expect(step_{k}(0) == {k});\n}}\n' for k in range(12))
    )
    c = _lexical(tmp_path, settings, {"src/table.rs": router, "src/cli.zig": clap})  # names no query says
    hits = c.search("router route", top_k=5, mode="bm25")
    assert not hits[0].scope.startswith("mod tests"), [h.scope for h in hits]
    assert c.search("router route tests", top_k=5, mode="bm25")[0].scope.startswith("mod tests")
    hits = c.search("parse args", top_k=5, mode="bm25")
    assert not hits[0].scope.startswith("test "), [h.scope for h in hits]


def test_a_query_word_names_a_folder_that_begins_it(tmp_path: Path, settings: Settings) -> None:
    # "timer" names runtime/time/: one stem of four letters or more begins the other.
    body = "def track(deadline):\n    # the wheel tracks each deadline in its slot{}\n    return slot(deadline)\n"
    c = _lexical(
        tmp_path,
        settings,
        {"runtime/time/entry.py": body.format(""), "runtime/sched/entry.py": body.format(", deadline first")},
    )
    assert c.search("how the timer wheel tracks deadlines", top_k=2, mode="bm25")[0].path == "runtime/time/entry.py"
    assert c.search("how the wheel tracks deadlines", top_k=2, mode="bm25")[0].path == "runtime/sched/entry.py"


@pytest.mark.parametrize(
    ("a", "b", "meet"),
    [("time", "timer", True), ("load", "loader", True), ("config", "configur", True), ("rout", "rout", True)]
    + [("tim", "timer", False), ("io", "ios", False), ("timer", "tim", False), ("parser", "pars_", False)],
)
def test_stems_meet_equal_or_by_a_prefix_of_four_letters(a: str, b: str, meet: bool) -> None:
    assert _prefixed(a, b) is meet and _prefixed(b, a) is meet
