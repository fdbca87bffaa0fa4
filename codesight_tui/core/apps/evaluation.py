"""Retrieval quality: run annotated queries through the same search users get, and score them.

The query file is a JSON list of ``{query, category, relevant: [...], secondary: [...]}``; a target
is a path (the whole file), ``{path, start_line, end_line}`` (1-based, inclusive), or for a document
``{path, page}`` (PDF) or ``{path, slide}`` (PPTX).

The metric, exactly: every target in ``relevant`` and ``secondary`` counts, with gain 1. A result
matches a target when the paths are equal and, if the target has a span, the line ranges overlap
(a page or slide: the hit is on it); a hit for a whole file, where the lines of its first chunk or
of a chunk it holds (``SearchResult.parts``, listed with it) overlap.
Each target takes the rank of the first result that matches it; targets first matched by the same
result count once. DCG@k sums 1/log2(rank+1) over those ranks <= k; IDCG@k sums 1/log2(i+1) for
i = 1..min(k, number of targets). MRR@10 is 1/rank of the first matching result; recall@10 the
share of targets matched within 10. Scores are averaged per query file, then across files.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codesight_tui.core.errors import UsageError
from codesight_tui.core.modes import FAST, answer
from codesight_tui.core.search.contract import SearchRequest

if TYPE_CHECKING:
    from codesight_tui.core.config import Settings
    from codesight_tui.core.engine import CodeSight
    from codesight_tui.core.index.indexer import ProgressFn

Row = dict[str, Any]  # one query's or one file's figures, as JSON

METRICS = ("ndcg@10", "ndcg@5", "mrr@10", "recall@10")


@dataclass(frozen=True)
class Target:
    path: str
    start: int | None = None
    end: int | None = None
    page: int | None = None  # a PDF's page, or
    slide: int | None = None  # a deck's slide: a document target names where a person looks

    def matches(self, path: str, start: int, end: int, page: int | None = None, slide: int | None = None) -> bool:
        if path != self.path:
            return False
        if self.page is not None:
            return page == self.page
        if self.slide is not None:
            return slide == self.slide
        return self.start is None or self.end is None or (start <= self.end and end >= self.start)


@dataclass
class Query:
    text: str
    category: str
    targets: list[Target] = field(default_factory=list)


def _target(raw: object, where: str) -> Target:
    if isinstance(raw, str) and raw:
        return Target(raw.lstrip("./"))
    if isinstance(raw, dict) and isinstance(raw.get("path"), str):
        for key in ("page", "slide"):
            if isinstance(raw.get(key), int) and raw[key] >= 1:
                return Target(raw["path"].lstrip("./"), **{key: raw[key]})
        s, e = raw.get("start_line"), raw.get("end_line")
        if s is None and e is None:
            return Target(raw["path"].lstrip("./"))
        if isinstance(s, int) and isinstance(e, int) and 1 <= s <= e:
            return Target(raw["path"].lstrip("./"), s, e)
    raise UsageError(
        f"{where}: a target must be a path, {{path, start_line, end_line}}, {{path, page}} or {{path, slide}}"
    )


def load_queries(path: Path, prefix: str = "") -> list[Query]:
    """Read and validate a query file; any problem is one clear ``CodeSightError`` (exit 2).

    ``prefix``: the indexed root's path inside the checkout the targets were written against
    (``src/flask``); a target under it is made relative to the indexed root."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"no such query file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path} is not valid JSON: {exc.msg} (line {exc.lineno})") from None
    if not isinstance(data, list) or not data:
        raise UsageError(f"{path}: expected a non-empty JSON list of queries")
    out = []
    for i, item in enumerate(data, start=1):
        where = f"{path}, query {i}"
        if not isinstance(item, dict) or not isinstance(item.get("query"), str) or not item["query"].strip():
            raise UsageError(f'{where}: each entry needs a non-empty "query" string')
        targets = [_target(t, where) for key in ("relevant", "secondary") for t in item.get(key) or []]
        if prefix:
            cut = prefix.strip("/") + "/"
            targets = [
                Target(t.path[len(cut) :], t.start, t.end, t.page, t.slide) if t.path.startswith(cut) else t
                for t in targets
            ]
        if not targets:
            raise UsageError(f'{where}: no targets in "relevant" or "secondary"')
        out.append(Query(item["query"], str(item.get("category") or "uncategorized"), targets))
    return out


