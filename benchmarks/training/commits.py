"""Issue 49: (commit message, changed code) pairs from the corpus repositories' history.

    python benchmarks/training/commits.py [--per-repo 400] [--commits 4000]

A docstring says what a function is; a commit's subject says what someone wanted of the code, in
the words people search with ("increase pool capacity", "retry failed uploads on timeout"). For
each repository of ``manifest.json`` (already vetted: permissive licence, no evaluation
repository), read from the same local git mirror, the last ``--commits`` commits before the
manifest's commit are read, and a commit gives a pair when:
- it is not a merge, and changes exactly one code file that the index counts as source
  (``paths.classify``: no test, vendored, generated, docs or example file) and is no build script
  (tests, docs and other files may change beside it), with at most ``MAX_CHANGED`` changed lines
  in it;
- its subject, with conventional prefixes (``fix(parser):``, ``[core]``, ``globset:``) and issue
  numbers taken off, has 3 to 25 words and is no release, version bump, merge, revert, typo,
  formatting or lint commit (``corpus.py``'s noise filter too);
- the changed lines of the file after the commit fall mostly (``MIN_SHARE``) in one of the
  chunks codesight's own chunker cuts that file into: that chunk, written as ``embed_text`` writes
  it, is the positive, as for the docstring pairs.
The overlap check is ``corpus.py``'s: a file whose blob id occurs in an evaluation repository, or
that sits under a folder named like one, gives no pair. Pairs are deduplicated on the normalised
subject and on the positive, at most ``--per-repo`` a repository (chosen with a fixed seed), and
written to ``$CODESIGHT_TRAIN_DIR/commit-pairs.jsonl`` with ``where: commit``; the counts go to
``commit-pairs.json`` there. ``train_static.py --extra`` trains on them beside the docstring pairs.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import re
import subprocess
import time
from pathlib import Path

from corpus import (
    _NOISE,
    _WORDY,
    MANIFEST,
    WORK,
    deduplicated,
    excluded_blobs,
    excluded_names,
    mirror_of,
    read_blobs,
)

MAX_CHANGED = 80  # changed lines (added and removed) in the one code file
MIN_SHARE = 0.6  # of the changed lines after the commit, in the chunk taken
_PREFIX = re.compile(r"^\s*(?:\[[^\]]{1,40}\]\s*|[\w./,*-]{1,40}(?:\([^)]{0,40}\))?!?:\s+)")
_ISSUE = re.compile(
    r"\s*\((?:#|gh-|GH-)\d+\)|\s*(?:closes|fixes|fix|resolves|see|refs?)?\s*(?:#|gh-|GH-)\d+", re.IGNORECASE
)
_SKIP_SUBJECT = re.compile(
    r"(?i)^(?:merge|revert|bump|release|prepare|version|v?\d+\.\d+|update (?:changelog|readme|docs?|deps|"
    r"dependencies|copyright|license|year)|changelog|wip\b|initial commit|squash|fixup!|amend)|\btypos?\b|"
    r"\bwhitespace\b|\bformatting\b|\breformat|\blint(?:ing|er)?\b|\bclippy\b|\brubocop\b|\beslint\b|\bprettier\b|"
    r"\bgofmt\b|\brustfmt\b|\bblack\b|\bisort\b|\bspelling\b|\bbump(?:ed|s)?\b|\breleas(?:e|ed|ing)\b|"
    r"\bcopyright\b|\bsigned-off-by\b|\bdependabot\b|\brenovate\b|\bcode review\b|\breview (?:comments?|feedback)\b|"
    r"\bpr (?:comments?|feedback)\b|^(?:apply|address) (?:suggestions?|comments?|feedback)|^(?:minor|small|more|some) "
    r"(?:fix(?:es)?|changes?|tweaks?|cleanups?)$|^(?:fix|fixed|fixes) (?:build|tests?|ci|compilation|warnings?)$|"
    r"^(?:cleanup|clean up|tidy|refactor(?:ing)?|tweak|wip|misc|oops)\b|^(?:update|upgrade)\b.*\bto v?\d|\bupgrade\b"
)
# Build and packaging scripts: what changes in them is versions and plugins, not behaviour.
_BUILD_FILE = re.compile(
    r"(?i)(?:^|/)(?:[\w.-]*\.gradle(?:\.kts)?|Package\.swift|setup\.py|conanfile\.py|noxfile\.py|"
    r"Rakefile|[\w-]*\.gemspec|Gemfile|build\.rs|build\.zig|rebar\.config|mix\.exs|"
    r"webpack\.config\.\w+|rollup\.config\.\w+|vite\.config\.\w+|Gruntfile\.\w+|gulpfile\.\w+)$"
)


def subject_query(subject: str) -> str | None:
    """The commit's subject as a query, or None where it says nothing about the code."""
    s = subject.strip()
    for _ in range(2):
        s = _PREFIX.sub("", s, count=1)
    s = _ISSUE.sub("", s).strip().rstrip(".").strip()
    if not s or _SKIP_SUBJECT.search(s) or _NOISE.search(s):
        return None
    words = _WORDY.findall(s)
    if not 3 <= len(words) <= 25 or len(s.split()) > 30:
        return None
    if len(words) < 0.6 * len(s.split()):  # mostly paths, numbers or symbols
        return None
    return s[0].upper() + s[1:] if s[0].islower() else s


