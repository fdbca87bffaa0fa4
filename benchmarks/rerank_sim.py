"""Issue 69's file-role steps, simulated on fast mode's saved rankings before any is built.

    bash benchmarks/eval_polyglot.sh --mode fast --fold A --json > A.json   (and B)
    python benchmarks/rerank_sim.py base|size|cover A.json B.json [--weights 0,0.1,0.2]

Each query's saved top 10 is re-ranked, and NDCG@10 is scored per category, each query counting
once (``codesight eval`` averages per repository first). The steps:
- base: after the first hit, the file that defines the base of the class it declares (``class A(B)``,
  ``extends B``, ``: B``), where exactly one file declares that name, inserted at rank 2;
- size: on questions of four or more plain words, ``1/(10 + rank)`` times ``1 + w*log(lines)``;
- cover: on the same questions, ``1/(10 + rank) + w * coverage / 10``. A file's coverage is the
  share of the question's words (cut to 5 letters) that occur anywhere in it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
from collections import defaultdict
from collections.abc import Callable
from typing import Any

_STOP = "how does do is are the a an of to in for and or by with on what where when which why from into its it be as"
STOP = frozenset((_STOP + " that this via").split())
CODE_LIKE = re.compile(r"[A-Za-z]+[A-Z_.:][A-Za-z]|^[A-Z][a-z]+[A-Z]|\w+\(\)")
DECLARES = re.compile(
    r"\b(?:class|trait|interface|struct|protocol|object|record|enum)\s+([A-Z]\w*)[^{\n]*?"
    r"(?:\(([^)]*)\)|extends\s+([\w.<>, ]+)|:\s*([\w.<>, ()]+)|implements\s+([\w.<>, ]+))"
)
DECLARATION = re.compile(
    r"(?m)^\s*(?:export\s+)?(?:(?:public|private|internal|sealed|abstract|final|open|data|static|partial)\s+)*"
    r"(?:class|trait|interface|struct|protocol|object|record|enum)\s+([A-Z]\w*)"
)


def ndcg(ranks: list[int], n: int) -> float:
    dcg = sum(1 / math.log2(r + 1) for r in set(ranks) if r <= 10)
    idcg = sum(1 / math.log2(i + 1) for i in range(1, min(10, n) + 1))
    return dcg / idcg


def read(root: str, path: str, cache: dict[str, str] = {}) -> str:  # noqa: B006 - a cache across calls
    key = os.path.join(root, path)
    if key not in cache:
        try:
            with open(key, errors="replace") as f:
                cache[key] = f.read()
        except OSError:
            cache[key] = ""
    return cache[key]


def declared(root: str, cache: dict[str, dict[str, set[str]]] = {}) -> dict[str, set[str]]:  # noqa: B006
    """Each class-like name of the repository and the files that declare it."""
    if root not in cache:
        found: dict[str, set[str]] = defaultdict(set)
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in files:
                path = os.path.relpath(os.path.join(folder, name), root)
                if os.path.getsize(os.path.join(root, path)) <= 1_000_000:
                    for m in DECLARATION.finditer(read(root, path)):
                        found[m.group(1)].add(path)
        cache[root] = found
    return cache[root]


def plain_question(query: str) -> bool:
    words = query.split()
    return len(words) >= 4 and not any(CODE_LIKE.search(w) for w in words)


def base_step(root: str, query: str, results: list[str], w: float) -> list[int]:
    order = list(range(len(results)))
    if not results or not w:
        return order
    path, span = results[0].rsplit(":", 1)
    first, last = map(int, span.split("-"))
    text = "\n".join(read(root, path).split("\n")[first - 1 : last])
    for m in DECLARES.finditer(text):
        for group in m.groups()[1:]:
            for part in re.split(r"[,\s]+(?:with|implements|extends)?\s*|,", group or ""):
                base = re.sub(r"<.*|\(.*|\[.*", "", part).strip().split(".")[-1]
                files = declared(root).get(base, set()) if re.fullmatch(r"[A-Z]\w+", base) else set()
                if len(files) == 1 and (found := next(iter(files))) != path:
                    paths = [r.rsplit(":", 1)[0] for r in results]
                    if found not in paths[:2]:
                        results.insert(1, f"{found}:0-0")
                        return list(range(len(results)))
    return order


def size_step(root: str, query: str, results: list[str], w: float) -> list[int]:
    if not (w and plain_question(query)):
        return list(range(len(results)))
    lines = [read(root, r.rsplit(":", 1)[0]).count("\n") + 1 for r in results]
    scored = [(1 / (10 + i) * (1 + w * math.log(n + 1)), i) for i, n in enumerate(lines)]
    return [i for _, i in sorted(scored, key=lambda t: -t[0])]


def cover_step(root: str, query: str, results: list[str], w: float) -> list[int]:
    asked = {x.lower()[:5] for x in re.findall(r"[A-Za-z]{3,}", query) if x.lower() not in STOP}
    if not (w and asked and plain_question(query)):
        return list(range(len(results)))
    scored = []
    for i, r in enumerate(results):
        text = re.sub(r"([a-z])([A-Z])", r"\1 \2", read(root, r.rsplit(":", 1)[0])).lower()
        held = {x[:5] for x in re.findall(r"[a-z]{3,}", text)}
        scored.append((1 / (10 + i) + w * len(asked & held) / len(asked) / 10, i))
    return [i for _, i in sorted(scored, key=lambda t: -t[0])]


def rank_of(target: Any, hits: list[str], prefix: str) -> int | None:
    path = target if isinstance(target, str) else target["path"]
    rel = path[len(prefix) :] if path.startswith(prefix) else path
    for i, hit in enumerate(hits):
        p, span = hit.rsplit(":", 1)
        first, last = map(int, span.split("-"))
        if p == rel and (isinstance(target, str) or (first <= target["end_line"] and target["start_line"] <= last)):
            return i + 1
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=("base", "size", "cover"))
    ap.add_argument("runs", nargs="+", help="codesight eval --json outputs, one a fold")
    ap.add_argument("--weights", default="0,0.05,0.1,0.2")
    args = ap.parse_args()
    step: Callable[[str, str, list[str], float], list[int]] = {
        "base": base_step,
        "size": size_step,
        "cover": cover_step,
    }[args.step]
    weights = [float(w) for w in args.weights.split(",")] if args.step != "base" else [0.0, 1.0]
    for run in args.runs:
        with open(run) as f:
            saved = json.load(f)
        for w in weights:
            sums: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
            for entry in saved["files"]:
                with open(entry["file"]) as f:
                    asked = {a["query"]: a for a in json.load(f)}
                root = entry["root"]
                inside = root.split("/repos/")[1].split("/", 1)
                prefix = inside[1] + "/" if len(inside) > 1 else ""
                for q in entry["modes"]["fast"]["queries"]:
                    targets = [t for key in ("relevant", "secondary") for t in asked[q["query"]].get(key) or []]
                    results = list(q["results"])
                    hits = [results[i] for i in step(root, q["query"], results, w)]
                    score = ndcg([r for t in targets if (r := rank_of(t, hits, prefix))], len(targets))
                    for category in (q["category"], "all"):
                        sums[category][0] += 1
                        sums[category][1] += score
            shown = " ".join(f"{c} {s / n:.4f}" for c, (n, s) in sorted(sums.items()))
            print(f"{os.path.basename(run)} {args.step} w={w}: {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
