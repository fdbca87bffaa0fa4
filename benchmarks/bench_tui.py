"""TUI responsiveness benchmark on a real 20k+ chunk index: prints figures, never pass/fail.

    python benchmarks/bench_tui.py                  # Django 5.1.4 sdist, as bench_core.py uses
    python benchmarks/bench_tui.py --corpus DIR     # any tree
    python benchmarks/bench_tui.py --exact --corpus DIR --size 80x24   # exact search (Ctrl+G) only

The real app (headless, 120x36 or --size, real model) on the real engine. Three runs, each in a fresh app:

1. Full index in the app (fresh index directory, warm shared embedding cache): a 10 ms interval
   timer records every tick, and the largest gap between ticks is the longest event-loop stall.
2. Cold embedding (empty cache: the model really runs) for --embed-seconds, same stall probe, then
   ctrl+c mid-index: the time until the app has exited.
3. Keystroke to results rendered, on the finished index with the model loaded: queries are typed a
   key at a time at --cadence ms per key. A keystroke's latency runs from the key press until the
   screen has been refreshed with results for that text (or a longer one, when keystrokes
   coalesced). "final key" is the last key of each query, the one the user then waits on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import DATA, EXCLUDE, NL_QUERIES, fetch_django, pct, rss_mb  # noqa: E402

SIZE = (120, 36)
SYMBOLS = [
    "QuerySet",
    "get_object_or_404",
    "CsrfViewMiddleware",
    "slugify",
    "TemplateResponse",
    "reverse_lazy",
    "cached_property",
    "Paginator",
    "ModelForm",
    "atomic",
    "urlencode",
    "make_password",
    "SessionBase",
    "GZipMiddleware",
    "FileSystemStorage",
    "HttpResponseRedirect",
    "select_related",
    "JsonResponse",
    "EmailMessage",
    "timezone.now",
]


def gaps_summary(ticks: list[float]) -> str:
    gaps = [(b - a) * 1000 for a, b in zip(ticks, ticks[1:], strict=False)]
    if not gaps:
        return "no ticks"
    over = sum(g > 50 for g in gaps)
    return (
        f"{len(gaps):,} ticks; longest gap {max(gaps):.1f} ms, p99 {pct(gaps, 99):.1f} ms,"
        f" median {statistics.median(gaps):.1f} ms; gaps > 50 ms: {over}"
    )


def tick_probe(app) -> list[float]:
    ticks: list[float] = []
    app.set_interval(0.01, lambda: ticks.append(time.perf_counter()))
    return ticks


async def wait_for(pred, timeout: float, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        await asyncio.sleep(step)
    return pred()


async def full_index_run(corpus: Path) -> None:
    from codesight_tui.tui.app import CodeSightApp

    app = CodeSightApp(corpus, watch=False)
    t0 = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        ticks = tick_probe(app)
        marks: dict[str, float] = {}

        def phases() -> bool:
            st = app.state
            if st.phase == "embed" and "lexical" not in marks:
                marks["lexical"] = time.perf_counter() - t0
            return st.phase == "idle" and st.model_state == "ready" and app.index_idle.is_set()

        await wait_for(phases, timeout=1800, step=0.01)
        total = time.perf_counter() - t0
        await pilot.pause(0.2)
        st = app.state
        print(
            f"[full index in the app] {st.files:,} files, {st.chunks:,} chunks, {st.vectors:,} vectors;"
            f" lexical phase done after {marks.get('lexical', float('nan')):.1f}s, index + model ready after"
            f" {total:.1f}s"
        )
        print(f"  event loop while indexing: {gaps_summary(ticks)}")


async def cold_embed_run(corpus: Path, seconds: float) -> None:
    from codesight_tui.tui.app import CodeSightApp

    app = CodeSightApp(corpus, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        ticks = tick_probe(app)
        await wait_for(lambda: app.state.phase == "embed" and app.state.phase_done > 0, timeout=600)
        start_done, t_embed = app.state.phase_done, time.perf_counter()
        await asyncio.sleep(seconds)
        done = app.state.phase_done - start_done
        rate = done / (time.perf_counter() - t_embed)
        print(
            f"[cold embedding in the app] {done:,} chunks embedded in {seconds:.0f}s ({rate:.1f} chunks/s)"
            f" while the UI ran"
        )
        print(f"  event loop (lexical phase + embedding): {gaps_summary(ticks)}")
        t_quit = time.perf_counter()
        await pilot.press("ctrl+c")
    exited = time.perf_counter() - t_quit
    print(f"  ctrl+c mid-embedding: app exited after {exited * 1000:.0f} ms")


async def keystroke_run(corpus: Path, queries: list[str], cadence_ms: float, mode: str) -> None:
    from codesight_tui.tui.app import CodeSightApp
    from codesight_tui.tui.widgets.results import ResultsList

    app = CodeSightApp(corpus, watch=mode == "exact")  # exact search: as a user runs it, watching
    async with app.run_test(size=SIZE) as pilot:
        if mode == "exact":  # exact search (Ctrl+G): no model to wait for
            await wait_for(lambda: app.state.phase == "idle" and app.index_idle.is_set(), timeout=600)
            await pilot.press("ctrl+g")
        else:
            await wait_for(lambda: app.state.phase == "idle" and app.state.model_state == "ready", timeout=600)
        while mode != "exact" and app.mode != mode:
            await pilot.press("tab")
        ticks = tick_probe(app)
        results = app.query_one(ResultsList)
        rendered: list[tuple[str, float]] = []
        show = results.show

        def show_and_stamp(hits, stale, refresh=False):
            changed = show(hits, stale, refresh=refresh)
            text = app._shown_key[0] if app._shown_key else ""
            app.call_after_refresh(lambda: rendered.append((text, time.perf_counter())))
            return changed

        results.show = show_and_stamp
        await pilot.click("#query")
        every, final, search_ms = [], [], []
        for q in queries:
            app.query_one("#query").value = ""
            await pilot.pause(0.3)
            rendered.clear()
            pressed: list[tuple[str, float]] = []
            for i, ch in enumerate(q):
                t = time.perf_counter()
                await pilot.press(ch if ch != " " else "space")
                pressed.append((q[: i + 1], t))
                await asyncio.sleep(max(0.0, cadence_ms / 1000 - (time.perf_counter() - t)))
            await wait_for(lambda q=q: any(text == q for text, _ in rendered), timeout=10, step=0.002)
            if app.last_search_ms is not None:
                search_ms.append(app.last_search_ms)
            for text, t in pressed:
                done = [r for txt, r in rendered if len(txt) >= len(text) and txt.startswith(text) and r >= t]
                if done:
                    lat = (min(done) - t) * 1000
                    every.append(lat)
                    if text == q:
                        final.append(lat)
        print(
            f"[keystrokes, {mode}] {len(queries)} queries typed at {cadence_ms:.0f} ms/key on"
            f" {app.state.chunks:,} chunks:"
        )
        print(
            f"  final key -> results rendered: p50 {pct(final, 50):.1f} ms, p95 {pct(final, 95):.1f} ms,"
            f" max {max(final):.1f} ms (n={len(final)})"
        )
        print(
            f"  every key -> results rendered: p50 {pct(every, 50):.1f} ms, p95 {pct(every, 95):.1f} ms"
            f" (n={len(every)})"
        )
        print(f"  engine search alone (worker): p50 {pct(search_ms, 50):.1f} ms; event loop: {gaps_summary(ticks)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=None)
    ap.add_argument("--cadence", type=float, default=80.0, help="ms between keystrokes")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--embed-seconds", type=float, default=45.0)
    ap.add_argument("--skip-cold", action="store_true")
    ap.add_argument("--size", default="120x36", help="terminal size, e.g. 80x24")
    ap.add_argument(
        "--exact",
        action="store_true",
        help="only exact search (Ctrl+G) on a lexical index: the identifiers typed a key at a time",
    )
    args = ap.parse_args()
    global SIZE
    SIZE = tuple(int(x) for x in args.size.lower().split("x"))

    corpus = args.corpus.resolve() if args.corpus else fetch_django()
    exclude = EXCLUDE if args.corpus is None else []
    run_dir = DATA / "tui"
    os.environ["CODESIGHT_EXCLUDE"] = json.dumps(exclude)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    queries = (NL_QUERIES[::3] + SYMBOLS)[: args.queries]
    print(f"corpus: {corpus}  exclude={exclude}; machine: {os.cpu_count()} cpus; terminal {SIZE[0]}x{SIZE[1]}")

    if args.exact:
        os.environ["CODESIGHT_DATA_DIR"] = str(run_dir / "data-exact")
        from codesight_tui.core.engine import CodeSight

        CodeSight(corpus, exclude=exclude).index(embed=False, static=False)
        asyncio.run(keystroke_run(corpus, SYMBOLS[: args.queries], args.cadence, "exact"))
        return 0

    # 1. a full index inside the app, warm shared cache
    shutil.rmtree(run_dir, ignore_errors=True)
    os.environ["CODESIGHT_DATA_DIR"] = str(run_dir / "data")
    os.environ["CODESIGHT_CACHE_DIR"] = str(DATA / "cache")
    asyncio.run(full_index_run(corpus))

    # 3. keystrokes on that finished index (a fresh app: the no-op scan, then the model loads)
    for mode in ("hybrid", "bm25"):
        asyncio.run(keystroke_run(corpus, queries, args.cadence, mode))

    # 2. cold embedding: a second, throwaway index and an empty cache
    if not args.skip_cold:
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["CODESIGHT_DATA_DIR"] = str(Path(tmp) / "data")
            os.environ["CODESIGHT_CACHE_DIR"] = str(Path(tmp) / "cache")
            asyncio.run(cold_embed_run(corpus, args.embed_seconds))
    print(f"\n[memory] peak RSS {rss_mb():.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