def candidates(gitdir: Path, commit: str, limit: int) -> list[tuple[str, str, str]]:
    """(commit, path, query) of the commits that change one code file outside tests, few lines."""
    from codesight_tui.core.ingest.paths import DECLARATIONS, SOURCE, classify
    from codesight_tui.core.languages import CODE_LANGUAGES, detect_language

    out = subprocess.run(
        [
            "git",
            "-C",
            str(gitdir),
            "log",
            "--no-merges",
            "--no-renames",
            "--numstat",
            "--format=%x00%H%x09%s",
            "-n",
            str(limit),
            commit,
        ],
        capture_output=True,
        check=False,
        text=True,
        errors="replace",
    ).stdout  # where the mirror lacks an object (a snapshot may
    # leave its largest files out), git stops there: the commits read before it still count
    found = []
    for block in out.split("\0")[1:]:
        head, _, rest = block.partition("\n")
        sha, _, subject = head.partition("\t")
        query = subject_query(subject)
        if query is None:
            continue
        code: list[tuple[str, int]] = []
        for line in rest.splitlines():
            parts = line.split("\t")
            if len(parts) != 3:
                continue
            added, removed, path = parts
            lang = detect_language(path)
            # the index's own reading of a path: tests, vendored, generated, docs and examples are no source
            if (
                lang not in CODE_LANGUAGES
                or classify(path, lang) not in (SOURCE, DECLARATIONS)
                or _BUILD_FILE.search(path)
            ):
                continue
            changed = int(added) + int(removed) if added.isdigit() and removed.isdigit() else 10**6
            code.append((path, changed))
        if len(code) == 1 and code[0][1] <= MAX_CHANGED:
            found.append((sha, code[0][0], query))
    return found


def changed_lines(gitdir: Path, picks: list[tuple[str, str, str]]) -> dict[str, list[int]]:
    """Each picked commit's changed lines in its file, after the commit (a removal counts as the
    line it left its place at)."""
    want = {sha: path for sha, path, _ in picks}
    proc = subprocess.run(
        ["git", "-C", str(gitdir), "diff-tree", "--stdin", "-p", "-U0", "--no-renames", "--format=%x00%H"],
        input="\n".join(want) + "\n",
        capture_output=True,
        text=True,
        errors="replace",
        check=True,
    )
    lines: dict[str, list[int]] = {}
    for block in proc.stdout.split("\0")[1:]:
        sha, _, body = block.partition("\n")
        sha = sha.strip()
        path = want.get(sha)
        if path is None:
            continue
        keep = False
        got: list[int] = []
        for ln in body.splitlines():
            if ln.startswith("diff --git "):
                keep = ln.endswith(f" b/{path}")
            elif keep and ln.startswith("@@"):
                m = re.match(r"@@ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", ln)
                if m is None:
                    continue
                start, count = int(m.group(2)), int(m.group(3) or 1)
                got += range(start, start + count) if count else [max(start, 1)]
        lines[sha] = got
    return lines


