"""The full model on a CPU through ONNX Runtime: the same vectors as sentence-transformers on
torch, with no torch in the process that embeds, so the model is up in 0.4 s instead of 8.

``onnx`` (the default on a CPU) runs a float32 export: its vectors match torch's to cosine 1.0000,
so they share torch's name in the index and the embedding cache, and nothing is re-embedded.
``onnx-int8`` stores the MatMul weights as int8 with one scale per output channel (one scale per
tensor lost a fifth of each text's nearest neighbours on an AVX2 CPU): about 1.5x the texts per
second, with vectors close to the model's (cosine 0.99) but not the same, so they get a name of
their own. See benchmarks/README.md, "ONNX".

The export is made once per machine and model, offline, from the local sentence-transformers
folder: torch's exporter writes the encoder with its mean pooling and normalisation. It runs in a
child process, as distillation does, so torch never loads into the caller, and it lands in the
cache directory, 0700, by one atomic rename. Optimum's exporter would do the same in more code but
pins transformers below 4.58, which sentence-transformers here is far past; torch's exporter and
onnxruntime's quantiser are what it calls underneath.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.ingest.tokens import ModelInfo

EXPORT_VERSION = 1  # part of the folder's key: a changed export makes a new file, never reuses an old one
EXPORT_TIMEOUT = 900  # seconds; the export takes about 5 s on a 2-core CPU
BACKENDS = ("onnx", "onnx-int8")  # float32 weights (the same vectors as torch), or int8 MatMul weights
CPU_BATCH = 1  # texts per run on a CPU: no padding; float32 22.6 texts/s at 1 against 16.2 at 8, int8 25.4 against 23.8


def export_dir(cache_dir: Path, info: ModelInfo, backend: str) -> Path:
    """Where the ONNX export of ``info`` for ``backend`` lives (the model's folder is part of the
    key, so another copy of the model exports anew)."""
    from codesight_tui.core.ingest.paths import slug

    digest = hashlib.sha256(f"{info.name}\0{info.load_from}\0{EXPORT_VERSION}".encode()).hexdigest()[:10]
    return Path(cache_dir).expanduser() / "onnx" / f"{slug(info.name)}-{backend}-{digest}"


def is_exported(path: Path) -> bool:
    return (path / "model.onnx").is_file() and (path / "tokenizer.json").is_file()


def exportable(info: ModelInfo) -> bool:
    """Whether ``info`` is a local folder of the one stack the export computes faithfully (a
    Transformer, mean Pooling, optionally Normalize), read from its config files without torch."""
    import json

    base = Path(info.load_from)
    try:
        modules = json.loads((base / "modules.json").read_text())
        kinds = [str(m["type"]).rsplit(".", 1)[-1] for m in modules]
        pooling = json.loads((base / modules[1]["path"] / "config.json").read_text())
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return False
    modes = [k for k, v in pooling.items() if k.startswith("pooling_mode") and v]
    return (
        kinds[:2] == ["Transformer", "Pooling"]
        and kinds[2:] in ([], ["Normalize"])
        and modes == ["pooling_mode_mean_tokens"]
        and (base / "tokenizer.json").is_file()
    )


def for_backend(info: ModelInfo, backend: str, device: str, gpu_likely: bool, cache_dir: Path) -> ModelInfo:
    """``info`` with the backend that will run it: "auto" is float32 ONNX on a CPU for a model the
    export handles (where ONNX Runtime is installed), torch on a GPU or for anything else."""
    import importlib.util

    if backend == "auto":
        cpu = device == "cpu" or (device == "auto" and not gpu_likely and not _apple_gpu())
        use = cpu and exportable(info) and importlib.util.find_spec("onnxruntime") is not None
        backend = "onnx" if use else "torch"
    if backend not in BACKENDS:
        return info
    from dataclasses import replace

    return replace(info, backend=backend, export_dir=str(export_dir(cache_dir, info, backend)))


def _apple_gpu() -> bool:
    import platform

    return sys.platform == "darwin" and platform.machine() == "arm64"


def export(info: ModelInfo, dest: Path, *, timeout: float = EXPORT_TIMEOUT) -> float:
    """Export ``info`` into ``dest`` unless it is there already; returns the seconds it took (0 if
    nothing was done). One line in a ``CodeSightError`` if it can't."""
    from filelock import FileLock

    from codesight_tui.core.private import private_dir

    if is_exported(dest):
        return 0.0
    base = Path(info.load_from).expanduser()
    if not base.is_dir():
        raise CodeSightError(
            f'cannot run {info.name!r} on ONNX: not a local model folder (set embedding_backend = "torch")'
        )
    private_dir(dest.parent)
    with FileLock(str(dest) + ".lock", mode=0o600):
        if is_exported(dest):  # another process exported it while this one waited
            return 0.0
        for old in dest.parent.glob(f"{dest.name}.tmp-*"):  # left by an export whose process was killed
            if not _alive(old.name.rsplit("-", 1)[-1]):
                shutil.rmtree(old, ignore_errors=True)
        tmp = dest.with_name(f"{dest.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "codesight_tui.core.index.onnx_model",
                    str(base.resolve()),
                    str(tmp),
                    info.backend,
                    str(os.getpid()),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                check=False,
                timeout=timeout,
                cwd=str(Path(__file__).resolve().parents[3]),
                env={
                    **os.environ,
                    "TOKENIZERS_PARALLELISM": "false",
                    "HF_HUB_OFFLINE": "1",
                    "TRANSFORMERS_OFFLINE": "1",
                },
            )
            if proc.returncode != 0 or not is_exported(tmp):
                last = next((ln for ln in reversed(proc.stdout.strip().splitlines()) if ln.strip()), "no output")
                raise CodeSightError(
                    f'could not export {info.name!r} to ONNX: {last[-300:]} (set embedding_backend = "torch")'
                )
            os.replace(tmp, dest)
        except subprocess.TimeoutExpired:
            raise CodeSightError(f"exporting {info.name!r} to ONNX took over {timeout:.0f} s") from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return time.perf_counter() - t0


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def _export_main(base: Path, out: Path, backend: str, parent: int) -> None:
    """Child process: write ``out/model.onnx`` (ids and mask in, normalised vectors out; int8
    weights for "onnx-int8") and the tokenizer beside it. Only a Transformer, mean Pooling, and optionally Normalize: any other
    stack would compute something else, so it is refused. It ends with ``parent`` (the pid that
    waits for it, killed while an app quit): the half-written folder is then the next export's to
    remove."""
    import warnings

    from codesight_tui.core.child import exit_with_parent

    exit_with_parent(parent)
    warnings.filterwarnings("ignore")
    import torch
    from sentence_transformers import SentenceTransformer

    from codesight_tui.core.private import private_dir

    model = SentenceTransformer(str(base), device="cpu")
    kinds = [type(m).__name__ for m in model]
    pooling = model[1] if len(kinds) > 1 else None
    mode = getattr(pooling, "get_pooling_mode_str", lambda: getattr(pooling, "pooling_mode", None))()
    if kinds[:2] != ["Transformer", "Pooling"] or kinds[2:] not in ([], ["Normalize"]) or mode != "mean":
        raise SystemExit(f"only Transformer + mean Pooling (+ Normalize) models export; this is {kinds}, {mode}")
    if not (base / "tokenizer.json").is_file():
        raise SystemExit("the model folder has no tokenizer.json")
    from onnxruntime.quantization import QuantType, quantize_dynamic

    encoder: Any = model[0].auto_model
    encoder.eval()

    class Encode(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            tokens = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            mean = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    private_dir(out)
    plain = out / ("model-fp32.onnx" if backend == "onnx-int8" else "model.onnx")
    ids = torch.ones((2, 8), dtype=torch.long)
    with torch.inference_mode():
        torch.onnx.export(
            Encode().eval(),
            (ids, torch.ones_like(ids)),
            str(plain),
            input_names=["input_ids", "attention_mask"],
            output_names=["embedding"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "tokens"},
                "attention_mask": {0: "batch", 1: "tokens"},
                "embedding": {0: "batch"},
            },
            opset_version=17,
            dynamo=False,
        )
    if backend == "onnx-int8":
        quantize_dynamic(
            str(plain),
            str(out / "model.onnx"),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
        )
        plain.unlink()
    shutil.copyfile(base / "tokenizer.json", out / "tokenizer.json")
    for f in out.iterdir():
        f.chmod(0o600)


