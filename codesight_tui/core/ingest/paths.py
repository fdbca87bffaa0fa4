"""Where a repository's index lives, and what kind of file a path is."""

from __future__ import annotations

import hashlib
import os
import re
from functools import lru_cache
from pathlib import Path

from codesight_tui.core.languages import CODE_LANGUAGES, detect_language

SOURCE, TEST, DOCS, VENDOR, DECLARATIONS, DATA, DOCUMENT, CONFIG = 0, 1, 2, 3, 4, 5, 6, 7
# Embedding order: source first, then type declarations, tests, docs, office documents (PDF, DOCX,
# PPTX), configuration, vendored/generated files, and data last (translation catalogs, tables).
VALUE_ORDER = {SOURCE: 0, DECLARATIONS: 1, TEST: 2, DOCS: 3, DOCUMENT: 4, CONFIG: 5, VENDOR: 6, DATA: 7}
_DOCUMENT = re.compile(r"\.(pdf|docx|pptx)$", re.IGNORECASE)

_VENDOR = re.compile(
    r"(^|/)(vendor|vendored|third_party|third-party|thirdparty|node_modules|external|extern|deps|"
    r"_vendor|site-packages|bower_components|dist|build|out|target|generated|gen)/"
    r"|[-.]min\.(js|css)$|[-_.]generated\.|\.pb\.go$|_pb2\.py$|\.lock$|-lock\.json$|\.map$"
    r"|(^|/)PKG-INFO$|\.egg-info/"  # packaging metadata generated from the README
)
_TEST = re.compile(
    r"(^|/)(tests?|__tests__|spec|specs|testing|fixtures?|testdata|e2e|benchmarks?)/"
    r"|(^|/)test_[^/]*$|_tests?\.[a-z]+$|\.(test|spec)\.[a-z]+$|(^|/)conftest\.py$|Tests?\.[a-z]+$"
)
_DOCS = re.compile(
    r"(^|/)(docs?|documentation|examples?|samples?|demos?|tutorials?|site|man)/"
    r"|\.(stub|tt|tpl|mustache)$"  # scaffolding templates that generators copy into new projects
    r"|\.(md|rst|txt|adoc|markdown)$",
    re.IGNORECASE,
)
# A project's notes by name (README, LICENSE-MIT, HISTORY.rst, Changes), but not code named alike:
# changeset.ex, history.lua and license_check.go are source.
_DOC_NAMES = re.compile(
    r"(^|/)(README|CHANGELOG|CHANGES|HISTORY|LICENSE|COPYING|NOTICE|AUTHORS)([-_.][^/]*)?$", re.IGNORECASE
)

# Data rather than code: translation catalogs (gettext, XLIFF, Apple strings, .NET resources) and
# tables. Thousands of near-identical entries would otherwise crowd out code in vector search.
_DATA = re.compile(
    r"\.(po|pot|mo|xliff|xlf|strings|stringsdict|resx|csv|tsv|arb)$"
    r"|(^|/)(locales?|i18n|l10n|translations)/[^/]*\.(json|ya?ml|properties|toml|ini)$",
    re.IGNORECASE,
)

# Type declarations and stubs that restate an implementation's API (TypeScript .d.ts, Python .pyi),
# and C headers (a .h file read as C, not C++): their prototypes, structs and macros declare what the
# .c files implement. A function defined in a header is the ranking's business (``ranking._kind``).
_DECLARATIONS = re.compile(r"\.d\.[cm]?ts$|\.pyi$")

# Configuration and data formats rather than code: JSON, YAML, TOML, INI and XML files (a CI
# workflow, a manifest, redis's commands/*.json that describe each command), and text of no known
# format (a build file, a generated table, a template). See ``classify``.
CONFIG_LANGUAGES = frozenset(["json", "yaml", "toml", "ini", "xml", "text"])


@lru_cache(maxsize=65_536)
def classify(rel_path: str, language: str | None = None) -> int:
    """SOURCE, TEST, DOCS, VENDOR (vendored, generated, minified, lock files), DECLARATIONS, DATA
    (translation catalogs, tables), DOCUMENT (PDF, DOCX, PPTX) or CONFIG (configuration and data
    formats). ``language`` is the file's as the index detected it (a script without an extension is
    ``shell`` by its shebang line); by default it is guessed from the name alone."""
    if _DATA.search(rel_path):
        return DATA
    if _VENDOR.search(rel_path):
        return VENDOR
    if _TEST.search(rel_path):
        return TEST
    if _DOCUMENT.search(rel_path):
        return DOCUMENT
    if _DOCS.search(rel_path) or (_DOC_NAMES.search(rel_path) and detect_language(rel_path) not in CODE_LANGUAGES):
        return DOCS
    language = language or detect_language(rel_path)
    if _DECLARATIONS.search(rel_path) or (language == "c" and rel_path.endswith(".h")):
        return DECLARATIONS
    if language in CONFIG_LANGUAGES:
        return CONFIG
    return SOURCE


def index_dir_for(root: Path, data_dir: Path) -> Path:
    """``<data_dir>/<sha256(absolute root)[:16]>``: one directory per repository, outside it."""
    digest = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
    return data_dir.expanduser() / digest


def outermost(roots: list[Path]) -> list[Path]:
    """``roots`` without duplicates and without any that lies inside another (whose index covers
    it already): twelve overlapping subdirectories are one index, not twelve. Order is kept."""
    real = [Path(r).resolve() for r in roots]
    out: list[Path] = []
    for r in dict.fromkeys(real):
        if not any(o != r and o in r.parents for o in real):
            out.append(r)
    return out


def find_repo_root(start: Path) -> Path:
    """The enclosing git work tree of ``start`` (walking up to ``.git``), else ``start`` itself."""
    start = start.resolve()
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return start


def git_head(root: Path) -> str | None:
    """The commit ``HEAD`` points at, read from ``.git`` without running git."""
    git = root / ".git"
    try:
        if git.is_file():  # worktree: "gitdir: /path"
            git = Path(git.read_text().split(":", 1)[1].strip())
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head
        ref = head.split(":", 1)[1].strip()
        for base in (git, Path(str(git).split("/worktrees/")[0]) if "/worktrees/" in str(git) else git):
            ref_file = base / ref
            if ref_file.is_file():
                return ref_file.read_text().strip()
            packed = base / "packed-refs"
            if packed.is_file():
                for line in packed.read_text().splitlines():
                    if line.endswith(" " + ref):
                        return line.split()[0]
    except (OSError, IndexError):
        return None
    return None


def tree_bytes(path: Path) -> int:
    """Bytes of a file, or of every file under a folder (links are not followed; what vanishes
    meanwhile counts nothing)."""
    path = Path(path)
    if path.is_symlink() or not path.is_dir():
        try:
            return path.lstat().st_size
        except OSError:
            return 0
    total = 0
    for dirpath, _dirs, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                continue
    return total


def slug(name: str) -> str:
    """``name`` (a model's, say) as one short, safe file name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")[-60:] or "model"
