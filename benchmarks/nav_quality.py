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
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from codesight_tui.core.ingest.chunker import GRAMMARS, parser_for  # noqa: E402
from codesight_tui.core.ingest.paths import VENDOR, classify  # noqa: E402
from codesight_tui.core.ingest.symbols import extract  # noqa: E402
from codesight_tui.core.languages import detect_language  # noqa: E402

MAX_FILE = 1_000_000
# ctags' kinds that are functions, methods, classes and types (Python's methods are its "member"s).
# Left out: prototypes, fields, variables, constants, macros, namespaces and packages, imports
# ("alias" in PHP), impl blocks, type aliases and typedefs, and anonymous functions.
KINDS = {"function", "func", "method", "class", "struct", "interface", "enum", "trait", "union", "record", "protocol",
         "singletonMethod", "object", "fn", "module"}
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
        return not (re.search(r"\bfunction\s+" + named + r"\s*\(", text) or re.search(
            named + r"\s*=\s*(function\b|[^=]*\b(and|or)\s+function\b)", text))
    return False


def cmd_ctags(sources: Path) -> int:
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # found, ctags' tags, left out as no definition
    misses: dict[str, list[str]] = defaultdict(list)
    left_out: dict[str, list[str]] = defaultdict(list)
    for repo in sorted(p for p in sources.iterdir() if p.is_dir()):
        out = subprocess.run(["ctags", "-R", "--output-format=json", "--fields=+nKl", "-f", "-", "."], cwd=repo,
                             capture_output=True, text=True, errors="replace")
        tags: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for line in out.stdout.splitlines():
            try:
                t = json.loads(line)
            except ValueError:
                continue
            kind = t.get("kind")
            if t.get("_type") != "tag" or "line" not in t or not (
                    kind in KINDS or kind == "member" and t.get("language") in MEMBER_IS_METHOD):
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
        print(f"  missed in {lang}: " + "; ".join(ms[:int(os.environ.get("NAV_MISSES", "3"))]))
    return 0


PROSE = ("comment", "string", "heredoc", "char_literal", "raw_string", "template_string", "interpreted_string",
         "character")


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
            for d in (syms.defs if syms else []):
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
            out = subprocess.run(["rg", "-w", "--json", "-F", name, "."], cwd=repo, capture_output=True, text=True,
                                 errors="replace")
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
                    for r in (syms.refs if syms else []):
                        lines[r.name].add(r.line)
                    for d in (syms.defs if syms else []):
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
                worst.append((both / max(1, len(truth)), f"{repo.name} {name}: missed {sorted(truth - ours)[:3]},"
                                                          f" extra {sorted(ours - truth)[:3]}"))
    print("| language | symbols | rg lines (code) | codesight lines | precision | recall |")
    print("| --- | --- | --- | --- | --- | --- |")
    for lang in langs:
        both, ours_n, truth_n = totals[lang]
        print(f"| {lang} | {per_lang} | {truth_n:,} | {ours_n:,} | {both / max(1, ours_n):.3f} | {both / max(1, truth_n):.3f} |")
    both = sum(t[0] for t in totals.values())
    ours_n = sum(t[1] for t in totals.values())
    truth_n = sum(t[2] for t in totals.values())
    print(f"| all | {per_lang * len(langs)} | {truth_n:,} | {ours_n:,} | {both / ours_n:.3f} | {both / truth_n:.3f} |")
    for _, text in sorted(worst)[:12]:
        print("  " + text)
    return 0


def cmd_jedi(repos: list[Path], per_repo: int = 100, seed: int = 51) -> int:
    import jedi

    from codesight_tui import CodeSight

    rows = []
    misses: list[str] = []
    for repo in repos:
        with tempfile.TemporaryDirectory() as data:
            os.environ["CODESIGHT_DATA_DIR"] = data
            cs = CodeSight(repo, lexical_processes=False)
            cs.index(embed=False)
            conn = cs.store.conn
            defs = conn.execute("SELECT f.path, d.line, d.name FROM defs d JOIN sym_files f ON f.id = d.file_id"
                                " WHERE d.kind IN ('def', 'async def')"
                                " ORDER BY f.path, d.line").fetchall()
            rng = random.Random(seed)
            sample = rng.sample(defs, min(per_repo, len(defs)))
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
                    rel = os.path.relpath(str(r.module_path), repo)
                    if rel.startswith(".."):
                        continue
                    try:
                        lines = (repo / rel).read_text(encoding="utf-8", errors="replace").split("\n")
                    except OSError:
                        continue
                    after = lines[r.line - 1][r.column + len(name):].lstrip()
                    if after.startswith("("):
                        calls.add((rel, r.line))
                ours = {(s.path, s.line) for s in cs.callers(f"{path}:{line}").sites}
                resolved_defs += 1
                misses.extend(f"{repo.name}: {name} ({path}:{line}) called at {p}:{n}" for p, n in sorted(calls - ours))
                total += len(calls)
                hit += len(calls & ours)
                ours_total += len(ours)
            rows.append((repo.name, resolved_defs, total, hit, ours_total))
            cs.close()
    print("| repository | definitions | Jedi's call sites | found by codesight | recall | codesight's callers |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, n, total, hit, ours_total in rows:
        print(f"| {name} | {n} | {total} | {hit} | {hit / max(1, total):.3f} | {ours_total} |")
    for m in misses[:15]:
        print("  missed: " + m)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("check", choices=("ctags", "rg", "jedi"))
    ap.add_argument("repos", nargs="*", type=Path)
    ap.add_argument("--sources", type=Path, default=ROOT / ".cache" / "polyglot" / "repos")
    args = ap.parse_args()
    if args.check == "ctags":
        return cmd_ctags(args.sources)
    if args.check == "rg":
        return cmd_rg(args.sources)
    return cmd_jedi([r.resolve() for r in args.repos])


if __name__ == "__main__":
    raise SystemExit(main())