class OnnxEmbedder:
    """The int8 export behind the ``Embedder`` interface: texts are tokenised by the model's own
    tokenizer, truncated to its window, and run shortest first."""

    def __init__(self, info: ModelInfo, batch_size: int = 0) -> None:
        if not info.export_dir:
            raise CodeSightError(f"no ONNX folder for {info.name!r}")
        folder = Path(info.export_dir)
        export(info, folder)
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer

            opts = ort.SessionOptions()
            opts.intra_op_num_threads = os.cpu_count() or 1
            opts.log_severity_level = 3
            self.session = ort.InferenceSession(str(folder / "model.onnx"), opts, providers=["CPUExecutionProvider"])
            tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as exc:  # a damaged file, a missing wheel  # noqa: BLE001
            raise CodeSightError(f"cannot load the ONNX model of {info.name!r}: {exc}".splitlines()[0]) from None
        tok.no_padding()
        tok.enable_truncation(info.max_seq_length)
        self.tokenizer = tok
        self.name = info.vectors_name
        self.device = "cpu"
        self.max_seq_length = info.max_seq_length
        self.batch_size = batch_size or CPU_BATCH
        self._lock = threading.Lock()  # one ONNX run at a time: it already uses every core
        self.dim = 0
        self.dim = int(self.encode(["dim"]).shape[1])

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: np.ndarray | None = None
        encode = getattr(self.tokenizer, "encode_batch_fast", self.tokenizer.encode_batch)
        for k in range(0, len(order), self.batch_size):
            idx = order[k : k + self.batch_size]
            ids = [e.ids for e in encode([texts[i] for i in idx])]
            width = max(1, max(len(x) for x in ids))
            arr = np.zeros((len(ids), width), dtype=np.int64)
            mask = np.zeros((len(ids), width), dtype=np.int64)
            for j, x in enumerate(ids):
                arr[j, : len(x)] = x
                mask[j, : len(x)] = 1
            with self._lock:
                vecs = self.session.run(None, {"input_ids": arr, "attention_mask": mask})[0]
            if out is None:
                out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
            out[idx] = vecs
        assert out is not None
        return out

    def encode_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.encode([text])[0]
        return vector


if __name__ == "__main__":
    _export_main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
