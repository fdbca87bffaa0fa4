"""Issue 49, item 4: weight-space interpolation of a fine-tuned full model with the bundled one
(WiSE-FT, Wortsman et al. 2022): ``(1 - alpha) * base + alpha * tuned`` for every weight. A fine-tune
that gains in distribution and loses on how people ask (the 24k-pair run: devset hybrid 0.788 ->
0.745) often keeps most of its gain and little of its loss part-way between the two.

    python benchmarks/training/interpolate.py --tuned DIR --alpha 0.5 --out DIR2
    CODESIGHT_EMBEDDING_MODEL=DIR2 bash benchmarks/eval_devset.sh --mode hybrid
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from train_full import bundled_model  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tuned", type=Path, required=True, help="a sentence-transformers folder")
    ap.add_argument("--alpha", type=float, required=True, help="0 = the bundled model, 1 = the tuned one")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    from safetensors.torch import load_file, save_file

    base_dir = Path(bundled_model())
    base_file = next(iter(sorted(base_dir.glob("*.safetensors"))), None)
    if base_file is None:
        from sentence_transformers import SentenceTransformer

        base = {
            k: v.detach()
            for k, v in SentenceTransformer(str(base_dir), device="cpu")[0].auto_model.state_dict().items()
        }
    else:
        base = load_file(str(base_file))
    tuned = load_file(str(args.tuned / "model.safetensors"))
    base = {k.removeprefix("bert."): v for k, v in base.items()}
    missing = [k for k in tuned if k.removeprefix("bert.") not in base]
    if missing:
        print(f"interpolate: {len(missing)} weights of the tuned model are not in the bundled one, e.g. {missing[0]}")
        return 1
    mixed = {
        k: ((1 - args.alpha) * base[k.removeprefix("bert.")].float() + args.alpha * v.float()).to(v.dtype).contiguous()
        for k, v in tuned.items()
    }
    if args.out.exists():
        shutil.rmtree(args.out)
    shutil.copytree(args.tuned, args.out)
    save_file(mixed, str(args.out / "model.safetensors"))
    # Read exactly as the bundled model is: a folder saved after training at --max-tokens 128 says
    # 128 in its tokenizer config, and codesight would then embed every chunk cut at 128 tokens.
    for name in ("sentence_bert_config.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        if (base_dir / name).exists():
            shutil.copy2(base_dir / name, args.out / name)
    print(f"interpolate: alpha {args.alpha}: {len(mixed)} tensors -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
