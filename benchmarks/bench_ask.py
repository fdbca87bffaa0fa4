"""`ask`: codesight's own time to the first streamed token, against the local stub server of each
back end (tests/llmstub.py: real HTTP on 127.0.0.1, each API's wire format, no model behind it).

    python benchmarks/bench_ask.py [--runs 20]

For each back end: the search, then the time from the search's end to the first text delta (prompt,
client, HTTP request, the stub's reply, stream parsing): what codesight adds beyond the search.
The first ask of a process also imports the client library; it is loaded in a thread while the
search runs, so only what the search did not cover shows. The index is codesight's own source,
lexical and static tiers (no torch)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))

QUESTIONS = [
    "how does an interrupted index run resume",
    "where are documents read into text",
    "how is the static model distilled",
    "what does the watcher do when a branch changes",
]


def one(backend: str, url: str, runs: int) -> None:
    code = f"""
import os, sys, time, statistics
sys.path.insert(0, {str(REPO / "tests")!r})
os.environ.update(CODESIGHT_LLM_BACKEND={backend!r}, CODESIGHT_LLM_MODEL="stub-model",
                  ANTHROPIC_API_KEY="k", OPENAI_API_KEY="k", AZURE_OPENAI_API_KEY="k",
                  ANTHROPIC_BASE_URL={url!r}, OPENAI_BASE_URL={url + "/v1"!r}, AZURE_OPENAI_ENDPOINT={url!r},
                  OLLAMA_HOST={url!r})
from codesight_tui import CodeSight
from codesight_tui.core.modes import Vectors
cs = CodeSight({str(REPO)!r})
rows = []
for k in range({runs}):
    t0 = time.perf_counter()
    stream = cs.ask_stream({QUESTIONS!r}[k % {len(QUESTIONS)}], vectors=Vectors.STATIC)
    it = iter(stream)
    next(it)
    first = time.perf_counter() - t0
    for _ in it:
        pass
    rows.append((stream.answer.search_seconds, first - stream.answer.search_seconds))
cold = rows[0]
warm = rows[1:]
print(f"{backend:<9} cold: search + client import {{cold[0]*1000:5.0f}} ms, then first token {{cold[1]*1000:4.0f}} ms   "
      f"warm p50: search {{statistics.median(r[0] for r in warm)*1000:4.0f}} ms + first token "
      f"{{statistics.median(r[1] for r in warm)*1000:4.1f}} ms (p90 {{sorted(r[1] for r in warm)[int(len(warm)*0.9)]*1000:.1f}})")
"""
    subprocess.run([sys.executable, "-c", code], check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    from llmstub import StubServer

    work = Path(tempfile.mkdtemp(prefix="codesight-ask-"))
    os.environ.setdefault("CODESIGHT_DATA_DIR", str(work / "data"))
    os.environ["HF_HUB_OFFLINE"] = "1"
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "codesight_tui", "index", "--static-only", str(REPO)], check=True, capture_output=True
    )
    print(f"index of {REPO.name} (lexical + static): {time.perf_counter() - t:.0f} s")
    with StubServer(delay=0.0) as stub:
        for backend in ("anthropic", "openai", "azure", "ollama"):
            one(backend, stub.url, args.runs)
    print(
        f"({args.runs} asks per back end, each in one fresh process; 'first token' is measured from the end"
        " of the search)"
    )


if __name__ == "__main__":
    main()