def mine(
    repo: str, gitdir: Path, commit: str, limit: int, blobs_out: set[str], names_out: set[str], chunker
) -> tuple[list[dict], collections.Counter[str]]:
    from codesight_tui.core.ingest.chunker import embed_text
    from codesight_tui.core.languages import detect_language

    counts: collections.Counter[str] = collections.Counter()
    picks = candidates(gitdir, commit, limit)
    counts["candidates"] = len(picks)
    if not picks:
        return [], counts
    lines = changed_lines(gitdir, picks)
    ids = subprocess.run(
        ["git", "-C", str(gitdir), "cat-file", "--batch-check=%(objectname)"],
        input="".join(f"{sha}:{path}\n" for sha, path, _ in picks),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    blob_of = {}
    for (sha, _path, _), line in zip(picks, ids, strict=True):
        if re.fullmatch(r"[0-9a-f]{40}", line.strip()):
            blob_of[sha] = line.strip()
    data_of = dict(read_blobs(gitdir, sorted(set(blob_of.values()))))
    pairs = []
    for sha, path, query in picks:
        blob = blob_of.get(sha)
        if blob is None or blob not in data_of or not lines.get(sha):
            counts["no_file_after"] += 1
            continue
        if blob in blobs_out:
            counts["dropped_overlap"] += 1
            continue
        if any(part.lower() in names_out for part in path.split("/")[:-1]):
            counts["dropped_named"] += 1
            continue
        data = data_of[blob]
        if b"\0" in data[:8000] or len(data) > 200_000:
            continue
        try:
            chunks = chunker.chunk(path, detect_language(path), data.decode("utf-8", errors="replace"))
        except Exception:  # noqa: BLE001 - one file the chunker cannot take is skipped, the corpus goes on
            continue
        touched = lines[sha]
        best, best_n = None, 0
        for c in chunks:
            n = sum(c.start_line <= ln <= c.end_line for ln in touched)
            if n > best_n:
                best, best_n = c, n
        if best is None or best_n < MIN_SHARE * len(touched):
            counts["spread"] += 1
            continue
        code = best.content.strip("\n")
        if len([ln for ln in code.split("\n") if ln.strip()]) < 2 or len(code) < 40:
            counts["too_small"] += 1
            continue
        pairs.append(
            {
                "repo": repo,
                "lang": detect_language(path),
                "path": path,
                "kind": "commit",
                "where": "commit",
                "commit": sha,
                "query": query,
                "doc": embed_text(path, best.scope, code[:2000]),
            }
        )
    counts["pairs"] = len(pairs)
    return pairs, counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--commits", type=int, default=4000, help="commits read a repository, newest first")
    ap.add_argument("--per-repo", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()

    from codesight_tui.core.ingest.chunker import Chunker
    from codesight_tui.core.ingest.tokens import TokenCounter, resolve_model

    info = resolve_model("minilm")
    chunker = Chunker(TokenCounter(info.tokenizer_file), info.max_seq_length - 2)
    names_out = excluded_names()
    blobs_out, _ = excluded_blobs(args.mirrors)
    manifest = json.loads(MANIFEST.read_text())
    total: collections.Counter[str] = collections.Counter()
    all_pairs: list[dict] = []
    for r in manifest["repositories"]:
        gitdir = mirror_of(args.mirrors, r["repo"])
        if gitdir is None:
            total["repositories_missing"] += 1
            continue
        pairs, counts = mine(r["repo"], gitdir, r["commit"], args.commits, blobs_out, names_out, chunker)
        random.Random(f"{args.seed}:{r['repo']}").shuffle(pairs)
        all_pairs += pairs[: args.per_repo]
        total.update(counts)
        print(f"{r['repo']:50} candidates {counts['candidates']:5}  pairs {counts['pairs']:5}", flush=True)
    final = deduplicated(all_pairs)
    random.Random(args.seed).shuffle(final)
    with open(WORK / "commit-pairs.jsonl", "w") as f:
        for p in final:
            f.write(json.dumps(p) + "\n")
    summary = {
        "pairs": len(final),
        "before_dedupe": len(all_pairs),
        "counts": dict(total),
        "by_language": dict(sorted(collections.Counter(p["lang"] for p in final).items())),
        "commits_read_per_repo": args.commits,
        "per_repo": args.per_repo,
        "seed": args.seed,
        "seconds": round(time.perf_counter() - t0),
    }
    (WORK / "commit-pairs.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
