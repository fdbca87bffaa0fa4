"""Same answers as ripgrep: ``codesight grep`` against ``rg --no-config -n`` on the polyglot sources.

    python benchmarks/grep_parity.py [--repos .cache/polyglot] [--patterns 500] [--seed 7]

Draws patterns from the sources themselves, a few from each repository: identifiers; their
case-insensitive, smart-case and whole-word variants; literals with punctuation (``-F``); a
character class, an alternation, anchors and repeats around them; patterns with no trigram; and
pieces of the lines the chunks do not hold as they are (a line cut in pieces, a line of a file
with a masked secret), literal or followed by ``\\W``, ten of each in a repository that has them. Each
runs through codesight's grep (in process, over the repository's index: the index narrows, RE2
checks the files on disk) and through rg over the same repository, with the same ignore rules
(``--hidden --no-require-git --no-ignore-parent``: codesight reads hidden files and .gitignore
without git, and only the ignore files inside the root it indexes; and the
files codesight does not index by design, secrets and binary names and files over the size cap,
are left out of rg's answer). The sets of (path, line) must be equal for every pattern. A pattern
one engine rejects is listed with its reason. Needs ``rg`` on PATH.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from codesight_tui.core.engine import CodeSight
from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.search.contract import GrepOptions, SearchRequest

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,30}")
PUNCT = re.compile(r"[^\sA-Za-z0-9_]")
NO_TRIGRAM = [r"\w+\(\)", r"[0-9]{4}", r"^\s*$", r"\)\s*\{$", r"[A-Z]{2}\w", r"\t\t\t", r"^#", r"=>\s"]


@dataclass(frozen=True)
class Case:
    kind: str
    pattern: str
    flags: tuple[str, ...] = ()

    def options(self) -> GrepOptions:
        case = "insensitive" if "-i" in self.flags else "smart" if "-S" in self.flags else "sensitive"
        return GrepOptions(fixed="-F" in self.flags, case=case, word="-w" in self.flags)


def draw(cs: CodeSight, root: Path, n: int, rng: random.Random) -> list[Case]:
    """``n`` patterns from the repository's own indexed lines."""
    paths = [p for (p,) in cs.store.conn.execute("SELECT path FROM files WHERE skipped IS NULL ORDER BY path")]
    lines: list[str] = []
    for path in rng.sample(paths, min(len(paths), 40)):
        try:
            text = (root / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        lines += [ln for ln in text.split("\n") if 8 <= len(ln.strip()) <= 200]
    idents = sorted({m for ln in lines for m in IDENT.findall(ln)})
    if not idents:
        return []
    out: list[Case] = []
    kinds = ["ident", "ident-i", "ident-w", "ident-S", "literal", "class", "alternation", "anchor", "repeat", "none"]
    for kind, hard in hard_lines(cs, root).items():  # ten more of each where the repository has them
        for _ in range(10):
            line = rng.choice(hard)
            start = rng.randrange(0, max(1, len(line) - 8))
            piece = line[start : start + rng.randint(8, 40)]
            escaped = re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", piece)
            out.append(Case(kind, piece, ("-F",)) if rng.random() < 0.5 else Case(kind, escaped + r"\W"))
    for k in range(n):
        kind = kinds[k % len(kinds)]
        a, b = rng.choice(idents), rng.choice(idents)
        if kind == "ident":
            out.append(Case(kind, a))
        elif kind == "ident-i":
            out.append(Case(kind, a.lower() if rng.random() < 0.5 else a.upper(), ("-i",)))
        elif kind == "ident-w":
            out.append(Case(kind, a, ("-w",)))
        elif kind == "ident-S":
            out.append(Case(kind, a.lower() if rng.random() < 0.5 else a, ("-S",)))
        elif kind == "literal":
            with_punct = [ln for ln in rng.sample(lines, min(len(lines), 50)) if PUNCT.search(ln.strip())]
            line = (rng.choice(with_punct) if with_punct else rng.choice(lines)).strip()
            start = rng.randrange(0, max(1, len(line) - 6))
            out.append(Case(kind, line[start : start + rng.randint(6, 20)], ("-F",)))
        elif kind == "class":
            i = rng.randrange(1, len(a) - 1)
            out.append(Case(kind, f"{a[:i]}[{a[i]}{a[i].swapcase()}0-9]{a[i + 1 :]}"))
        elif kind == "alternation":
            out.append(Case(kind, f"({a}|{b})"))
        elif kind == "anchor":
            out.append(Case(kind, rng.choice([rf"^\s*{a}", rf"{a}\W*$", rf"^{a}"])))
        elif kind == "repeat":
            out.append(Case(kind, rng.choice([rf"{a}\w+", rf"{a}\s*\(", rf"{a[:3]}(?:{a[3:]})?\b", rf"{a}.*{b}"])))
        else:
            out.append(Case(kind, rng.choice(NO_TRIGRAM)))
    return out


def hard_lines(cs: CodeSight, root: Path) -> dict[str, list[str]]:
    """The lines the index holds other than as the chunks hold them: lines cut in pieces (kept
    whole beside them) and the lines of files with a masked secret (read as they are on disk)."""
    out: dict[str, list[str]] = {}
    conn = cs.store.conn
    out["cut"] = [text for (text,) in conn.execute("SELECT content FROM grams_lines ORDER BY id LIMIT 200")]
    for (path,) in conn.execute("SELECT path FROM files WHERE masked > 0 ORDER BY path LIMIT 20"):
        try:
            lines = (root / path).read_text(encoding="utf-8").split("\n")
        except (OSError, UnicodeDecodeError):
            continue
        out.setdefault("masked", []).extend(ln for ln in lines if len(ln.strip()) >= 8)
    return {kind: lines for kind, lines in out.items() if lines}


def ours(cs: CodeSight, case: Case) -> set[tuple[str, int]] | str:
    try:
        answer = cs.search(SearchRequest(case.pattern, limit=10**9, grep=case.options()))
    except CodeSightError as exc:
        return str(exc)
    return {(h.path, h.line) for h in answer}


def ripgrep(root: Path, case: Case, indexed: set[str]) -> set[tuple[str, int]] | str:
    cmd = [
        "rg",
        "--no-config",
        "-n",
        "--null",
        "--no-heading",
        "--with-filename",
        "--hidden",
        "--no-require-git",
        "--no-ignore-parent",
    ]
    cmd += ["--max-filesize", "1000000", *case.flags, "-e", case.pattern, "--", "."]
    run = subprocess.run(cmd, cwd=root, capture_output=True, timeout=120)
    if run.returncode == 2 and not run.stdout:
        return run.stderr.decode("utf-8", "replace").strip().splitlines()[-1] if run.stderr else "rg failed"
    found: set[tuple[str, int]] = set()
    for line in run.stdout.split(b"\n"):
        if b"\0" not in line:
            continue
        path, rest = line.split(b"\0", 1)
        rel = path.decode("utf-8", "surrogateescape").removeprefix("./")
        if rel in indexed:
            found.add((rel, int(rest.split(b":", 1)[0])))
    return found


def roots(path: Path) -> list[Path]:
    """The repositories to compare on: an eval collection's benchmark roots (those its indexes
    are of), or each folder of ``path``."""
    listed = path / "repos.json"
    if listed.is_file():
        entries = json.loads(listed.read_text(encoding="utf-8"))
        return [path / "repos" / e["name"] / (e.get("benchmark_root") or "") for e in entries]
    return sorted(p for p in path.iterdir() if p.is_dir())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--repos",
        default=".cache/polyglot",
        help="an eval collection (repos.json: each benchmark root), or a folder of repositories",
    )
    ap.add_argument("--patterns", type=int, default=500)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--show", type=int, default=20, help="mismatches shown")
    args = ap.parse_args()
    if shutil.which("rg") is None:
        sys.exit("rg is not on PATH")
    repos = roots(Path(args.repos))
    rng = random.Random(args.seed)
    per = -(-args.patterns // len(repos))
    totals = {"patterns": 0, "equal": 0, "differ": 0, "rejected": 0, "lines": 0}
    by_kind: dict[str, list[int]] = {}
    shown = 0
    t_ours = t_rg = 0.0
    for root in repos:
        cs = CodeSight(root)
        cs.index(embed=False)
        indexed = {p for (p,) in cs.store.conn.execute("SELECT path FROM files WHERE skipped IS NULL")}
        for case in draw(cs, root, per, rng):
            t0 = time.perf_counter()
            mine = ours(cs, case)
            t1 = time.perf_counter()
            theirs = ripgrep(root, case, indexed)
            t_ours += t1 - t0
            t_rg += time.perf_counter() - t1
            totals["patterns"] += 1
            tally = by_kind.setdefault(case.kind, [0, 0, 0])
            if isinstance(mine, str) or isinstance(theirs, str):
                totals["rejected"] += 1
                tally[2] += 1
                who = "codesight" if isinstance(mine, str) else "rg"
                why = mine if isinstance(mine, str) else theirs
                print(f"rejected by {who}: {root.name} {case.flags} {case.pattern!r}: {why}")
                continue
            totals["lines"] += len(theirs)
            if mine == theirs:
                totals["equal"] += 1
                tally[0] += 1
                continue
            totals["differ"] += 1
            tally[1] += 1
            if shown < args.show:
                shown += 1
                extra, missing = sorted(mine - theirs)[:3], sorted(theirs - mine)[:3]
                print(f"DIFFER {root.name} {case.flags} {case.pattern!r}: only ours {extra}, only rg's {missing}")
        cs.close()
    print(f"\n{totals['patterns']} patterns over {len(repos)} repositories, {totals['lines']:,} matching lines (rg)")
    print(f"equal {totals['equal']}, differ {totals['differ']}, rejected {totals['rejected']}")
    for kind, (eq, diff, rej) in sorted(by_kind.items()):
        print(f"  {kind:<12} equal {eq:>4}  differ {diff:>3}  rejected {rej:>3}")
    print(f"time: codesight in process {t_ours:.1f} s, rg {t_rg:.1f} s (same run; rg includes its process start)")
    return 0 if totals["differ"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
