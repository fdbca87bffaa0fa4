"""The MCP server end to end (issue 19): ``codesight mcp`` spawned as a real process and driven
with the SDK's own stdio client, the real model in its child process."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import stop
from surfaces import read_only, schema_of, server, text_of

TOOLS = {
    "search",
    "find_related",
    "grep",
    "index",
    "status",
    "watch",
    "unwatch",
    "find_definition",
    "find_references",
    "find_callers",
    "find_callees",
}
HIT_FIELDS = {
    "grain",
    "parts",
    "repo",
    "path",
    "start_line",
    "end_line",
    "line",
    "scope",
    "name",
    "language",
    "score",
    "found_by",
    "bm25_rank",
    "vector_rank",
    "static_rank",
    "page",
    "slide",
    "location",
    "snippet",
    "commit",
    "translations",
}


def add_bulk(repo: Path, files: int = 30, per_file: int = 25) -> None:
    """Enough code that the real model needs a minute to embed it all on this CPU."""
    for i in range(files):
        (repo / f"bulk_{i}.py").write_text(
            "".join(
                f'def compute_{i}_{j}(value, factor):\n    """Scale the value {j} times."""\n'
                f"    total = value * factor + {j}\n    for step in range({j}):\n        total += step\n"
                f"    return total\n\n\n"
                for j in range(per_file)
            )
        )


async def test_tools_declare_their_contract(repo: Path) -> None:
    async with server(repo) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    search = tools["search"].input_schema
    assert search["required"] == ["query"]
    assert {"query", "repo_path", "top_k", "file_glob", "mode", "language", "roots"} <= set(search["properties"])
    related = tools["find_related"].input_schema
    assert related["required"] == ["location"] and set(search["properties"]) - {"query", "fleet_repo"} <= set(
        related["properties"]
    )
    assert read_only(tools["find_related"])
    assert "tokens" in schema_of(tools["search"])["properties"]
    assert set(tools["index"].input_schema["properties"]) == {"repo_path", "force_rebuild"}
    for name in ("status", "watch", "unwatch"):
        assert set(tools[name].input_schema["properties"]) == {"repo_path"}
    for t in tools.values():  # structured output everywhere
        assert t.output_schema and t.output_schema["type"] == "object", t.name
        assert t.description
    hit = schema_of(tools["search"])["$defs"]["Hit"]["properties"]
    assert set(hit) >= HIT_FIELDS
    assert read_only(tools["search"]) and read_only(tools["status"])
    assert not read_only(tools["index"]) and not read_only(tools["watch"])


@pytest.mark.model
async def test_a_cold_search_answers_from_bm25_while_vectors_are_still_coming(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODESIGHT_FULL_MODEL", "on")  # the full pass, which a CPU leaves out by default
    add_bulk(repo)
    async with server(repo) as client:
        reported: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            reported.append((progress, total, message))

        t0 = time.monotonic()
        r = await client.call_tool("search", {"query": "haversine distance", "top_k": 5}, progress_callback=on_progress)
        first_answer = time.monotonic() - t0
        assert not r.is_error, r.content
        out = r.structured_content
        assert json.loads(text_of(r)) == out  # the same JSON as text, for older clients
        assert first_answer < 10 and out["results"] and out["results"][0]["path"] == "src/geo.py"
        hit = out["results"][0]
        assert set(hit) == HIT_FIELDS and hit["repo"] == str(repo) and "bm25" in hit["found_by"]
        assert hit["start_line"] <= hit["line"] <= hit["end_line"] and "haversine" in hit["snippet"]
        state = out["index"][0]
        assert state["indexed"] and state["indexing"] and state["vector_coverage"] < 1
        assert any("BM25" in n or "vectors cover" in n for n in out["notices"])

        r = await client.call_tool("index", {})  # returns at once: a run is already going
        assert not r.is_error and not r.structured_content["started"]
        assert "background" in r.structured_content["message"] or "already" in r.structured_content["message"]

        r = await client.call_tool("status", {})
        st = r.structured_content
        assert st["state"]["files"] >= 30 and st["state"]["indexing"] and st["pending"] > 0
        assert st["stale_files"] == 0 and st["state"]["last_indexed"]

        deadline = time.monotonic() + 240  # the vectors arrive: hybrid answers use both retrievers
        while time.monotonic() < deadline:
            r = await client.call_tool("search", {"query": "great-circle distance between two points", "top_k": 5})
            out = r.structured_content
            if out["index"][0]["vector_coverage"] > 0 and any("vector" in h["found_by"] for h in out["results"]):
                break
            await asyncio.sleep(1)
        else:
            pytest.fail("vectors never arrived")


async def test_find_related_and_the_tokens_each_answer_costs(repo: Path, _isolated_home: Path) -> None:
    """find_related from path:line and from a symbol leaves the place itself out; every answer
    says its size in tokens, and `codesight stats` adds them up per repository."""
    (repo / "src" / "distance.py").write_text(
        "import math\n\n\ndef great_circle(lat_a, lon_a, lat_b, lon_b):\n    radius = 6371.0\n"
        "    dlat = math.radians(lat_b - lat_a)\n    dlon = math.radians(lon_b - lon_a)\n"
        "    return 2 * radius * math.asin(math.sqrt(math.sin(dlat / 2) ** 2 + math.sin(dlon / 2) ** 2))\n"
    )
    async with server(repo) as client:
        r = await client.call_tool("search", {"query": "haversine", "mode": "bm25"})
        assert not r.is_error and r.structured_content["tokens"] > 10
        searched = r.structured_content["tokens"]
        for where in ("src/geo.py:6", "haversine"):
            r = await client.call_tool("find_related", {"location": where, "mode": "bm25", "top_k": 5})
            assert not r.is_error, r.content
            out = r.structured_content
            paths = [h["path"] for h in out["results"]]
            assert out["query"] == where and paths and paths[0] == "src/distance.py", paths
            assert not any(h["path"] == "src/geo.py" and h["start_line"] <= 6 <= h["end_line"] for h in out["results"])
            assert out["tokens"] > 0
        r = await client.call_tool("find_related", {"location": "src/nope.py:3"})
        assert r.is_error and "src/nope.py: no such file" in text_of(r)
    st = subprocess.run(
        [sys.executable, "-m", "codesight_tui", "stats", "--json"], capture_output=True, text=True, timeout=120
    )
    assert st.returncode == 0, st.stderr
    rows = json.loads(st.stdout)
    assert [row["repo"] for row in rows] == [str(repo)] and rows[0]["searches"] == 3
    assert rows[0]["tokens"] > searched // 2 and rows[0]["file_tokens"] > 0 and rows[0]["results"] >= 3
    assert oct((_isolated_home / "data" / "stats.db").stat().st_mode & 0o777) == "0o600"


async def test_bad_arguments_are_one_line_like_the_cli(repo: Path) -> None:
    """Issue 35, item 7: top_k=-1 silently gave one hit, pydantic's report reached the agent, and
    an unknown language gave "no results"; language names take any case and the usual aliases."""
    async with server(repo) as client:
        for args, said in (
            ({"top_k": -1}, "top_k must be between 1 and 100"),
            ({"top_k": "many"}, "top_k: Input should be a valid integer"),
            ({"language": "klingon"}, "unknown language 'klingon'"),
        ):
            r = await client.call_tool("search", {"query": "haversine", "mode": "bm25", **args})
            text = text_of(r)
            assert r.is_error and said in text, (args, text)
            assert "\n" not in text and "pydantic" not in text and "Traceback" not in text, text
        for spelled in ("Python", "py", "PY"):
            r = await client.call_tool("search", {"query": "haversine", "mode": "bm25", "language": spelled})
            assert not r.is_error and r.structured_content["results"][0]["path"] == "src/geo.py", spelled


async def test_paths_outside_the_allowed_roots_are_refused(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("def secret_key():\n    return 42\n")
    (repo / "escape").symlink_to(outside)
    async with server(repo) as client:
        for path in ("/etc", str(outside), str(repo / ".." / "outside"), str(repo / "escape"), "../outside"):
            r = await client.call_tool("search", {"query": "secret_key", "repo_path": path, "mode": "bm25"})
            assert r.is_error and "outside the allowed roots" in text_of(r), (path, r.content)
            r = await client.call_tool("status", {"repo_path": path})
            assert r.is_error and "outside the allowed roots" in text_of(r)
        r = await client.call_tool("search", {"query": "secret_key", "repo_path": str(repo / "src"), "mode": "bm25"})
        assert not r.is_error and all(h["repo"] == str(repo) for h in r.structured_content["results"])
        assert not any("secret" in h["path"] for h in r.structured_content["results"])
        r = await client.call_tool("search", {"query": "  "})
        assert r.is_error and "empty" in text_of(r)
    assert not (outside / ".codesight").exists() and sorted(p.name for p in outside.iterdir()) == ["secret.py"]


async def test_several_repositories_are_one_ranked_list(repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    (other / "distance.py").write_text('def haversine_km(a, b):\n    """Great-circle distance."""\n    return 0\n')
    async with server(tmp_path) as client:
        r = await client.call_tool(
            "search", {"query": "haversine", "roots": [str(repo), str(other)], "mode": "bm25", "top_k": 6}
        )
        out = r.structured_content
        assert not r.is_error, r.content
        repos = [h["repo"] for h in out["results"]]
        assert {str(repo), str(other)} <= set(repos) and len(out["index"]) == 2
        r = await client.call_tool(
            "search", {"query": "haversine", "roots": [str(other)], "mode": "bm25", "file_glob": "*.py"}
        )
        assert [h["path"] for h in r.structured_content["results"]] == ["distance.py"]


async def test_watch_keeps_the_index_current_and_unwatch_stops(repo: Path) -> None:
    (repo / "src" / "loop").unlink()  # inotify, not the poll a symlinked directory asks for
    async with server(repo) as client:
        r = await client.call_tool("watch", {})
        assert not r.is_error and r.structured_content["watching"] and r.structured_content["mode"] == "events"
        r = await client.call_tool("watch", {})
        assert r.structured_content["message"] == "already watching"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the catch-up run commits the lexical phase
            r = await client.call_tool("status", {})
            if r.structured_content["state"]["indexed"]:
                break
            await asyncio.sleep(0.2)
        before = (await client.call_tool("watch", {})).structured_content["batches"]
        (repo / "src" / "fresh.py").write_text("def mongoose_dispatch():\n    pass\n")
        # Event-driven: wait for the watcher to hand over a batch after the save and for the index
        # to hold every file on disk (no fixed limit that a loaded machine misses); the cap is only
        # there so that a watcher that never acts fails instead of hanging.
        cap = time.monotonic() + 300
        while time.monotonic() < cap:
            batches = (await client.call_tool("watch", {})).structured_content["batches"]
            st = (await client.call_tool("status", {})).structured_content
            if batches > before and st["stale_files"] == 0 and not st["state"]["indexing"]:
                break
            await asyncio.sleep(0.1)
        else:
            pytest.fail("the watcher never indexed the saved file")
        r = await client.call_tool("search", {"query": "mongoose_dispatch", "mode": "bm25"})
        assert any(h["path"] == "src/fresh.py" for h in r.structured_content["results"])
        r = await client.call_tool("status", {})
        assert r.structured_content["state"]["watching"]
        r = await client.call_tool("unwatch", {})
        assert not r.structured_content["watching"] and r.structured_content["batches"] >= 1
        r = await client.call_tool("status", {})
        assert not r.structured_content["state"]["watching"]


def _consistency(data: Path, root: Path) -> list[str]:
    """The torture harness's consistency check (benchmarks/torture.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "torture", Path(__file__).resolve().parents[2] / "benchmarks" / "torture.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    found: list[str] = mod.consistency(data, root)
    return found


