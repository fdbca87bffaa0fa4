"""Issue 49: the mean of several static tables trained from the same start (a "model soup").

    python benchmarks/training/soup.py OUT_DIR MODEL_DIR MODEL_DIR [...]

Writes MODEL_DIR[0]'s folder to OUT_DIR with the tables' element-wise mean in place of its table
(fp16), and each run's ``training.json`` inside its own. Two seeds of the same recipe differ by
up to 0.017 on the devset; with the teacher term, their mean scored at or above each seed on both
polyglot folds and between the two on the devset (benchmarks/README). Set the relevance floor
afterwards: ``train_static.py --calibrate --out OUT_DIR``.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np


def main() -> int:
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    from safetensors.numpy import load_file, save_file

    out, ins = Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]]
    tables = [load_file(str(p / "model.safetensors"))["embeddings"].astype(np.float32) for p in ins]
    if len({t.shape for t in tables}) != 1:
        sys.exit("the tables differ in shape: not trained from the same start")
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(ins[0], out)
    save_file({"embeddings": np.mean(tables, axis=0).astype(np.float16)}, str(out / "model.safetensors"))
    runs = [json.loads((p / "training.json").read_text()) if (p / "training.json").is_file() else {} for p in ins]
    (out / "training.json").write_text(
        json.dumps({"recipe": f"the element-wise mean of {len(ins)} tables", "tables": runs}, indent=1) + "\n"
    )
    print(f"{out}: the mean of {len(ins)} tables")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
