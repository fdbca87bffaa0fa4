"""Issue 30, item 3: a static model distilled with a code vocabulary (measured, not kept).

    python benchmarks/static_vocab.py --out DIR [--words 800] [--work /tmp/static-vocab]
    CODESIGHT_STATIC_MODEL=DIR bash benchmarks/eval_polyglot.sh --mode fast --fold A   (then B)
    CODESIGHT_STATIC_MODEL=DIR bash benchmarks/eval_devset.sh --mode fast

1. Corpus, none of it from an evaluation set: 45 Debian bookworm packages of source from each of
   Rust (librust-*-dev), Go (golang-github-*-dev), Ruby (ruby-*), PHP (php-*), JavaScript (node-*)
   and Lua (lua-*), every k-th name in sorted order, skipping any whose name contains a polyglot or
   devset repository's; Boost's headers (C++); and bench_scale.py's Python tree.
2. Words: the lowercase letter runs of the source (what MiniLM's pre-tokeniser makes of a name),
   3 to 24 letters, not in MiniLM's vocabulary, found in at least 5 packages; the ``--words`` most
   widespread.
3. model2vec distils MiniLM with them added. It appends them after MiniLM's own tokens, whose
   order it takes as frequency order, so its SIF weighting treats every added word as rare ("const"
   got a norm of 5.8 where "return" has 3.8). Each added word's norm is reset to the median norm of
   MiniLM's tokens that are as frequent in the corpus.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
POLYGLOT = HERE.parent.parent / "shared" / "eval" / "polyglot" / "repos.json"
FAMILIES = {
    "rust": r"^librust-.*-dev$",
    "go": r"^golang-github-.*-dev$",
    "ruby": r"^ruby-",
    "php": r"^php-",
    "js": r"^node-",
    "lua": r"^lua-",
}
EXT = {".rs", ".go", ".rb", ".php", ".js", ".mjs", ".ts", ".lua", ".hpp", ".h", ".c", ".cpp", ".cc", ".py"}
WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def corpus(work: Path) -> list[Path]:
    """One folder per package (downloaded and unpacked once), and the Python tree's packages."""
    src = work / "src"
    if not src.is_dir():
        excl = [r["name"].lower().replace(".", "-") for r in json.loads(POLYGLOT.read_text())]
        excl += ["rich", "jinja", "commander"]
        names = []
        for rx in FAMILIES.values():
            out = subprocess.run(
                ["apt-cache", "search", "--names-only", rx], capture_output=True, text=True, check=True
            ).stdout
            found = sorted(ln.split(" - ")[0] for ln in out.splitlines())
            found = [n for n in found if not any(e in n for e in excl) and not n.endswith("-doc")]
            names += found[:: max(1, len(found) // 45)][:45]
        names.append("libboost1.74-dev")
        deb = work / "deb"
        deb.mkdir(parents=True, exist_ok=True)
        for k in range(0, len(names), 20):  # a name apt no longer has fails its batch only
            subprocess.run(["apt-get", "download", *names[k : k + 20]], cwd=deb, capture_output=True, check=False)
        src.mkdir(parents=True, exist_ok=True)
        for f in sorted(deb.glob("*.deb")):
            subprocess.run(["dpkg-deb", "-x", str(f), str(src / f.stem)], check=False)
    sys.path.insert(0, str(HERE))
    from bench_scale import fetch

    return sorted(src.iterdir()) + sorted(fetch().iterdir())


def files_of(root: Path) -> list[Path]:
    return [Path(dp) / f for dp, _, fn in os.walk(root) for f in fn if os.path.splitext(f)[1] in EXT]


def code_words(packages: list[Path], vocab: set[str], n: int) -> list[str]:
    df: collections.Counter[str] = collections.Counter()
    tf: collections.Counter[str] = collections.Counter()
    for pkg in packages:
        seen: collections.Counter[str] = collections.Counter()
        for f in files_of(pkg):
            try:
                text = f.read_text(errors="ignore")[:400_000]
            except OSError:
                continue
            seen.update(w.lower() for w in WORD.findall(text) if 3 <= len(w) <= 24 and w.isalpha())
        tf.update(seen)
        df.update(seen.keys())
    ranked = sorted((w for w in df if df[w] >= 5 and w not in vocab), key=lambda w: (-df[w], -tf[w], w))
    return ranked[:n]


def reweight(folder: Path, base_tokens: int, packages: list[Path]) -> None:
    """Set each added word's norm to the median norm of the base tokens as frequent in the corpus."""
    from safetensors.numpy import load_file, save_file
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    emb = load_file(str(folder / "model.safetensors"))["embeddings"].astype(np.float32)
    files = [f for p in packages for f in files_of(p)]
    random.Random(0).shuffle(files)
    counts = np.zeros(len(emb), np.int64)
    for f in files[:6000]:
        try:
            np.add.at(counts, tok.encode(f.read_text(errors="ignore")[:100_000], add_special_tokens=False).ids, 1)
        except OSError:
            continue
    norm = np.linalg.norm(emb, axis=1)
    bins = np.floor(np.log10(counts + 1) * 4) / 4
    keys = [b for b in np.unique(bins[:base_tokens]) if (bins[:base_tokens] == b).sum() >= 20]
    vals = [float(np.median(norm[:base_tokens][bins[:base_tokens] == b])) for b in keys]
    for i in range(base_tokens, len(emb)):
        emb[i] *= float(np.interp(bins[i], keys, vals)) / max(float(norm[i]), 1e-6)
    save_file({"embeddings": emb.astype(np.float16)}, str(folder / "model.safetensors"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--words", type=int, default=800)
    ap.add_argument("--work", type=Path, default=Path("/tmp/static-vocab"))
    args = ap.parse_args()
    import logging

    from model2vec.distill import distill
    from tokenizers import Tokenizer

    from codesight_tui.core.index.static import PCA_DIMS
    from codesight_tui.core.ingest.tokens import resolve_model

    logging.disable(logging.WARNING)
    info = resolve_model("minilm")
    packages = corpus(args.work)
    vocab = set(Tokenizer.from_file(str(info.tokenizer_file)).get_vocab())
    words = code_words(packages, vocab, args.words)
    print(f"{len(packages)} packages; {len(words)} words, the first: {' '.join(words[:20])}")
    model = distill(model_name=info.load_from, vocabulary=words, pca_dims=PCA_DIMS, device="cpu")
    shutil.rmtree(args.out, ignore_errors=True)
    model.save_pretrained(str(args.out))
    added = model.tokenizer.get_vocab()
    reweight(args.out, min(added[w] for w in words if w in added), packages)
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