def score(results: Iterable[Any], targets: list[Target]) -> Row:
    """The metrics for one query. ``results``: ranked objects with path, start_line, end_line."""
    first: dict[int, int] = {}  # target index -> rank of the first result matching it
    for rank, r in enumerate(results, start=1):
        # A hit for a whole file shows its first lines and the chunks it holds (``parts``).
        spans = [(r.start_line, r.end_line), *getattr(r, "parts", ())]
        for ti, t in enumerate(targets):
            if ti not in first and any(
                t.matches(r.path, start, end, getattr(r, "page", None), getattr(r, "slide", None))
                for start, end in spans
            ):
                first[ti] = rank
    ranks = sorted(set(first.values()))  # targets first matched by the same result count once

    def ndcg(k: int) -> float:
        dcg = sum(1 / math.log2(r + 1) for r in ranks if r <= k)
        idcg = sum(1 / math.log2(i + 1) for i in range(1, min(k, len(targets)) + 1))
        return dcg / idcg

    return {
        "ndcg@10": ndcg(10),
        "ndcg@5": ndcg(5),
        "mrr@10": 1 / ranks[0] if ranks and ranks[0] <= 10 else 0.0,
        "recall@10": sum(1 for r in first.values() if r <= 10) / len(targets),
        "target_ranks": [first.get(i) for i in range(len(targets))],
    }


def _mean(rows: list[Row]) -> dict[str, float]:
    return {m: (sum(r[m] for r in rows) / len(rows) if rows else 0.0) for m in METRICS}


@dataclass
class Suite:
    """One query file and the repository root its targets are relative to."""

    queries: Path
    root: Path
    name: str = ""
    language: str = ""
    prefix: str = ""  # the root's path inside the checkout, where targets are written from the checkout


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"no {what} at {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read {what} {path}: {exc}") from None


def is_collection(path: Path) -> bool:
    """Whether ``path`` is a directory in the multi-repository layout (``repos.json`` beside
    ``annotations/``)."""
    return path.is_dir() and (path / "repos.json").is_file() and (path / "annotations").is_dir()


def load_fold(path: Path, fold: str) -> list[str]:
    """The repositories of one fold of ``folds.json`` in a collection (``{"A": [names], "B": ...}``):
    tune on one fold, confirm on the other."""
    folds = _read_json(path / "folds.json", "fold list") if (path / "folds.json").is_file() else None
    if not isinstance(folds, dict):
        raise UsageError(f"{path} has no folds.json to take fold {fold!r} from")
    named = {k.lower(): v for k, v in folds.items() if not k.startswith("_") and isinstance(v, list)}
    if fold.lower() not in named:
        raise UsageError(f"no fold {fold!r} in {path / 'folds.json'} (there are: {', '.join(sorted(named))})")
    return [str(n) for n in named[fold.lower()]]


