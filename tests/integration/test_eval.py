"""`codesight eval`: the exact metric on hand-made rankings, query-file validation, and the real
command end to end (real index, real model) on the fixture repository."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HashEmbedder

from codesight_tui.core.apps.evaluation import Target, load_queries, score
from codesight_tui.core.config import Settings
from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.search.contract import SearchResult


def hit(path: str, start: int, end: int) -> SearchResult:
    return SearchResult(path, start, end, "", "python", 1.0, 1, None, "", 0)


def test_metric_exactly_as_specified() -> None:
    targets = [Target("a.py", 10, 20), Target("a.py", 15, 18), Target("b.py")]
    results = [hit("c.py", 1, 5), hit("a.py", 12, 16), hit("b.py", 1, 3)]
    s = score(results, targets)
    # a.py:12-16 is the first match of both a.py targets (counted once, at rank 2); b.py at rank 3
    assert s["target_ranks"] == [2, 2, 3]
    dcg = 1 / math.log2(3) + 1 / math.log2(4)
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert s["ndcg@10"] == pytest.approx(dcg / idcg)
    assert s["ndcg@5"] == pytest.approx(dcg / idcg)
    assert s["mrr@10"] == pytest.approx(0.5) and s["recall@10"] == 1.0


def test_metric_edges() -> None:
    t = [Target("a.py", 10, 20)]
    assert score([hit("a.py", 21, 30), hit("a.py", 1, 9)], t)["ndcg@10"] == 0  # touching is not overlapping
    assert score([hit("a.py", 20, 30)], t)["ndcg@10"] == 1.0
    late = [hit("x.py", 1, 1)] * 10 + [hit("a.py", 10, 20)]
    s = score(late, t)
    assert s["ndcg@10"] == 0 and s["mrr@10"] == 0 and s["recall@10"] == 0 and s["target_ranks"] == [11]
    # IDCG is capped at 10 targets: 12 targets all found in the top 10 give a perfect score
    many = [Target(f"f{i}.py") for i in range(12)]
    assert score([hit(f"f{i}.py", 1, 2) for i in range(10)], many)["ndcg@10"] == pytest.approx(1.0)
    # ndcg@5 only counts ranks <= 5 and caps IDCG at 5
    s = score([hit("x.py", 1, 1)] * 5 + [hit("a.py", 10, 20)], t)
    assert s["ndcg@5"] == 0 and s["ndcg@10"] == pytest.approx(1 / math.log2(7))


@pytest.mark.parametrize(
    "content, needle",
    [
        ("{not json", "not valid JSON"),
        ("{}", "non-empty JSON list"),
        ('[{"query": "x"}]', "no targets"),
        ('[{"query": "", "relevant": ["a.py"]}]', 'non-empty "query"'),
        ('[{"query": "x", "relevant": [{"path": "a.py", "start_line": 5, "end_line": 2}]}]', "a target must be"),
    ],
)
def test_bad_query_files_are_one_clear_error(tmp_path: Path, content: str, needle: str) -> None:
    f = tmp_path / "q.json"
    f.write_text(content)
    with pytest.raises(CodeSightError, match=needle) as exc:
        load_queries(f)
    assert exc.value.exit_code == 2
    with pytest.raises(CodeSightError, match="no such query file"):
        load_queries(tmp_path / "missing.json")


@pytest.mark.model
def test_eval_command_end_to_end(repo: Path, tmp_path: Path) -> None:
    queries = [
        {
            "query": "haversine",
            "category": "symbol",
            "relevant": [{"path": "src/geo.py", "start_line": 1, "end_line": 12}],
        },
        {
            "query": "check that a password matches its stored hash",
            "category": "semantic",
            "relevant": ["src/auth.py"],
            "secondary": [],
        },
    ]
    qf = tmp_path / "q.json"
    qf.write_text(json.dumps(queries))
    cmd = [sys.executable, "-m", "codesight_tui", "eval", str(qf), "--path", str(repo)]
    r = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert set(rep["modes"]) == {"hybrid", "bm25", "vector", "fast"}
    for mode in ("hybrid", "bm25"):
        sym = rep["modes"][mode]["categories"]["symbol"]
        assert sym["ndcg@10"] == 1.0 and sym["mrr@10"] == 1.0, mode
    rows = rep["files"][0]["modes"]["hybrid"]["queries"]
    assert rows[0]["target_ranks"] == [1] and rows[0]["results"][0].startswith("src/geo.py:")
    assert rep["modes"]["hybrid"]["overall"]["recall@10"] == 1.0
    r = subprocess.run([*cmd, "--mode", "bm25"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "ndcg@10" in r.stdout and "bm25" in r.stdout and "symbol" in r.stdout
    r = subprocess.run([*cmd[:-2], "--path", str(repo), "--path", str(repo)], capture_output=True, text=True)
    assert r.returncode == 2 and "once per query file" in r.stderr and "Traceback" not in r.stderr


def _collection(tmp_path: Path) -> Path:
    """A two-repository eval directory in the polyglot layout: one target written from the
    checkout (src/pkg/...), one from the benchmark root."""
    d = tmp_path / "set"
    py = d / "repos" / "pyrepo" / "src" / "pkg"
    js = d / "repos" / "jsrepo"
    py.mkdir(parents=True)
    js.mkdir(parents=True)
    (py / "retry.py").write_text("class RetryPolicy:\n    def delays(self):\n        return [1, 2, 4]\n")
    (py / "util.py").write_text("def slugify(text):\n    return text.lower().replace(' ', '-')\n")
    (js / "parser.js").write_text("function parseArgs(argv) {\n  return argv.slice(2);\n}\n")
    (d / "repos.json").write_text(
        json.dumps(
            [
                {"name": "pyrepo", "language": "python", "benchmark_root": "src/pkg"},
                {"name": "jsrepo", "language": "javascript", "benchmark_root": None},
            ]
        )
    )
    (d / "annotations").mkdir()
    (d / "annotations" / "pyrepo.json").write_text(
        json.dumps(
            [
                {"query": "RetryPolicy", "category": "symbol", "relevant": ["src/pkg/retry.py"]},
                {
                    "query": "slugify",
                    "category": "symbol",
                    "relevant": [{"path": "util.py", "start_line": 1, "end_line": 2}],
                },
            ]
        )
    )
    (d / "annotations" / "jsrepo.json").write_text(
        json.dumps([{"query": "parseArgs", "category": "symbol", "relevant": ["parser.js"]}])
    )
    (d / "published.json").write_text(
        json.dumps({"methods": {"peer": {"repos": {"pyrepo": {"ndcg10": 0.5}, "jsrepo": {"ndcg10": 1.0}}}}})
    )
    return d


def test_eval_over_a_multi_repository_directory(tmp_path: Path) -> None:
    d = _collection(tmp_path)
    cmd = [sys.executable, "-m", "codesight_tui", "eval", str(d), "--mode", "bm25"]
    r = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert [f["name"] for f in rep["files"]] == ["pyrepo", "jsrepo"]
    assert rep["modes"]["bm25"]["overall"]["ndcg@10"] == 1.0  # targets from the checkout or the root both match
    langs = rep["modes"]["bm25"]["languages"]
    assert set(langs) == {"python", "javascript"} and langs["python"]["repos"] == 1
    assert rep["published"]["peer"]["ndcg@10"] == 0.75 and rep["published"]["peer"]["languages"]["python"] == 0.5
    assert rep["files"][0]["modes"]["bm25"]["queries"][0]["target_ranks"] == [1]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "by language" in r.stdout and "peer" in r.stdout and "javascript" in r.stdout
    r = subprocess.run([*cmd, "--repo", "jsrepo", "--json", "--no-index"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and [f["name"] for f in json.loads(r.stdout)["files"]] == ["jsrepo"]
    assert json.loads(r.stdout)["published"]["peer"]["ndcg@10"] == 1.0  # peers over the same subset
    r = subprocess.run([*cmd, "--fold", "B"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and "no folds.json" in r.stderr
    (d / "folds.json").write_text(json.dumps({"_how": "alternating", "A": ["pyrepo"], "B": ["jsrepo"]}))
    r = subprocess.run([*cmd, "--fold", "b", "--json", "--no-index"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and [f["name"] for f in json.loads(r.stdout)["files"]] == ["jsrepo"]
    for bad, msg in (
        (["--repo", "nope"], "no repository named"),
        (["--coverage", "150"], "--coverage"),
        (["--fold", "C"], "no fold 'C'"),
        (["--path", "."], "--path goes with query files"),
    ):
        r = subprocess.run([*cmd, *bad], capture_output=True, text=True, timeout=600)
        assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr, (bad, r.stderr)
    r = subprocess.run([sys.executable, "-m", "codesight_tui", "eval", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 2 and "repos.json" in r.stderr


@pytest.mark.model
def test_coverage_levels_rebuild_vectors_most_valuable_first(
    tmp_path: Path, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    from codesight_tui import CodeSight
    from codesight_tui.core.apps.evaluation import evaluate, load_collection

    d = _collection(tmp_path)
    suites, published = load_collection(d, ["pyrepo"])
    rep = evaluate(suites, ["hybrid"], settings=settings, coverage=[0.0, 0.5, 1.0], published=published)
    assert list(rep["modes"]) == ["hybrid@0%", "hybrid@50%", "hybrid@100%"]
    cs = CodeSight(suites[0].root, settings=settings, embedder=hash_embedder)
    cs.index()
    total = cs.store.counts()["chunks"]
    assert cs.limit_vectors(0.5) == round(total * 0.5) and cs.status()["pending"] == total - round(total * 0.5)
    assert cs.limit_vectors(0.0) == 0 and cs.storage.vectors.count() == 0
    cs.index()
    assert cs.status()["pending"] == 0
