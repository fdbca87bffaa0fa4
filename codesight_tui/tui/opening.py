"""The terminal UI's ways out: a hit opened in the editor (or a document in its viewer) at its
line, and a location or snippet copied (OSC 52, the clipboard, a file)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import SuspendNotSupported

from codesight_tui.tui.base import AppBase
from codesight_tui.tui.editor import editor_argv, knows_line, viewer_argv

if TYPE_CHECKING:
    from codesight_tui.core.search.contract import SearchResult


def tmux_clipboard() -> str | None:
    """tmux's ``set-clipboard`` option when running inside tmux (``on`` passes OSC 52 on to the
    terminal; the default ``external`` drops it), else None."""
    if not os.environ.get("TMUX"):
        return None
    try:
        out = subprocess.run(
            ["tmux", "show-options", "-gv", "set-clipboard"], capture_output=True, text=True, timeout=1.0, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


class OpenPart(AppBase):
    """Opening and copying hits."""

    def action_open_editor(self) -> None:
        hit = self._current_hit()
        if hit is None:
            return
        if hit.is_document:
            self._open_document(hit)
            return
        if hit.commit:  # a fleet hit: nothing on this machine to open
            self.notify(
                f"{hit.repo}@{hit.commit[:10]} {hit.path}:{hit.line or hit.start_line} is in the fleet store,"
                " not on this machine (Ctrl+Y copies where)",
                timeout=8,
            )
            return
        argv = editor_argv(
            str(self.root_of(hit) / hit.path), hit.line or hit.start_line, template=self.engine.settings.editor
        )
        error: Exception | None = None
        try:
            with self.suspend():
                try:
                    subprocess.call(argv)
                except Exception as exc:  # anything escaping here would leave the terminal broken  # noqa: BLE001
                    error = exc
        except SuspendNotSupported:
            self.notify(
                f"This terminal can't be suspended to run an editor. Location: {hit.path}:{hit.line or hit.start_line}",
                severity="warning",
                timeout=8,
            )
            return
        if error is not None:
            self.notify(f"could not run {argv[0]}: {error}", severity="error", timeout=8)
        elif not knows_line(self.engine.settings.editor) and not self._told_line:
            self._told_line = True  # once: whether the editor took +LINE, codesight cannot tell
            self.notify(
                f"{os.path.basename(argv[0])} was given +{hit.line or hit.start_line} {hit.path}, the vi"
                " convention. If it did not open at that line, set CODESIGHT_EDITOR to a template, e.g."
                " 'myeditor --line {line} {path}'",
                severity="warning",
                timeout=12,
            )

    def _open_document(self, hit: SearchResult) -> None:
        """A PDF, DOCX or PPTX goes to the system's viewer (a window of its own: the terminal is
        not suspended), at the hit's page where the viewer takes one."""
        argv = viewer_argv(
            str(self.root_of(hit) / hit.path), hit.page or hit.slide, template=self.engine.settings.viewer
        )
        try:
            subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            self.notify(
                f"could not run {argv[0]}: {exc.strerror or exc}. Location: {hit.location}"
                " (set CODESIGHT_VIEWER, e.g. 'zathura --page={page} {path}')",
                severity="error",
                timeout=10,
            )
            return
        self.notify(f"Opened {hit.location} with {os.path.basename(argv[0])}")

    def _copy(self, text: str, what: str) -> None:
        """Copy, and say truthfully where it went. OSC 52 cannot be confirmed, so the text is also
        kept in a file the message names (and shown, when it is one line)."""
        self.copy_to_clipboard(text)  # OSC 52: works over ssh, and in tmux with set-clipboard on
        local = False
        try:
            import pyperclip

            pyperclip.copy(text)
            local = True
        except Exception:  # no local clipboard (headless, ssh, no xclip): say so below  # noqa: BLE001
            pass
        kept = ""
        try:
            from codesight_tui.core.private import private_dir, private_file

            path = Path(self.engine.settings.data_dir).expanduser() / "last-copy.txt"
            private_dir(path.parent)
            private_file(path).write_text(text, encoding="utf-8")  # the owner's alone, as the index is
            kept = f" Also saved to {path}."
        except OSError:
            pass
        shown = f" {text}" if "\n" not in text and len(text) <= 200 else f" {what}"
        if local:
            self.notify(f"Copied to the clipboard:{shown}")
            return
        tmux = tmux_clipboard()
        if tmux is not None and tmux != "on":
            self.notify(
                f"Not copied: tmux's set-clipboard is {tmux!r}, so the terminal never sees it"
                f" (add `set -g set-clipboard on` to ~/.tmux.conf).{shown}.{kept}",
                severity="warning",
                timeout=12,
            )
        else:
            self.notify(
                f"Sent to the terminal clipboard (OSC 52), if your terminal accepts it:{shown}.{kept}", timeout=8
            )

    def action_copy_location(self) -> None:
        hit = self._current_hit()
        if hit is not None:
            path = hit.path if not getattr(hit, "repo", "") else str(self.root_of(hit) / hit.path)
            if hit.commit:  # a fleet hit: its repository and commit name it
                path = f"{hit.repo}@{hit.commit[:10]}/{hit.path}"
            where = f"{path}:{hit.line or hit.start_line}"
            if hit.page is not None or hit.slide is not None:  # spec.pdf p.12, deck.pptx slide 4
                where = hit.location.replace(hit.path, path, 1)
            self._copy(where, where)

    def action_copy_snippet(self) -> None:
        hit = self._current_hit()
        if hit is not None:
            self._copy(hit.content, f"snippet ({hit.end_line - hit.start_line + 1} lines)")