def load_collection(
    path: Path, names: list[str] | None = None, languages: list[str] | None = None, fold: str | None = None
) -> tuple[list[Suite], Row]:
    """The suites of a multi-repository eval directory, and its published peers' scores.

    Layout: ``repos.json`` (``[{name, language, benchmark_root}, ...]``), ``annotations/<name>.json``
    (query files), ``repos/<name>/<benchmark_root>/`` (the code; targets are relative to it) and an
    optional ``published.json`` (``{"methods": {key: {"repos": {name: {"ndcg10": x}}}}}``).
    Targets may be written from the checkout (``src/flask/app.py``) or from the benchmark root
    (``app.py``). ``names``, ``languages`` and ``fold`` (of ``folds.json``) keep only those
    repositories."""
    path = Path(path)
    repos = _read_json(path / "repos.json", "repository list")
    if not isinstance(repos, list):
        raise UsageError(f"{path / 'repos.json'}: expected a JSON list of repositories")
    known = {r.get("name") for r in repos if isinstance(r, dict)}
    for n in names or []:
        if n not in known:
            raise UsageError(f"no repository named {n!r} in {path / 'repos.json'}")
    in_fold = set(load_fold(path, fold)) if fold else set()
    suites = []
    for r in repos:
        if not isinstance(r, dict) or not isinstance(r.get("name"), str):
            raise UsageError(f'{path / "repos.json"}: each entry needs a "name"')
        name, lang = r["name"], str(r.get("language") or "")
        if (names and name not in names) or (languages and lang not in languages) or (in_fold and name not in in_fold):
            continue
        root = path / "repos" / name
        if r.get("benchmark_root"):
            root = root / r["benchmark_root"]
        if not root.is_dir():
            raise UsageError(f"sources of {name} missing: {root} (unpack the set first)")
        suites.append(Suite(path / "annotations" / f"{name}.json", root, name, lang, r.get("benchmark_root") or ""))
    if not suites:
        raise UsageError(f"no repositories selected in {path}")
    published = {}
    if (path / "published.json").is_file():
        methods = (_read_json(path / "published.json", "published scores") or {}).get("methods") or {}
        published = {
            key: {
                n: v["ndcg10"]
                for n, v in (m.get("repos") or {}).items()
                if isinstance(v, dict) and isinstance(v.get("ndcg10"), (int, float))
            }
            for key, m in methods.items()
            if isinstance(m, dict)
        }
    return suites, published


def _group_means(per_file: list[Row], key: Callable[[Row], str]) -> Row:
    """Mean over files of each file's overall metrics, per group (``key(file)``)."""
    groups: dict[str, list[Row]] = {}
    for pf in per_file:
        groups.setdefault(key(pf), []).append(pf["overall"])
    return {
        g: {m: sum(r[m] for r in rows) / len(rows) for m in METRICS} | {"repos": len(rows)}
        for g, rows in sorted(groups.items())
    }


def evaluate(
    suites: Iterable[Suite | tuple[Path, Path]],
    modes: list[str],
    limit: int = 10,
    index: bool = True,
    settings: Settings | None = None,
    progress: ProgressFn | None = None,
    processes: bool = False,
    published: Row | None = None,
    coverage: list[float] | None = None,
    on_suite: Callable[[str, int, int], None] | None = None,
) -> Row:
    """Score every suite (a ``Suite`` or a (query file, repository root) pair) in each mode.

    Returns ``{"modes": {mode: {"overall": {...}, "categories": {...}, "languages": {...},
    "latency_ms": {...}}}, "files": [{"file", "root", "name", "language", "modes": {mode: {"overall",
    "categories", "queries": [...]}}}], "published": {...}}``. Overall, per-category and
    per-language figures are the mean over files of each file's mean.

    ``index`` brings each index up to date first; vectors are embedded only if a mode uses them.
    Mode ``fast`` is hybrid search from BM25 and the static tier alone (``search(vectors=Vectors.STATIC)``,
    what a fresh CLI process answers with); it needs no full-model vectors.
    ``coverage`` (fractions of the chunks that have vectors, e.g. ``[0, 0.1, 1]``) scores the
    modes once per fraction, as modes named ``hybrid@10%``: each repository's vectors are rebuilt
    up to that share, most valuable first as indexing orders them (cached vectors make it cheap).
    ``on_suite(name, n, total)`` is called as each repository starts.
    """
    from codesight_tui.core.engine import CodeSight

    given = [s if isinstance(s, Suite) else Suite(Path(s[0]), Path(s[1])) for s in suites]
    loaded = [(s, load_queries(s.queries, s.prefix)) for s in given]
    wants_vectors = coverage is not None or any(m in ("hybrid", "vector") for m in modes)
    wants_static = coverage is not None or any(m in ("hybrid", FAST) for m in modes)
    levels = [None] if coverage is None else list(coverage)
    labels = [_label(m, lv) for lv in levels for m in modes]
    files_out: list[Row] = []
    for n, (suite, queries) in enumerate(loaded, start=1):
        cs = CodeSight(suite.root, settings=settings, lexical_processes=processes)
        if on_suite is not None:
            on_suite(suite.name or suite.root.name, n, len(loaded))
        if index:
            cs.index(progress=progress, embed=wants_vectors, static=wants_static)
        per_mode: dict[str, Row] = {}
        for level in levels:
            if level is not None:
                cs.limit_vectors(level)
            for mode in modes:
                per_mode[_label(mode, level)] = _run_queries(cs, queries, mode, limit)
        files_out.append(
            {
                "file": str(suite.queries),
                "root": str(suite.root),
                "name": suite.name,
                "language": suite.language,
                "modes": per_mode,
            }
        )
        cs.close()

    summary = {label: _summary(files_out, label) for label in labels}
    out = {"modes": summary, "files": files_out}
    if published:
        out["published"] = _published_summary(published, files_out)
    return out


