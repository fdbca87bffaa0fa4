"""Issue 30, item 3: the static model trained on MiniLM's vectors of code (tokenlearn's idea, on a CPU).

    python benchmarks/static_learn.py --out DIR [--per-package 70] [--work /tmp/static-learn]
    CODESIGHT_STATIC_MODEL=DIR bash benchmarks/eval_polyglot.sh --mode fast --fold A   (then B)
    CODESIGHT_STATIC_MODEL=DIR bash benchmarks/eval_devset.sh --mode fast

The distilled static model knows each token only as MiniLM reads it alone. Here it learns from how
MiniLM reads whole chunks of code:

1. Texts: chunks of the corpus ``static_vocab.py`` builds (Debian packages of source in six
   languages, Boost, the 10,000-file Python tree; none from an evaluation set), cut by codesight's
   own chunker and written as the index embeds them (``embed_text``), with the doc view of each that
   has one; at most ``--per-package`` chunks of each package, chosen with a fixed seed.
2. Teacher: MiniLM through codesight's ONNX export, one vector per text (kept in ``--work``: the
   slow part, 20-25 texts/s on two cores).
3. Student: the distilled table. The teacher's vectors are mapped into the static space by least
   squares (384 -> 256, fitted on the same texts' static vectors), and the table is trained so that
   a text's mean token vector points where its mapped teacher vector does (cosine loss), held near
   the distilled table by an L2 penalty. 5% of the texts are held out and stop the training.
   ``--scale-only`` learns one weight per token instead of the whole table.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def texts_of(work: Path, per_package: int, files_per_package: int, seed: int) -> list[str]:
    out_file = work / f"texts-{per_package}-{files_per_package}-{seed}.json"
    if out_file.is_file():
        return list(json.loads(out_file.read_text()))
    from static_vocab import corpus, files_of

    from codesight_tui import CodeSight
    from codesight_tui.core.config import Settings
    from codesight_tui.core.ingest.chunker import doc_view, embed_text

    rnd = random.Random(seed)
    root = work / "root"
    shutil.rmtree(root, ignore_errors=True)
    for pkg in corpus(work.parent / "static-vocab"):
        files = sorted(files_of(pkg))
        rnd.shuffle(files)
        for f in files[:files_per_package]:
            rel = Path(pkg.name[:40]) / Path(*f.relative_to(pkg).parts[-3:])
            dest = root / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                shutil.copyfile(f, dest)
            except OSError:
                continue
    with tempfile.TemporaryDirectory(prefix="static-learn-") as tmp:
        settings = Settings(data_dir=Path(tmp) / "data", cache_dir=Path(tmp) / "cache", static_model="off")
        with CodeSight(root, settings=settings) as cs:
            cs.index(embed=False, static=False)
            rows = cs.store.conn.execute("SELECT path, scope, content FROM chunks ORDER BY id").fetchall()
    by_pkg: dict[str, list[tuple[str, str, str]]] = {}
    for path, scope, content in rows:
        by_pkg.setdefault(path.split("/", 1)[0], []).append((path.split("/", 1)[1], scope or "", content))
    texts = []
    for pkg in sorted(by_pkg):
        chunks = by_pkg[pkg]
        rnd.shuffle(chunks)
        for path, scope, content in chunks[:per_package]:
            texts.append(embed_text(path, scope, content))
            view = doc_view(content)
            if view:
                texts.append(view)
    out_file.write_text(json.dumps(texts))
    return texts


def teacher(work: Path, texts: list[str], tag: str) -> np.ndarray:
    """MiniLM's vectors of ``texts`` (ONNX), saved as they come, so a run that stops resumes."""
    from codesight_tui.core.config import Settings
    from codesight_tui.core.index.embedder import in_process
    from codesight_tui.core.index.onnx_model import for_backend
    from codesight_tui.core.ingest.tokens import resolve_model

    path = work / f"teacher-{tag}.npy"
    have = np.load(path) if path.is_file() else np.zeros((0, 384), np.float32)
    if len(have) >= len(texts):
        return have[: len(texts)]
    cache = Settings().cache_dir
    emb = in_process(for_backend(resolve_model("minilm"), "onnx", "cpu", False, Path(cache).expanduser()), "cpu")
    parts = [have]
    t0, done = time.perf_counter(), len(have)
    for k in range(len(have), len(texts), 500):
        parts.append(emb.encode(texts[k : k + 500]).astype(np.float32))
        done += len(parts[-1])
        np.save(path, np.concatenate(parts))
        print(
            f"  teacher {done}/{len(texts)} ({(done - len(have)) / (time.perf_counter() - t0):.1f} texts/s)", flush=True
        )
    return np.concatenate(parts)


