"""File name -> language, and which languages are code (parsed) versus plain text (windowed)."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".rb": "ruby",
    ".rake": "ruby",
    ".gemspec": "ruby",
    ".php": "php",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".cs": "csharp",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala",
    ".lua": "lua",
    ".pl": "perl",
    ".r": "r",
    ".jl": "julia",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".hs": "haskell",
    ".zig": "zig",
    ".ml": "ocaml",
    ".clj": "clojure",
    ".dart": "dart",
    ".vue": "vue",
    ".svelte": "svelte",
    ".md": "markdown",
    ".markdown": "markdown",
    ".rst": "rst",
    ".txt": "text",
    ".adoc": "asciidoc",
    ".yml": "yaml",
    ".yaml": "yaml",
    ".toml": "toml",
    ".json": "json",
    ".ini": "ini",
    ".cfg": "ini",
    ".conf": "ini",
    ".xml": "xml",
    ".html": "html",
    ".htm": "html",
    ".css": "css",
    ".scss": "css",
    ".sql": "sql",
    ".sh": "shell",
    ".bash": "shell",
    ".bats": "shell",
    ".zsh": "shell",
    ".fish": "shell",
    ".ps1": "powershell",
    ".bat": "batch",
    ".proto": "protobuf",
    ".graphql": "graphql",
    ".tf": "terraform",
    ".cmake": "cmake",
    ".gradle": "groovy",
    ".groovy": "groovy",
}

FILENAMES: dict[str, str] = {
    "Makefile": "make",
    "makefile": "make",
    "GNUmakefile": "make",
    "Dockerfile": "docker",
    "CMakeLists.txt": "cmake",
    "Rakefile": "ruby",
    "Gemfile": "ruby",
    "Jenkinsfile": "groovy",
    "BUILD": "starlark",
    "WORKSPACE": "starlark",
    ".bashrc": "shell",
    ".zshrc": "shell",
}

SHEBANGS: dict[str, str] = {
    "python": "python",
    "node": "javascript",
    "bash": "shell",
    "sh": "shell",
    "zsh": "shell",
    "ruby": "ruby",
    "php": "php",
    "perl": "perl",
}

# Extensions that are never worth opening: skipped before any read, so a tree full of images
# costs one stat each.
BINARY_EXTENSIONS = frozenset(
    [
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".bmp",
        ".ico",
        ".webp",
        ".tiff",
        ".psd",
        ".pdf",
        ".zip",
        ".gz",
        ".tgz",
        ".bz2",
        ".xz",
        ".zst",
        ".7z",
        ".rar",
        ".jar",
        ".war",
        ".whl",
        ".egg",
        ".so",
        ".dylib",
        ".dll",
        ".exe",
        ".o",
        ".a",
        ".lib",
        ".obj",
        ".class",
        ".pyc",
        ".pyo",
        ".pyd",
        ".wasm",
        ".bin",
        ".dat",
        ".db",
        ".sqlite",
        ".sqlite3",
        ".woff",
        ".woff2",
        ".ttf",
        ".otf",
        ".eot",
        ".mp3",
        ".mp4",
        ".mov",
        ".avi",
        ".mkv",
        ".wav",
        ".flac",
        ".ogg",
        ".webm",
        ".npy",
        ".npz",
        ".pt",
        ".pth",
        ".onnx",
        ".safetensors",
        ".pkl",
        ".parquet",
        ".lance",
        ".arrow",
        ".ds_store",
    ]
)

# Office documents: read by ``core.ingest.extract`` (text and a page/slide map), never as raw text. They
# have a size cap of their own (``max_document_size``).
DOCUMENT_EXTENSIONS: dict[str, str] = {".pdf": "pdf", ".docx": "docx", ".pptx": "pptx"}
DOCUMENT_LANGUAGES = frozenset(DOCUMENT_EXTENSIONS.values())

# Languages with a scope-aware parser (tree-sitter, or the indentation fallback).
CODE_LANGUAGES = frozenset(
    [
        "python",
        "javascript",
        "typescript",
        "tsx",
        "go",
        "rust",
        "java",
        "ruby",
        "php",
        "c",
        "cpp",
        "csharp",
        "kotlin",
        "swift",
        "scala",
        "lua",
        "perl",
        "r",
        "julia",
        "elixir",
        "erlang",
        "haskell",
        "ocaml",
        "clojure",
        "dart",
        "shell",
        "zig",
    ]
)


# What only C++ says in a header: a template, a namespace or class body, an access specifier, a
# standard header without ".h", or a name qualified with "::" (a C header's extern "C" guard says
# none of these). A .h file is C unless its first lines say one of them.
_CPP_HEADER = re.compile(
    r"^[ \t]*(?:template[ \t]*<|namespace(?:[ \t]+[\w:]+)?[ \t]*\{|class[ \t]+\w+[^;()\n]*[:{]"
    r"|(?:public|private|protected)[ \t]*:|#[ \t]*include[ \t]*<[a-z_]+>)|\bstd::\w",
    re.MULTILINE,
)
HEADER_SCAN = 32_768  # characters of a .h file read for those signs


def detect_language(rel_path: str, head: bytes = b"", text: str = "") -> str:
    """Best guess of a file's language from its name, then its shebang line; ``text`` otherwise.
    ``text`` (the file's, where it is read) tells a C++ header (``.h``) from a C one."""
    p = PurePosixPath(rel_path)
    if p.name in FILENAMES:
        return FILENAMES[p.name]
    lang = EXTENSIONS.get(p.suffix.lower()) or DOCUMENT_EXTENSIONS.get(p.suffix.lower())
    if lang == "c" and p.suffix == ".h" and _CPP_HEADER.search(text, 0, HEADER_SCAN):
        return "cpp"
    if lang:
        return lang
    if head.startswith(b"#!"):
        first = head.split(b"\n", 1)[0].decode("latin-1")
        for word in reversed(first.replace("/", " ").split()):
            for key, name in SHEBANGS.items():
                if word.startswith(key):
                    return name
    return "text"


def is_binary_name(rel_path: str) -> bool:
    """True for file names whose extension marks them as binary (no read needed); documents
    (``is_document``) are not, though they are binary: an extractor reads them."""
    suffix = PurePosixPath(rel_path).suffix.lower()
    return suffix in BINARY_EXTENSIONS and suffix not in DOCUMENT_EXTENSIONS


def is_document(rel_path: str) -> bool:
    """True for a PDF, DOCX or PPTX file name."""
    return PurePosixPath(rel_path).suffix.lower() in DOCUMENT_EXTENSIONS


# What people type for a language: file extensions and common names (case never matters).
ALIASES: dict[str, str] = {
    "py": "python",
    "python3": "python",
    "js": "javascript",
    "node": "javascript",
    "ts": "typescript",
    "rb": "ruby",
    "rs": "rust",
    "golang": "go",
    "c++": "cpp",
    "cxx": "cpp",
    "cc": "cpp",
    "hpp": "cpp",
    "h": "c",
    "cs": "csharp",
    "c#": "csharp",
    "kt": "kotlin",
    "kts": "kotlin",
    "sh": "shell",
    "bash": "shell",
    "zsh": "shell",
    "md": "markdown",
    "yml": "yaml",
    "hs": "haskell",
    "ex": "elixir",
    "exs": "elixir",
    "erl": "erlang",
    "ml": "ocaml",
    "pl": "perl",
    "ps1": "powershell",
    "tf": "terraform",
    "dockerfile": "docker",
    "makefile": "make",
    "jsx": "javascript",
    "txt": "text",
    "proto": "protobuf",
}


def normalize_language(name: str) -> str:
    """The language codesight calls ``name`` (``Python``, ``py`` and ``python`` are one), or
    ``CodeSightError`` (exit code 2) naming the known ones."""
    from codesight_tui.core.errors import UsageError

    key = name.strip().lower().lstrip(".")
    key = ALIASES.get(key, key)
    known = known_languages()
    if key not in known:
        raise UsageError(f"unknown language {name!r}; known: {', '.join(sorted(known))}")
    return key


def known_languages() -> frozenset[str]:
    """Every language name ``detect_language`` can give (what ``--lang`` accepts)."""
    return (
        frozenset(EXTENSIONS.values())
        | frozenset(FILENAMES.values())
        | frozenset(SHEBANGS.values())
        | DOCUMENT_LANGUAGES
        | {"text"}
    )