def _summary(files_out: list[Row], label: str) -> Row:
    """One mode's figures over every file: the mean of each file's mean, overall, per category and
    per language, and the latency of every query."""
    per_file = [f["modes"][label] | {"language": f["language"]} for f in files_out]
    cats = sorted({c for pf in per_file for c in pf["categories"]})
    lat = sorted(x for pf in per_file for x in pf["latency_ms"])
    return {
        "overall": {m: sum(pf["overall"][m] for pf in per_file) / len(per_file) for m in METRICS},
        "categories": {
            c: {
                m: sum(pf["categories"][c][m] for pf in per_file if c in pf["categories"])
                / sum(1 for pf in per_file if c in pf["categories"])
                for m in METRICS
            }
            for c in cats
        },
        "languages": _group_means(per_file, lambda pf: pf["language"] or "?"),
        "latency_ms": {"p50": lat[len(lat) // 2], "p95": lat[min(len(lat) - 1, int(0.95 * (len(lat) - 1)))]},
    }


def _label(mode: str, level: float | None) -> str:
    """A mode's name in the report: ``hybrid``, or ``hybrid@10%`` at a coverage level."""
    return mode if level is None else f"{mode}@{level:.0%}"


def _run_queries(cs: CodeSight, queries: list[Query], mode: str, limit: int) -> Row:
    rows, lat = [], []
    for q in queries:
        t0 = time.perf_counter()
        retrieval_mode, vectors = answer(mode)
        results = cs.search(SearchRequest(q.text, retrieval_mode, vectors, limit=limit))
        lat.append((time.perf_counter() - t0) * 1000)
        s = score(results, q.targets)
        rows.append(
            {
                "query": q.text,
                "category": q.category,
                **s,
                "results": [f"{r.path}:{r.start_line}-{r.end_line}" for r in results],
            }
        )
    cats = sorted({r["category"] for r in rows})
    return {
        "overall": _mean(rows),
        "categories": {c: _mean([r for r in rows if r["category"] == c]) for c in cats},
        "queries": rows,
        "latency_ms": lat,
    }


def _published_summary(published: Row, files_out: list[Row]) -> Row:
    """Each published method's NDCG@10 over the repositories evaluated here (those it has), overall
    and per language, so that a subset is compared with the same subset."""
    out = {}
    for key, scores in published.items():
        have = [f for f in files_out if f["name"] in scores]
        if not have:
            continue
        langs: dict[str, list[float]] = {}
        for f in have:
            langs.setdefault(f["language"] or "?", []).append(scores[f["name"]])
        out[key] = {
            "ndcg@10": sum(scores[f["name"]] for f in have) / len(have),
            "repos": len(have),
            "languages": {lang: sum(v) / len(v) for lang, v in sorted(langs.items())},
            "per_repo": {f["name"]: scores[f["name"]] for f in have},
        }
    return out