def train(
    base: Path, texts: list[str], y: np.ndarray, *, l2: float, epochs: int, lr: float, scale_only: bool, seed: int
) -> tuple[np.ndarray, dict[str, float]]:
    import torch
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    torch.manual_seed(seed)
    torch.set_num_threads(2)
    e0 = load_file(str(base / "model.safetensors"))["embeddings"].astype(np.float32)
    tok = Tokenizer.from_file(str(base / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    unk = tok.token_to_id("[UNK]")
    ids = [
        np.asarray([i for i in e.ids[:254] if i != unk], np.int64)
        for e in tok.encode_batch_fast(texts, add_special_tokens=False)
    ]
    keep = np.array([len(x) > 0 for x in ids])
    ids = [x for x, k in zip(ids, keep, strict=False) if k]
    y = y[keep]
    n = len(ids)

    def bag(table: torch.Tensor, sel: list[int]) -> torch.Tensor:
        flat = torch.from_numpy(np.concatenate([ids[i] for i in sel]))
        offsets = torch.from_numpy(np.cumsum([0] + [len(ids[i]) for i in sel[:-1]]))
        return torch.nn.functional.embedding_bag(flat, table, offsets, mode="mean")

    base_t = torch.from_numpy(e0)
    with torch.no_grad():
        s0 = torch.nn.functional.normalize(bag(base_t, list(range(n))), dim=1).numpy()
    w, *_ = np.linalg.lstsq(y, s0, rcond=None)  # teacher space -> static space
    target = torch.nn.functional.normalize(torch.from_numpy(y @ w), dim=1)
    order = np.random.default_rng(seed).permutation(n)
    hold, fit = order[: n // 20].tolist(), order[n // 20 :].tolist()

    if scale_only:
        logw = torch.zeros(len(e0), 1, requires_grad=True)
        params = [logw]

        def table() -> torch.Tensor:
            return base_t * torch.exp(logw)

        def penalty(rows: torch.Tensor) -> torch.Tensor:
            return (logw[rows] ** 2).sum()
    else:
        delta = torch.zeros_like(base_t, requires_grad=True)
        params = [delta]

        def table() -> torch.Tensor:
            return base_t + delta

        def penalty(rows: torch.Tensor) -> torch.Tensor:
            return (delta[rows] ** 2).sum() / float(np.median(np.linalg.norm(e0, axis=1)) ** 2)

    def agreement(sel: list[int]) -> float:
        with torch.no_grad():
            return float(torch.nn.functional.cosine_similarity(bag(table(), sel), target[sel]).mean())

    stats = {"texts": float(n), "cos_hold_before": agreement(hold), "cos_fit_before": agreement(fit)}
    print(f"  {n} texts; held-out cosine to the mapped teacher before: {stats['cos_hold_before']:.4f}", flush=True)
    opt = torch.optim.Adam(params, lr=lr)
    best, best_state = stats["cos_hold_before"], [p.detach().clone() for p in params]
    rnd = np.random.default_rng(seed + 1)
    for epoch in range(epochs):
        rnd.shuffle(fit)
        for k in range(0, len(fit), 256):
            sel = fit[k : k + 256]
            rows = torch.from_numpy(np.unique(np.concatenate([ids[i] for i in sel])))
            loss = (1 - torch.nn.functional.cosine_similarity(bag(table(), sel), target[sel])).mean()
            loss = loss + l2 * penalty(rows) / len(sel)
            opt.zero_grad()
            loss.backward()
            opt.step()
        cos = agreement(hold)
        print(f"  epoch {epoch + 1}: held-out cosine {cos:.4f}", flush=True)
        if cos > best:
            best, best_state = cos, [p.detach().clone() for p in params]
    for p, s in zip(params, best_state, strict=False):
        p.data.copy_(s)
    stats["cos_hold_after"] = best
    stats["cos_fit_after"] = agreement(fit)
    with torch.no_grad():
        return table().numpy().astype(np.float32), stats


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--work", type=Path, default=Path("/tmp/static-learn"))
    ap.add_argument("--per-package", type=int, default=70)
    ap.add_argument("--files-per-package", type=int, default=40)
    ap.add_argument("--limit", type=int, default=0, help="use only the first N texts (0: all)")
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--scale-only", action="store_true")
    ap.add_argument("--teacher-only", action="store_true")
    ap.add_argument(
        "--samples",
        type=lambda v: [int(x) for x in v.split(",")],
        default=[0],
        help="which samples of the corpus to train on, e.g. 0,1 (each seeds its own choice of files)",
    )
    ap.add_argument("--seed", type=int, default=0, help="of the training")
    args = ap.parse_args()
    from safetensors.numpy import save_file

    from codesight_tui.core.config import Settings
    from codesight_tui.core.index.static import distill, distilled_dir
    from codesight_tui.core.ingest.tokens import resolve_model

    args.work.mkdir(parents=True, exist_ok=True)
    texts, ys = [], []
    for seed in args.samples:  # each sample: other files of every package
        some = texts_of(args.work, args.per_package, args.files_per_package, seed)
        if args.limit:
            some = some[: args.limit]
        print(f"sample {seed}: {len(some)} texts", flush=True)
        ys.append(teacher(args.work, some, f"{args.per_package}-{args.files_per_package}-{seed}"))
        texts += some
    if args.teacher_only:
        return 0
    y = np.concatenate(ys)
    info = resolve_model("minilm")
    base = distilled_dir(Path(Settings().cache_dir).expanduser(), info.name, info.load_from)
    distill(Path(info.load_from), base)
    table, stats = train(
        base, texts, y, l2=args.l2, epochs=args.epochs, lr=args.lr, scale_only=args.scale_only, seed=args.seed
    )
    shutil.rmtree(args.out, ignore_errors=True)
    shutil.copytree(base, args.out)
    save_file({"embeddings": table}, str(args.out / "model.safetensors"))
    print(json.dumps({k: round(v, 4) for k, v in stats.items()}))
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
