"""F1 / ?: every key binding of the app and its widgets, with its id for remapping."""

from __future__ import annotations

from rich.table import Table
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


def _key_label(key: str) -> str:
    return ", ".join(k.replace("ctrl+", "Ctrl+").replace("question_mark", "?") for k in key.split(","))


def bindings_table(groups: list[tuple[str, list[Binding]]]) -> Table:
    table = Table(box=None, expand=True, show_header=True, header_style="bold", pad_edge=False)
    table.add_column("Key", style="bold cyan", no_wrap=True)
    table.add_column("Action")
    table.add_column("Id", style="dim", no_wrap=True)
    for title, bindings in groups:
        table.add_row(f"[b]{title}[/b]", "", "")
        for b in bindings:
            table.add_row(_key_label(b.key_display or b.key), b.description, b.id or "")
    return table


class HelpScreen(ModalScreen[None]):
    """Lists all bindings; any of Esc, q, F1 or ? closes it."""

    BINDINGS = [
        Binding("escape,q,f1,question_mark", "dismiss", "Close help", id="help.close"),
    ]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90%; max-width: 100; height: 90%; border: thick $accent; background: $surface; padding: 0 1;
    }
    """

    def __init__(self, groups: list[tuple[str, list[Binding]]]) -> None:
        super().__init__()
        self.groups = groups

    def compose(self):
        with VerticalScroll():
            yield Static("[b]codesight keys[/b]  (Esc closes)\n")
            yield Static(bindings_table(self.groups))
            yield Static(
                "\nIn the query box, type words, a question or an identifier. Results update as you type."
                "\nBadges: [green]BV[/] found by both retrievers, [cyan]B[/] BM25 only, [magenta]V[/] vectors only."
            )
