"""Build the argv that opens a file at a line in the user's editor. Never goes through a shell."""

from __future__ import annotations

import os
import shlex

# Editors that take `+LINE FILE`.
PLUS_LINE = {
    "vi",
    "vim",
    "nvim",
    "gvim",
    "mvim",
    "view",
    "emacs",
    "emacsclient",
    "nano",
    "micro",
    "hx",
    "helix",
    "kak",
    "joe",
    "mg",
    "ne",
    "jed",
    "pico",
    "kate",
}
# Editors that take `-g FILE:LINE` (VS Code and its forks).
GOTO_FLAG = {"code", "code-insiders", "codium", "vscodium", "cursor", "windsurf"}
# Editors that take `FILE:LINE`.
COLON_LINE = {"subl", "sublime_text", "zed", "mate"}
# A template that runs one of these with -c hands its script to a shell: the path is quoted there.
SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "fish", "ash", "busybox"}


def knows_line(template: str | None = None, environ: dict[str, str] | None = None) -> bool:
    """Whether ``editor_argv`` surely puts the cursor on the line: a template, or an editor whose
    line syntax is known (``$VISUAL``, ``$EDITOR``, else vi). Any other is given ``+LINE PATH``,
    and told once how to say otherwise."""
    if template:
        return "{line}" in template
    env = os.environ if environ is None else environ
    argv = shlex.split(env.get("VISUAL") or env.get("EDITOR") or "vi") or ["vi"]
    name = os.path.basename(argv[0]).lower().removesuffix(".exe")
    return name in GOTO_FLAG or name in COLON_LINE or name in PLUS_LINE


def editor_argv(
    path: str, line: int, *, template: str | None = None, environ: dict[str, str] | None = None
) -> list[str]:
    """argv to open ``path`` at ``line``.

    ``template`` (``CODESIGHT_EDITOR``), e.g. ``"nvim +{line} {path}"``, wins; otherwise ``$VISUAL``,
    then ``$EDITOR``, then ``vi``, using the line syntax that editor understands.
    """
    env = os.environ if environ is None else environ
    line = max(1, int(line))
    if template:
        parts = shlex.split(template)
        if not any("{path}" in p for p in parts):
            parts.append("{path}")
        # `sh -c "ed {path}"` would run `$(…)` in a file name: inside a shell script, quote it.
        shell = bool(parts) and os.path.basename(parts[0]) in SHELLS and "-c" in parts
        safe = shlex.quote(path) if shell else path
        return [
            p.replace("{path}", safe if shell and p != "{path}" else path).replace("{line}", str(line)) for p in parts
        ]
    editor = env.get("VISUAL") or env.get("EDITOR") or "vi"
    argv = shlex.split(editor) or ["vi"]
    name = os.path.basename(argv[0]).lower()
    name = name.removesuffix(".exe")
    if name in GOTO_FLAG:
        return argv + ["-g", f"{path}:{line}"]
    if name in COLON_LINE:
        return argv + [f"{path}:{line}"]
    # Known or not: `+LINE PATH` is what vi, emacs, nano, micro, helix, kak and most wrappers take.
    return argv + [f"+{line}", path]


# Document viewers that take a page, and the arguments that say which.
PAGE_FLAGS = {
    "zathura": ["--page={page}"],
    "okular": ["-p", "{page}"],
    "evince": ["--page-index={page}"],
    "atril": ["--page-index={page}"],
    "xreader": ["--page-index={page}"],
}


def viewer_argv(
    path: str, page: int | None = None, *, template: str | None = None, platform: str | None = None
) -> list[str]:
    """argv that hands a document to a viewer, at ``page`` where it takes one. Never a shell.

    ``template`` (``CODESIGHT_VIEWER``), e.g. ``"zathura --page={page} {path}"`` or just ``"okular"``
    (a viewer in ``PAGE_FLAGS`` gets its page flag), wins; otherwise the system's opener: ``open``
    on macOS, ``xdg-open`` elsewhere (neither takes a page)."""
    import sys

    if not template:
        return ["open" if (platform or sys.platform) == "darwin" else "xdg-open", path]
    parts = shlex.split(template) or ["xdg-open"]
    name = os.path.basename(parts[0])
    if page and not any("{page}" in p for p in parts):
        parts += PAGE_FLAGS.get(name, [])
    if not any("{path}" in p for p in parts):
        parts.append("{path}")
    return [p.replace("{path}", path).replace("{page}", str(max(1, page or 1))) for p in parts]
