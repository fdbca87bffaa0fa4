"""Retrieval quality: run annotated queries through the same search users get, and score them.

The query file is a JSON list of ``{query, category, relevant: [...], secondary: [...]}``; a target
is a path (the whole file) or ``{path, start_line, end_line}`` (1-based, inclusive).

The metric, exactly: every target in ``relevant`` and ``secondary`` counts, with gain 1. A result
matches a target when the paths are equal and, if the target has a span, the line ranges overlap.
Each target takes the rank of the first result that matches it; targets first matched by the same
result count once. DCG@k sums 1/log2(rank+1) over those ranks <= k; IDCG@k sums 1/log2(i+1) for
i = 1..min(k, number of targets). MRR@10 is 1/rank of the first matching result; recall@10 the
share of targets matched within 10. Scores are averaged per query file, then across files.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from codesight_tui.core.errors import CodeSightError

METRICS = ("ndcg@10", "ndcg@5", "mrr@10", "recall@10")


@dataclass(frozen=True)
class Target:
    path: str
    start: int | None = None
    end: int | None = None

    def matches(self, path: str, start: int, end: int) -> bool:
        if path != self.path:
            return False
        return self.start is None or (start <= self.end and end >= self.start)


@dataclass
class Query:
    text: str
    category: str
    targets: list[Target] = field(default_factory=list)


def _target(raw, where: str) -> Target:
    if isinstance(raw, str) and raw:
        return Target(raw.lstrip("./"))
    if isinstance(raw, dict) and isinstance(raw.get("path"), str):
        s, e = raw.get("start_line"), raw.get("end_line")
        if s is None and e is None:
            return Target(raw["path"].lstrip("./"))
        if isinstance(s, int) and isinstance(e, int) and 1 <= s <= e:
            return Target(raw["path"].lstrip("./"), s, e)
    raise CodeSightError(f"{where}: a target must be a path or {{path, start_line, end_line}}", exit_code=2)


def load_queries(path: Path) -> list[Query]:
    """Read and validate a query file; any problem is one clear ``CodeSightError`` (exit 2)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CodeSightError(f"no such query file: {path}", exit_code=2) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CodeSightError(f"cannot read {path}: {exc}", exit_code=2) from None
    except json.JSONDecodeError as exc:
        raise CodeSightError(f"{path} is not valid JSON: {exc.msg} (line {exc.lineno})", exit_code=2) from None
    if not isinstance(data, list) or not data:
        raise CodeSightError(f"{path}: expected a non-empty JSON list of queries", exit_code=2)
    out = []
    for i, item in enumerate(data, start=1):
        where = f"{path}, query {i}"
        if not isinstance(item, dict) or not isinstance(item.get("query"), str) or not item["query"].strip():
            raise CodeSightError(f"{where}: each entry needs a non-empty \"query\" string", exit_code=2)
        targets = [_target(t, where) for key in ("relevant", "secondary") for t in item.get(key) or []]
        if not targets:
            raise CodeSightError(f"{where}: no targets in \"relevant\" or \"secondary\"", exit_code=2)
        out.append(Query(item["query"], str(item.get("category") or "uncategorized"), targets))
    return out


def score(results, targets: list[Target]) -> dict:
    """The metrics for one query. ``results``: ranked objects with path, start_line, end_line."""
    first: dict[int, int] = {}  # target index -> rank of the first result matching it
    for rank, r in enumerate(results, start=1):
        for ti, t in enumerate(targets):
            if ti not in first and t.matches(r.path, r.start_line, r.end_line):
                first[ti] = rank
    ranks = sorted(set(first.values()))  # targets first matched by the same result count once

    def ndcg(k: int) -> float:
        dcg = sum(1 / math.log2(r + 1) for r in ranks if r <= k)
        idcg = sum(1 / math.log2(i + 1) for i in range(1, min(k, len(targets)) + 1))
        return dcg / idcg

    return {
        "ndcg@10": ndcg(10), "ndcg@5": ndcg(5),
        "mrr@10": 1 / ranks[0] if ranks and ranks[0] <= 10 else 0.0,
        "recall@10": sum(1 for r in first.values() if r <= 10) / len(targets),
        "target_ranks": [first.get(i) for i in range(len(targets))],
    }


def _mean(rows: list[dict]) -> dict:
    return {m: (sum(r[m] for r in rows) / len(rows) if rows else 0.0) for m in METRICS}


def evaluate(suites: list[tuple[Path, Path]], modes: list[str], limit: int = 10, index: bool = True,
             settings=None, progress=None, processes: bool = False) -> dict:
    """Score every (query file, repository root) pair in each mode.

    Returns ``{"modes": {mode: {"overall": {...}, "categories": {cat: {...}}, "latency_ms": {...}}},
    "files": [{"file", "root", "modes": {mode: {"overall", "categories", "queries": [...]}}}]}``.
    Overall and per-category figures are the mean over files of each file's mean.
    """
    from codesight_tui.core.engine import CodeSight

    loaded = [(Path(f), Path(root), load_queries(Path(f))) for f, root in suites]
    files_out = []
    for qfile, root, queries in loaded:
        cs = CodeSight(root, settings=settings)
        cs.lexical_processes = processes
        if index:
            cs.index(progress=progress)
        per_mode = {}
        for mode in modes:
            rows, lat = [], []
            for q in queries:
                t0 = time.perf_counter()
                results = cs.search(q.text, top_k=limit, mode=mode)
                lat.append((time.perf_counter() - t0) * 1000)
                s = score(results, q.targets)
                rows.append({"query": q.text, "category": q.category, **s,
                             "results": [f"{r.path}:{r.start_line}-{r.end_line}" for r in results]})
            cats = sorted({r["category"] for r in rows})
            per_mode[mode] = {
                "overall": _mean(rows),
                "categories": {c: _mean([r for r in rows if r["category"] == c]) for c in cats},
                "queries": rows, "latency_ms": lat,
            }
        files_out.append({"file": str(qfile), "root": str(root), "modes": per_mode})
        cs.close()

    summary = {}
    for mode in modes:
        per_file = [f["modes"][mode] for f in files_out]
        cats = sorted({c for pf in per_file for c in pf["categories"]})
        lat = sorted(x for pf in per_file for x in pf["latency_ms"])
        summary[mode] = {
            "overall": {m: sum(pf["overall"][m] for pf in per_file) / len(per_file) for m in METRICS},
            "categories": {
                c: {m: sum(pf["categories"][c][m] for pf in per_file if c in pf["categories"])
                    / sum(1 for pf in per_file if c in pf["categories"]) for m in METRICS}
                for c in cats
            },
            "latency_ms": {"p50": lat[len(lat) // 2], "p95": lat[min(len(lat) - 1, int(0.95 * (len(lat) - 1)))]},
        }
    return {"modes": summary, "files": files_out}
