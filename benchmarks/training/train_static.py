"""Issue 49: the static tier trained for retrieval on (description, code) pairs.

    python benchmarks/training/corpus.py                     # the pairs (see its docstring)
    python benchmarks/training/train_static.py --out DIR     # the model, a model2vec folder
    CODESIGHT_STATIC_MODEL=DIR bash benchmarks/eval_polyglot.sh --mode fast --fold A   (then B)
    CODESIGHT_STATIC_MODEL=DIR bash benchmarks/eval_devset.sh --mode fast

The student is the distilled table itself, read exactly as ``core.static.StaticEmbedder`` reads it:
a text's vector is the mean of its tokens' rows (no special tokens, unknown tokens dropped, at most
``max_length`` tokens), normalised. So the table is an ``EmbeddingBag(mode="mean")`` and training
changes nothing at query or index time but the numbers in it.

Loss: symmetric in-batch MultipleNegativesRankingLoss (each description against every code of
its batch, and each code against every description), scale 20, Adam. 2% of the pairs are held out
for an in-distribution MRR@10, printed after every epoch. Each epoch ends in a checkpoint in
``$CODESIGHT_TRAIN_DIR/static-<run>/`` (table and optimiser), so a run stopped anywhere resumes
from its last epoch. ``--resif`` puts each row back at its distilled norm afterwards (the
distillation's SIF weighting lives in the norms).
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

import numpy as np
from teacher import load as load_teacher
from teacher import load_pairs

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
WORK = Path(os.environ.get("CODESIGHT_TRAIN_DIR", Path.home() / ".cache" / "codesight-train"))


MODEL_CARD = """# codesight's static model

A model2vec static model: all-MiniLM-L6-v2's tokenizer, its vocabulary distilled from the model
(model2vec, PCA to 256 dimensions, SIF weighting), then trained contrastively on 144,514
(description, code) pairs mined from 318 permissively licensed public repositories in 20 languages
(symmetric in-batch MultipleNegativesRankingLoss, scale 20, batch 512, Adam at 0.003, 2 epochs),
with half the loss a distillation term: the bundled all-MiniLM-L6-v2's in-batch similarities of
40,000 of the pairs as soft targets. The shipped table is the mean of two such runs (seeds 0 and 1).
No evaluation repository, nor any file sharing content with one, is in the data.

