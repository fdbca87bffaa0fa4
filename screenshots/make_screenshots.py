"""Regenerate the SVG screenshots in this folder from the real app: the real bundled model, a real
index of codesight's own source. Run: python screenshots/make_screenshots.py

Shots at 80x24 (ssh, tmux) and at 160x48 (side by side), and one taken in the middle of a first
index: a fresh index directory and an empty embedding cache, so the model is really embedding
(the status bar then says which lists answered: "hybrid: bm25+static")."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
EXCLUDE = ["tests/", "screenshots/", "benchmarks/"]


async def settle(app, pilot, query: str, all_workers: bool = True) -> None:
    await pilot.press(*query)
    for _ in range(100):  # keystrokes coalesce: wait for the search of the full text
        await pilot.pause(0.05)
        if not app.search_busy:
            break
    if all_workers:  # not mid-index: that would wait for the index run to end
        await app.workers.wait_for_complete()
    await pilot.pause(0.5)


async def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    os.environ["CODESIGHT_DATA_DIR"] = str(tmp / "data")
    os.environ.setdefault("CODESIGHT_CACHE_DIR", str(Path.home() / ".codesight" / "cache"))
    os.environ["HF_HUB_OFFLINE"] = "1"
    from codesight_tui import CodeSight
    from codesight_tui.tui.app import CodeSightApp

    engine = CodeSight(REPO, exclude=EXCLUDE)
    engine.index()
    shots = [
        ("results.svg", (120, 34), "where do we cut over-long lines into pieces", []),
        ("wide-160x48.svg", (160, 48), "keep the selected hit when the list is refreshed", []),
        ("symbol.svg", (120, 34), "reconcile_vectors", []),
        ("narrow-80x24.svg", (80, 24), "open the selected hit in the editor", ["down"]),
        ("help.svg", (100, 30), "", ["f1"]),
    ]
    for name, size, query, keys in shots:
        app = CodeSightApp(REPO, engine=engine, watch=False)
        async with app.run_test(size=size) as pilot:
            for _ in range(200):
                await pilot.pause(0.05)
                if app.index_idle.is_set() and not app._indexing and app.state.model_state == "ready":
                    break
            if query:
                await settle(app, pilot, query)
            for k in keys:
                await pilot.press(k)
                await pilot.pause(0.3)
            app.save_screenshot(name, path=str(HERE))
        print("wrote", HERE / name)

    # In the middle of a first index: BM25 + the static tier answer while the model embeds (the
    # static model distilled for the shots above is reused; the embedding cache starts empty).
    static_model = engine.static_path()
    if static_model is not None:
        os.environ["CODESIGHT_STATIC_MODEL"] = str(static_model)
    os.environ["CODESIGHT_DATA_DIR"] = str(tmp / "data-cold")
    os.environ["CODESIGHT_CACHE_DIR"] = str(tmp / "cache-cold")
    engine = CodeSight(REPO, exclude=EXCLUDE, model_process=True)
    app = CodeSightApp(REPO, engine=engine, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(1200):
            await pilot.pause(0.05)
            if app.state.phase == "embed" and app.state.phase_done >= 128:
                break
        await settle(app, pilot, "retry a failed batch", all_workers=False)
        app.save_screenshot("indexing-80x24.svg", path=str(HERE))
        await pilot.press("ctrl+c")
    print("wrote", HERE / "indexing-80x24.svg")


if __name__ == "__main__":
    asyncio.run(main())
