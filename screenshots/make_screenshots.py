"""Regenerate the SVG screenshots in this folder from the real app: the real bundled model, a real
index of codesight's own source. Run: python screenshots/make_screenshots.py
(`--documents`: only the document and Ask shots, over benchmarks/documents' corpus; `--exact`: only
the exact-search shot; `--module`: only the file-level hit's.)

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
    engine.index(embed=engine.full_pass(), static=True)  # as the TUI does here: on a CPU, no full pass
    shots = [
        ("results.svg", (120, 34), "where do we cut over-long lines into pieces", []),
        ("wide-160x48.svg", (160, 48), "keep the selected hit when the list is refreshed", []),
        ("symbol.svg", (120, 34), "reconcile_vectors", []),
        ("narrow-80x24.svg", (80, 24), "open the selected hit in the editor", ["down"]),
        ("callers-80x24.svg", (80, 24), "reconcile_vectors", ["f5"]),  # who calls it: F5 on the hit
        ("help.svg", (100, 30), "", ["f1"]),
    ]
    for name, size, query, keys in shots:
        app = CodeSightApp(REPO, engine=engine, watch=False)
        async with app.run_test(size=size) as pilot:
            for _ in range(200):
                await pilot.pause(0.05)
                if app.index_idle.is_set() and not app._indexing and app.state.model_state in ("ready", "off"):
                    break
            if query:
                await settle(app, pilot, query)
            for k in keys:
                await pilot.press(k)
                await pilot.pause(0.3)
                await settle(app, pilot, "")
            app.save_screenshot(name, path=str(HERE))
        print("wrote", HERE / name)

    # In the middle of a first index: BM25 + the static tier answer while the model embeds (the
    # static model distilled for the shots above is reused; the embedding cache starts empty). The
    # full pass is asked for: on a CPU it is off by default (full_model), as on a GPU it is not.
    os.environ["CODESIGHT_FULL_MODEL"] = "on"
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


async def documents_and_ask() -> None:
    """At 80x24: a document hit (the handbook PDF of benchmarks/documents, found by page) and the Ask
    view. The answer comes from tests/llmstub.py (real HTTP on 127.0.0.1, Ollama's wire format),
    not from a model: the shot shows the view, the streaming and the sources, not an LLM's words."""
    import sys

    sys.path.insert(0, str(REPO / "tests"))
    sys.path.insert(0, str(REPO / "benchmarks" / "documents"))
    import llmstub
    from make_corpus import build

    tmp = Path(tempfile.mkdtemp())
    os.environ["CODESIGHT_DATA_DIR"] = str(tmp / "data")
    os.environ.setdefault("CODESIGHT_CACHE_DIR", str(Path.home() / ".codesight" / "cache"))
    os.environ["HF_HUB_OFFLINE"] = "1"
    from codesight_tui import CodeSight
    from codesight_tui.tui.app import CodeSightApp

    corpus = build(tmp / "corpus", report_pages=30)
    llmstub.ANSWER[:] = [
        "Customer records are deleted **thirty days** after an account is closed [1]. ",
        "Audit logs are kept for seven years, ",
        "and a legal hold suspends deletion for the accounts it names [1].",
    ]
    with llmstub.StubServer(delay=0.05) as stub:
        os.environ.update(CODESIGHT_LLM_BACKEND="ollama", CODESIGHT_LLM_MODEL="llama3.2", OLLAMA_HOST=stub.url)
        engine = CodeSight(corpus)
        engine.index()
        for name, keys in (("documents-80x24.svg", ()), ("ask-80x24.svg", ("f3", "enter"))):
            app = CodeSightApp(corpus, engine=engine, watch=False)
            async with app.run_test(size=(80, 24)) as pilot:
                for _ in range(200):
                    await pilot.pause(0.05)
                    if app.index_idle.is_set() and not app._indexing and app.state.model_state in ("ready", "off"):
                        break
                await settle(app, pilot, "when do we delete the data of closed accounts")
                for k in keys:
                    await pilot.press(k)
                    await pilot.pause(0.3)
                if keys:
                    for _ in range(200):
                        await pilot.pause(0.05)
                        if getattr(app.screen, "answer", None) is not None:
                            break
                    await pilot.pause(0.3)
                app.save_screenshot(name, path=str(HERE))
            print("wrote", HERE / name)


async def exact() -> None:
    """Exact search at 80x24 (Ctrl+G): matching lines grouped by file, the matches marked."""
    tmp = Path(tempfile.mkdtemp())
    os.environ["CODESIGHT_DATA_DIR"] = str(tmp / "data")
    from codesight_tui import CodeSight
    from codesight_tui.tui.app import CodeSightApp

    engine = CodeSight(REPO, exclude=EXCLUDE)
    engine.index(embed=False, static=False)
    app = CodeSightApp(REPO, engine=engine, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("ctrl+g")
        await settle(app, pilot, "conn.execute(")
        await pilot.press("down", "down")
        await pilot.pause(0.5)
        app.save_screenshot("exact-80x24.svg", path=str(HERE))
    print("wrote", HERE / "exact-80x24.svg")


async def module() -> None:
    """A question that names a folder, at 80x24: the folder's root as one hit for the whole file."""
    tmp = Path(tempfile.mkdtemp())
    os.environ["CODESIGHT_DATA_DIR"] = str(tmp / "data")
    os.environ.setdefault("CODESIGHT_CACHE_DIR", str(Path.home() / ".codesight" / "cache"))
    from codesight_tui import CodeSight
    from codesight_tui.tui.app import CodeSightApp

    engine = CodeSight(REPO, exclude=EXCLUDE)
    engine.index(embed=False, static=True)
    app = CodeSightApp(REPO, engine=engine, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await settle(app, pilot, "how does the mcp server work")
        app.save_screenshot("module-80x24.svg", path=str(HERE))
    print("wrote", HERE / "module-80x24.svg")


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--exact"]:
        asyncio.run(exact())
        raise SystemExit
    if sys.argv[1:] == ["--module"]:
        asyncio.run(module())
        raise SystemExit
    if sys.argv[1:] != ["--documents"]:
        asyncio.run(main())
        asyncio.run(module())
    asyncio.run(documents_and_ask())