Rebuilt by `bash benchmarks/training/build_static.sh` (the corpus manifest is
benchmarks/training/manifest.json). `relevance_floor` in config.json is the distilled model's
static relevance floor carried over by quantile on unrelated pairs. all-MiniLM-L6-v2 is Apache-2.0.
"""


def base_model_dir() -> Path:
    """The distilled static model codesight makes on first use (distilled here if missing)."""
    from codesight_tui.core.config import Settings
    from codesight_tui.core.process.models import model_info, static_model_path

    settings = Settings(static_model="distilled")  # the distilled one, whatever CODESIGHT_STATIC_MODEL says
    return static_model_path(settings, model_info(settings))


def tokenize(texts: list[str], base: Path) -> list[np.ndarray]:
    from codesight_tui.core.index.static import StaticEmbedder

    enc = StaticEmbedder(base)
    out = []
    for k in range(0, len(texts), 4096):
        part = [t[: enc.max_chars] for t in texts[k : k + 4096]]
        for e in enc.tokenizer.encode_batch_fast(part, add_special_tokens=False):
            ids = np.asarray(e.ids[: enc.max_length], dtype=np.int64)
            if enc.unk_id is not None:
                ids = ids[ids != enc.unk_id]
            out.append(ids)
    return out


def bag(rows: list[np.ndarray]):
    import torch

    lengths = [max(len(r), 1) for r in rows]
    flat = np.concatenate([r if len(r) else np.zeros(1, np.int64) for r in rows])
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    return torch.from_numpy(flat), torch.from_numpy(offsets.astype(np.int64))


def encode(emb, rows: list[np.ndarray]):
    import torch.nn.functional as F

    ids, offsets = bag(rows)
    return F.normalize(emb(ids, offsets), dim=-1)


def mrr_at_10(emb, q: list[np.ndarray], d: list[np.ndarray]) -> float:
    import torch

    with torch.no_grad():
        qv, dv = encode(emb, q), encode(emb, d)
        sims = qv @ dv.T
        ranks = (sims > sims.diag()[:, None]).sum(dim=1) + 1
        return float(torch.where(ranks <= 10, 1.0 / ranks, torch.zeros_like(ranks, dtype=torch.float)).mean())


def relevance_floor(
    base_table: np.ndarray,
    table: np.ndarray,
    q: list[np.ndarray],
    d: list[np.ndarray],
    base_rows: tuple[list[np.ndarray], list[np.ndarray]] | None = None,
) -> float:
    """The trained model's static relevance floor: the distilled model's (the searcher's
    STATIC_RELEVANCE_FLOOR) carried over by quantile on unrelated pairs (each held-out description
    against every other pair's code). The floor is there to drop a query whose best hit is no
    better than an unrelated one: the trained model passes the same share of unrelated pairs as
    the distilled one did. (Training moves unrelated pairs from about 0.33 to about 0, true pairs
    from 0.57 to 0.51: a floor carried over on true pairs dropped plain questions whole.)"""
    import torch

    from codesight_tui.core.fusion import STATIC_RELEVANCE_FLOOR

    def unrelated(weights: np.ndarray, q: list[np.ndarray], d: list[np.ndarray]) -> np.ndarray:
        emb = torch.nn.EmbeddingBag(weights.shape[0], weights.shape[1], mode="mean")
        emb.weight.data = torch.from_numpy(weights.astype(np.float32))
        with torch.no_grad():
            sims = (encode(emb, q) @ encode(emb, d).T).numpy()
        return sims[~np.eye(len(q), dtype=bool)]

    # ``base_rows``: the pairs as the distilled model's tokenizer reads them, where ``table`` has another
    below = float((unrelated(base_table, *(base_rows or (q, d))) < STATIC_RELEVANCE_FLOOR).mean())
    return round(float(np.quantile(unrelated(table, q, d), below)), 4)


def floor_reference(
    base: Path, distilled: Path, table: np.ndarray, held_out: list[dict[str, str]]
) -> tuple[np.ndarray, tuple[list[np.ndarray], list[np.ndarray]] | None]:
    """What ``relevance_floor`` carries the distilled model's floor over from: its table, and the
    held-out pairs as its tokenizer reads them where training started from another model."""
    if base == distilled:
        return table, None
    from safetensors.numpy import load_file

    rows = (tokenize([p["query"] for p in held_out], distilled), tokenize([p["doc"] for p in held_out], distilled))
    return load_file(str(distilled / "model.safetensors"))["embeddings"].astype(np.float32), rows


def copy_base(base: Path, out: Path, distilled: Path) -> None:
    """The base model's tokenizer and configuration, and a model card, beside the trained table."""
    for name in ("tokenizer.json", "modules.json", "config.json"):
        shutil.copy(base / name, out / name)
    if base != distilled:  # a trial from another start: the shipped model's card would not be true of it
        (out / "README.md").write_text(f"A static model trained by train_static.py from {base.name}; not shipped.\n")
    else:  # its config names this machine's path to the tokenizer
        (out / "README.md").write_text(MODEL_CARD)
        config = json.loads((out / "config.json").read_text())
        config["tokenizer_name"] = "sentence-transformers/all-MiniLM-L6-v2"
        (out / "config.json").write_text(json.dumps(config, indent=4) + "\n")


def write_floor(model_dir: Path, floor: float) -> None:
    config_file = model_dir / "config.json"
    config = json.loads(config_file.read_text()) if config_file.is_file() else {}
    config["relevance_floor"] = floor
    config_file.write_text(json.dumps(config, indent=4) + "\n")


def batches(
    train: list[int], pairs: list[dict[str, str]], size: int, group: str, rnd: random.Random
) -> list[list[int]]:
    """One epoch's batches, in a shuffled order. With ``group``, each batch is filled from one
    repository (or language) while it has a batch's worth of pairs left, and what is left over of
    every group is shuffled together into mixed batches."""
    order = train[:]
    rnd.shuffle(order)
    if not group:
        return [order[k : k + size] for k in range(0, len(order) - size + 1, size)]
    by: dict[str, list[int]] = {}
    for i in order:
        by.setdefault(pairs[i].get(group, ""), []).append(i)
    out, rest = [], []
    for members in by.values():
        full = len(members) - len(members) % size
        out += [members[k : k + size] for k in range(0, full, size)]
        rest += members[full:]
    rnd.shuffle(rest)
    out += [rest[k : k + size] for k in range(0, len(rest) - size + 1, size)]
    rnd.shuffle(out)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--pairs", type=Path, default=WORK / "pairs.jsonl")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--lr", type=float, default=0.003)
    ap.add_argument("--scale", type=float, default=20.0)
    ap.add_argument("--resif", action="store_true", help="rows back at their distilled norms afterwards")
    ap.add_argument("--limit", type=int, default=0, help="use only the first N pairs (a quick check)")
    ap.add_argument("--where", default="", help="only pairs whose doc sits here: start, inner, module (comma list)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--teacher",
        type=float,
        default=0.0,
        help="weight of a distillation term: the full model's in-batch similarities (teacher.py) as soft targets",
    )
    ap.add_argument("--teacher-sample", type=int, default=0, help="teacher.py's --sample")
    ap.add_argument(
        "--teacher-scale", type=float, default=20.0, help="the teacher's similarities times this, softmaxed"
    )
    ap.add_argument(
        "--group",
        default="",
        choices=["", "repo", "lang"],
        help="fill each batch from one repository (or language) where it can: harder in-batch negatives",
    )
    ap.add_argument(
        "--extra",
        type=Path,
        default=None,
        help="more pairs to train on (commits.py's), after the held-out ones are drawn from --pairs",
    )
    ap.add_argument("--extra-limit", type=int, default=0, help="use only the first N of --extra")
    ap.add_argument(
        "--extra-teacher-sample",
        type=int,
        default=0,
        help="train on the N pairs of --extra that teacher.py --pairs EXTRA --where commit --sample N "
        "embedded, each with the distillation term",
    )
    ap.add_argument(
        "--base",
        type=Path,
        default=None,
        help="the static model to start from (default: the distilled one); any tokenizer",
    )
    ap.add_argument(
        "--calibrate",
        action="store_true",
        help="only set the relevance floor of the model already at --out (no training)",
    )
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F
    from safetensors.numpy import load_file, save_file

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    distilled = base_model_dir()
    base = args.base.resolve() if args.base is not None else distilled
    pairs = load_pairs(args.pairs, args.where)
    if args.limit:
        pairs = pairs[: args.limit]
    key = hashlib.sha1(
        f"{args.pairs.stat().st_size}:{len(pairs)}:{args.batch}:{args.lr}:{args.scale}:{args.seed}"
        f":{args.where}:{args.epochs}:{args.group}:{args.teacher}:{args.teacher_scale}:{args.teacher_sample}"
        f":{base.name}"
        f"{f':{args.extra.stat().st_size}:{args.extra_limit}:{args.extra_teacher_sample}' if args.extra else ''}".encode()
    ).hexdigest()[:10]
    run = WORK / f"static-{key}"
    run.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    q_rows = tokenize([p["query"] for p in pairs], base)
    d_rows = tokenize([p["doc"] for p in pairs], base)
    print(
        f"{len(pairs):,} pairs tokenised in {time.perf_counter() - t0:.0f} s "
        f"(mean tokens: query {np.mean([len(r) for r in q_rows]):.1f}, code {np.mean([len(r) for r in d_rows]):.1f})",
        flush=True,
    )
    order = list(range(len(pairs)))
    random.Random(args.seed).shuffle(order)
    n_val = max(256, len(order) // 50)
    val, train = order[:n_val][:2000], order[n_val:]
    n_own = len(pairs)
    if args.extra is not None and not args.calibrate:  # trained on, never held out: the held-out MRR stays comparable
        extra = load_pairs(args.extra, "")
        if args.extra_teacher_sample:
            if not args.teacher:
                sys.exit("--extra-teacher-sample is the distillation term's: give --teacher too")
            got_x = load_teacher(args.extra, "commit", len(extra), args.extra_teacher_sample)
            if got_x is None:
                sys.exit("no teacher vectors for --extra: run teacher.py --pairs EXTRA --where commit --sample N")
            extra = [extra[i] for i in got_x[0]]
        elif args.extra_limit:
            extra = extra[: args.extra_limit]
        q_rows += tokenize([p["query"] for p in extra], base)
        d_rows += tokenize([p["doc"] for p in extra], base)
        pairs += extra
        train += range(n_own, len(pairs))
        print(f"{len(extra):,} more pairs from {args.extra}", flush=True)

    tq = td = None
    if args.teacher:
        if args.limit:
            sys.exit("--teacher takes every pair: the teacher's vectors are numbered by the whole list")
        got = load_teacher(args.pairs, args.where, n_own, args.teacher_sample)
        if got is None:
            sys.exit("no teacher vectors for these pairs: run benchmarks/training/teacher.py first")
        rows, vq_t, vd_t = got
        slot = np.full(len(pairs), -1)  # each pair's row in the teacher's vectors, -1 where it has none
        slot[rows] = np.arange(len(rows))
        tq, td = vq_t.astype(np.float32), vd_t.astype(np.float32)
        if args.extra_teacher_sample:  # the extra pairs are exactly those the teacher embedded, in order
            slot[n_own:] = len(tq) + np.arange(len(pairs) - n_own)
            tq = np.concatenate([tq, got_x[1].astype(np.float32)])
            td = np.concatenate([td, got_x[2].astype(np.float32)])
    table = load_file(str(base / "model.safetensors"))["embeddings"].astype(np.float32)
    base_norms = np.linalg.norm(table, axis=1)
    vq, vd = [q_rows[i] for i in val], [d_rows[i] for i in val]
    floor_base, floor_rows = floor_reference(base, distilled, table, [pairs[i] for i in val])
    if args.calibrate:
        trained = load_file(str(args.out / "model.safetensors"))["embeddings"].astype(np.float32)
        floor = relevance_floor(floor_base, trained, vq, vd, floor_rows)
        write_floor(args.out, floor)
        print(f"relevance floor of {args.out}: {floor}")
        return 0
    emb = torch.nn.EmbeddingBag(table.shape[0], table.shape[1], mode="mean")
    emb.weight.data = torch.from_numpy(table.copy())
    opt = torch.optim.Adam(emb.parameters(), lr=args.lr)
    done = 0
    for epoch in range(args.epochs, 0, -1):
        ck = run / f"epoch-{epoch}.pt"
        if ck.is_file():
            state = torch.load(ck)
            emb.load_state_dict(state["emb"])
            opt.load_state_dict(state["opt"])
            done = epoch
            print(f"resumed from {ck}", flush=True)
            break
    print(f"held-out MRR@10 ({len(val)} pairs, each against all): {mrr_at_10(emb, vq, vd):.4f} before", flush=True)
    for epoch in range(done + 1, args.epochs + 1):
        t1 = time.perf_counter()
        rnd = random.Random(args.seed * 1000 + epoch)
        total, steps = 0.0, 0
        for idx in batches(train, pairs, args.batch, args.group, rnd):
            qv = encode(emb, [q_rows[i] for i in idx])
            dv = encode(emb, [d_rows[i] for i in idx])
            logits = args.scale * qv @ dv.T
            target = torch.arange(len(idx))
            loss = (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2
            if tq is not None and td is not None:  # on the batch's pairs that have the teacher's vectors
                at = slot[idx]
                has = torch.from_numpy(np.flatnonzero(at >= 0))
                if len(has) > 1:
                    sub = logits[has][:, has]
                    t = at[at >= 0]
                    soft = args.teacher_scale * torch.from_numpy(tq[t] @ td[t].T)
                    kd = (
                        F.kl_div(F.log_softmax(sub, 1), F.log_softmax(soft, 1), reduction="batchmean", log_target=True)
                        + F.kl_div(
                            F.log_softmax(sub.T, 1), F.log_softmax(soft.T, 1), reduction="batchmean", log_target=True
                        )
                    ) / 2
                    loss = (1 - args.teacher) * loss + args.teacher * kd
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach())
            steps += 1
        torch.save({"emb": emb.state_dict(), "opt": opt.state_dict()}, run / f"epoch-{epoch}.pt")
        print(
            f"epoch {epoch}: loss {total / max(steps, 1):.4f}, {time.perf_counter() - t1:.0f} s; held-out MRR@10 "
            f"{mrr_at_10(emb, vq, vd):.4f}",
            flush=True,
        )

    out = emb.weight.detach().numpy().astype(np.float32)
    if args.resif:
        norms = np.linalg.norm(out, axis=1)
        out *= (base_norms / np.maximum(norms, 1e-8))[:, None]
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    copy_base(base, args.out, distilled)
    save_file({"embeddings": out.astype(np.float16)}, str(args.out / "model.safetensors"))
    floor = relevance_floor(floor_base, out.astype(np.float16).astype(np.float32), vq, vd, floor_rows)
    write_floor(args.out, floor)
    print(f"relevance floor {floor} (the distilled model's 0.3 carried over by quantile on unrelated held-out pairs)")
    (args.out / "training.json").write_text(
        json.dumps(
            {
                "recipe": "symmetric in-batch MNRL on (description, code) pairs, from the distilled table",
                "pairs": len(pairs),
                "epochs": args.epochs,
                "batch": args.batch,
                "lr": args.lr,
                "scale": args.scale,
                "resif": args.resif,
                "seed": args.seed,
                "where": args.where or "all",
                "base": base.name,
                "teacher": args.teacher,
                "teacher_sample": args.teacher_sample,
                "teacher_scale": args.teacher_scale,
                "group": args.group or "none",
                "extra": str(args.extra or ""),
                "extra_pairs": len(pairs) - n_own,
                "seconds": round(time.perf_counter() - t0),
            },
            indent=1,
        )
        + "\n"
    )
    print(f"written: {args.out} ({time.perf_counter() - t0:.0f} s in all)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