@pytest.mark.model
async def test_an_indexer_a_watcher_and_parallel_mcp_searches_at_once(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One writer at a time, by a file lock; everyone else searches what is there. No errors, and
    a consistent index at the end: one row per file, chunks = FTS rows, one vector per embedded
    chunk."""
    import subprocess

    monkeypatch.setenv("CODESIGHT_FULL_MODEL", "on")  # every writer embeds: the full model's pass too
    (repo / "src" / "loop").unlink()
    add_bulk(repo, files=8, per_file=10)
    env = dict(os.environ, CODESIGHT_PROGRESS="0")
    cli = [sys.executable, "-m", "codesight_tui"]
    watcher = subprocess.Popen(
        [*cli, "watch", str(repo)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    indexers, errors, searches = [], [], 0
    try:
        async with server(repo) as client:
            t_end = time.monotonic() + 25
            n = 0
            while time.monotonic() < t_end:
                n += 1
                (repo / f"bulk_{n % 8}.py").open("a").write(f"\n\ndef edited_{n}(x):\n    return x + {n}\n")
                if n % 10 == 1:
                    indexers.append(
                        subprocess.Popen(
                            [*cli, "index", str(repo)],
                            stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE,
                            text=True,
                            env=env,
                        )
                    )
                results = await asyncio.gather(
                    *[
                        client.call_tool("search", {"query": q, "top_k": 5})
                        for q in ("haversine", "scale the value", f"edited_{n - 3}", "compute_3_4")
                    ]
                )
                searches += len(results)
                errors += [text_of(r) for r in results if r.is_error]
                await asyncio.sleep(0.2)
            deadline = time.monotonic() + 60  # the last edits reach the index before the watcher stops
            while time.monotonic() < deadline:
                r = await client.call_tool("status", {})
                if r.structured_content["stale_files"] == 0 and not r.structured_content["state"]["indexing"]:
                    break
                await asyncio.sleep(0.5)
    finally:
        _, werr = stop(watcher, timeout=60)
        outs = [p.communicate(timeout=300) + (p.returncode,) for p in indexers]
    assert not errors and searches >= 40
    assert "Traceback" not in werr and watcher.returncode == 0, werr[-2000:]
    for _out, err, rc in outs:  # each finished, or said in one line that another process was writing
        assert rc in (0, 3) and "Traceback" not in err, err[-2000:]
    assert any(rc == 3 and "busy" in err for _, err, rc in outs) or any(rc == 0 for *_, rc in outs)
    done = subprocess.run(
        [*cli, "index", str(repo), "--wait", "--json"], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["vectors_pending"] == 0 and report["files_changed"] == 0  # the watcher had kept up
    assert _consistency(Path(os.environ["CODESIGHT_DATA_DIR"]), repo) == []
    status = json.loads(
        subprocess.run([*cli, "status", str(repo), "--json"], capture_output=True, text=True, env=env).stdout
    )
    assert status["changed"] == 0 and status["vectors"] == status["chunks"] and not status["indexing"]


async def test_find_related_looks_in_every_root_and_a_bad_glob_is_an_error(
    repo: Path, tmp_path: Path, _isolated_home: Path
) -> None:
    """Issue 48 item 29: with two roots, find_related finds path:line in the second without
    repo_path; a path filter with an unclosed '[' is an error, not an empty answer."""
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    (other / "algo.py").write_text(
        "def levenshtein(a, b):\n    return 0\n\n\ndef edit_distance(s, t):\n    return levenshtein(s, t)\n"
    )
    async with server(repo, other) as client:
        r = await client.call_tool("find_related", {"location": "algo.py:5", "mode": "bm25"})
        assert not r.is_error, r.content
        # issue 66 item 23: past the file's end, the root that has the file answers, not the other
        r = await client.call_tool("find_related", {"location": "algo.py:30", "mode": "bm25"})
        assert r.is_error and text_of(r).endswith("algo.py has no line 30"), r.content
        r = await client.call_tool("find_related", {"location": "nowhere.py:3", "mode": "bm25"})
        assert r.is_error and "nowhere.py: no such file" in text_of(r), r.content
        r = await client.call_tool("search", {"query": "haversine", "mode": "bm25", "file_glob": "[[["})
        assert r.is_error and "'['" in text_of(r)


async def test_follow_the_code_through_a_real_client(nav_repo: Path, _isolated_home: Path) -> None:
    """Issue 51: find_definition, find_references, find_callers and find_callees: read-only,
    structured, each answer's size in tokens."""
    async with server(nav_repo) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name in ("find_definition", "find_references", "find_callers", "find_callees"):
            assert read_only(tools[name]) and tools[name].input_schema["required"] == ["symbol"]
            assert {"sites", "candidates", "resolution", "tokens"} <= set(schema_of(tools[name])["properties"])
        r = await client.call_tool("find_definition", {"symbol": "LRUCache"})
        assert not r.is_error, r.content
        out = r.structured_content
        assert (
            out["resolution"] == "resolved" and out["symbol"]["path"] == "store/cache.py" and out["symbol"]["line"] == 5
        )
        assert out["tokens"] > 0 and json.loads(text_of(r)) == out
        r = await client.call_tool("find_references", {"symbol": "evict"})
        assert [(s["line"], s["kind"]) for s in r.structured_content["sites"]] == [(16, "call"), (18, "definition")]
        r = await client.call_tool("find_callers", {"symbol": "make_cache"})
        assert [(s["path"], s["line"], s["within"]["name"]) for s in r.structured_content["sites"]] == [
            ("app/service.py", 9, "lookup")
        ]
        r = await client.call_tool("find_callees", {"symbol": "app/service.py:8"})
        out = r.structured_content
        assert [(s["name"], s["target"]["line"]) for s in out["sites"]] == [("make_cache", 4), ("put", 14), ("get", 10)]
        r = await client.call_tool("find_callers", {"symbol": "  "})
        assert r.is_error and "say what to follow" in text_of(r)
        # issue 66 item 4: a path outside is refused alike whether it exists or not
        said = set()
        for path in ("/etc/passwd", "/etc/no-such-file-here", "/etc/passwd:1", "/etc/no-such-file-here:1"):
            r = await client.call_tool("find_definition", {"symbol": path})
            assert r.is_error, (path, r.content)
            said.add(text_of(r).replace(path.split(":")[0], "PATH"))
        assert len(said) == 1 and "is not inside" in said.pop()
