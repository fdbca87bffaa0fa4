"""The seed design, rebuilt and scored on the devset: the starting point of the ranking table.

    python benchmarks/seed_baseline.py [--devset DIR] [--cache DIR]

Issue 5 measured a straightforward implementation of the seed design at 0.53 NDCG@10 (hybrid,
plain RRF). This script rebuilds that design with codesight's own storage and search, changing only
what the seed design did differently:

- chunks are plain 40-line windows (no scopes, no language awareness); the model truncates each
  window at its 256-token window as sentence-transformers does;
- the embedded text is the window alone (no file/scope header, no doc view);
- BM25 is FTS5 over the text as it is (no identifier expansions);
- fusion is plain RRF, k=60, top 20 from each retriever, with and without keeping only the best
  chunk of each file (the seed implementation did).

The index goes to benchmarks/.data/seed (its own data and cache directories), never to the user's.
Embedding the three packages' ~2,000 windows takes 2-3 minutes on a 2-core CPU, once.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = HERE / ".data" / "seed"
WINDOW = 40


def devset_suites(description: str) -> list[tuple[Path, Path]]:
    """``[(query file, package root)]`` of the devset's three packages, from the command line's
    ``--devset`` and ``--cache`` (fetched with the devset's fetch.sh on first use)."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--devset", type=Path, default=Path(os.environ.get("DEVSET", HERE.parent.parent / "shared/eval/devset"))
    )
    ap.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("DEVSET_CACHE", HERE.parent / ".cache/devset")),
        help="where fetch.sh puts the packages' sources",
    )
    args = ap.parse_args()
    src = args.cache / "src"
    if not (src / "commander-12.1.0" / "package").is_dir():
        subprocess.run(["bash", str(args.devset / "fetch.sh"), str(args.cache)], check=True)
    return [
        (args.devset / f"{name}.json", src / sub)
        for name, sub in (
            ("rich", "rich-13.9.4"),
            ("jinja2", "jinja2-3.1.4"),
            ("commander", "commander-12.1.0/package"),
        )
    ]


def main() -> None:
    suites = devset_suites(__doc__)
    # The index is rebuilt every run (the vectors come back from the seed's own cache), so that it
    # always holds what the patches below make, whatever an older codesight left there.
    shutil.rmtree(SEED / "data", ignore_errors=True)
    os.environ["CODESIGHT_DATA_DIR"] = str(SEED / "data")
    os.environ["CODESIGHT_CACHE_DIR"] = str(SEED / "cache")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from codesight_tui.core.apps.evaluation import evaluate
    from codesight_tui.core.config import Settings
    from codesight_tui.core.index import indexer
    from codesight_tui.core.ingest import chunker
    from codesight_tui.core.ingest.chunker import Chunk
    from codesight_tui.core.store import store

    def windows(self, files):
        out = []
        for path, language, text in files:
            lines = text.split("\n")
            out.append(
                [
                    Chunk(path, s + 1, min(s + WINDOW, len(lines)), language, "", "\n".join(lines[s : s + WINDOW]))
                    for s in range(0, len(lines), WINDOW)
                    if "\n".join(lines[s : s + WINDOW]).strip()
                ]
            )
        return out

    chunker.Chunker.chunk_many = windows
    bare = lambda path, scope, content: content  # noqa: E731
    indexer.embed_text = store.embed_text = bare
    indexer.doc_text = lambda path, scope, content, language: None  # no doc views: the window alone
    store.expansion_terms = lambda text: ""

    settings = Settings(ranking="plain", retriever_depth=20, rrf_k=60)
    res = evaluate(suites, ["hybrid", "bm25", "vector"], settings=settings)

    # The seed implementation kept the best chunk of each file: the same fused top 20, deduplicated.
    from codesight_tui.core.engine import CodeSight

    fused = CodeSight.search

    def best_per_file(self, query, top_k=10, mode=None, **kw):
        seen, best = set(), []
        for r in fused(self, query, top_k=20, mode=mode, **kw):
            if r.path not in seen:
                seen.add(r.path)
                best.append(r)
        return best[:top_k]

    CodeSight.search = best_per_file
    per_file = evaluate(suites, ["hybrid"], settings=settings, index=False)["modes"]["hybrid"]

    def line(label, m):
        return (
            f"{label:34s} "
            + " ".join(f"{m['categories'][c]['ndcg@10']:13.3f}" for c in ("architecture", "semantic", "symbol"))
            + f" {m['overall']['ndcg@10']:13.3f}"
        )

    print(f"{'NDCG@10, seed design':34s} {'architecture':>13s} {'semantic':>13s} {'symbol':>13s} {'overall':>13s}")
    for mode in ("bm25", "vector", "hybrid"):
        print(line(mode if mode != "hybrid" else "hybrid, plain RRF", res["modes"][mode]))
    print(line("hybrid, plain RRF, best per file", per_file))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
