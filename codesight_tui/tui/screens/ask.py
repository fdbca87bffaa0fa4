"""F3: ask a question. The answer streams in as the LLM writes it, and its sources are listed
under it; Enter on a source goes back to the search view with the sources as hits and that one in
the preview (where Enter opens it in the editor, or a document in its viewer)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar, cast

from rich.text import Text
from textual import on, work
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Markdown, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.modes import Vectors
from codesight_tui.core.text import printable

if TYPE_CHECKING:
    from textual.app import ComposeResult

    from codesight_tui.core.config import Settings
    from codesight_tui.core.search.ask import Answer
    from codesight_tui.core.search.contract import SearchResult
    from codesight_tui.tui.app import CodeSightApp

INTRO = (
    "Ask about this repository: its code and documents. The question and the best search hits go to"
    " the LLM back end you configured, and the answer cites them as [n]."
)
HELP = (
    INTRO + "\n\n"
    "No back end yet? Set `CODESIGHT_LLM_BACKEND` to `anthropic`, `openai`, `azure` or `ollama` (with"
    " `ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `AZURE_OPENAI_API_KEY` or a running Ollama). Until then"
    " nothing leaves this machine."
)


def intro(settings: Settings) -> str:
    """What the view says before the first question: the back end it will ask, or how to set one."""
    from codesight_tui.core.search.ask import llm_config

    try:
        cfg = llm_config(settings)
    except CodeSightError:
        return HELP
    return INTRO + f"\n\nBack end: **{cfg.backend}** ({printable(cfg.model)}). Nothing is sent until you press Enter."


class AskScreen(Screen[Any]):
    """Question box, streamed answer, numbered sources."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back to search", id="ask.back"),
        Binding("tab", "app.focus_next", "Question / sources", id="ask.focus_next"),
        Binding("shift+tab", "app.focus_previous", "Question / sources", show=False, id="ask.focus_previous"),
    ]
    DEFAULT_CSS = """
    AskScreen { layout: vertical; }
    AskScreen #ask-question { dock: top; }
    AskScreen #ask-body { height: 1fr; padding: 0 1; }
    AskScreen #ask-answer { margin: 0; }
    AskScreen #ask-sources { height: auto; max-height: 8; text-wrap: nowrap; text-overflow: ellipsis; }
    AskScreen #ask-status { height: 1; background: $boost; color: $text-muted; padding: 0 1; }
    """

    def __init__(self, question: str = "") -> None:
        super().__init__()
        self.question = question
        self.sources: list[SearchResult] = []
        self.answer: Answer | None = None

    def compose(self) -> ComposeResult:
        yield Input(self.question, placeholder="Ask a question…  (Enter asks, Esc goes back)", id="ask-question")
        with VerticalScroll(id="ask-body"):
            yield Markdown(intro(cast("CodeSightApp", self.app).engine.settings), id="ask-answer")
        yield OptionList(id="ask-sources")
        yield Static("", id="ask-status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#ask-body", VerticalScroll).can_focus = False  # Tab goes question <-> sources
        self.query_one("#ask-sources", OptionList).display = False
        self.query_one("#ask-question", Input).focus()

    @on(Input.Submitted, "#ask-question")
    def _ask(self, event: Input.Submitted) -> None:
        question = event.value.strip()
        if not question:
            return
        self.sources = []
        self.answer = None
        self.query_one("#ask-sources", OptionList).display = False
        self.query_one("#ask-answer", Markdown).update("*Searching…*")
        self.query_one("#ask-status", Static).update("")
        self.ask_worker(question)

    @work(thread=True, exclusive=True, group="ask", exit_on_error=False)
    def ask_worker(self, question: str) -> None:
        app = cast("CodeSightApp", self.app)
        engine = app.engine
        worker = get_current_worker()
        try:
            stream = engine.ask_stream(question, vectors=Vectors.LOADED)  # never waits for the model
        except Exception as exc:  # CodeSightError, or a bug: said, and the app goes on  # noqa: BLE001
            app.call_from_thread(self._failed, str(exc) if isinstance(exc, CodeSightError) else f"ask failed: {exc}")
            return
        for note in stream.notices:  # what the search lacked (BM25 only, a damaged index)
            app.call_from_thread(app.notify, note, severity="warning", timeout=8)
        app.call_from_thread(self._show_sources, stream.hits, set())
        app.call_from_thread(self._set_answer, f"*Asking {stream.cfg.backend} ({stream.cfg.model})…*")
        last = 0.0
        text = ""  # the answer so far (the stream's Answer holds the text only once it is complete)
        try:
            for piece in stream:
                if worker.is_cancelled:
                    return
                text += piece
                now = time.monotonic()
                if now - last > 0.05:  # repaint at most 20 times a second
                    last = now
                    app.call_from_thread(self._set_answer, text)
        except Exception as exc:  # noqa: BLE001 - a back end failing mid-answer is shown; the app goes on
            app.call_from_thread(
                self._failed, str(exc) if isinstance(exc, CodeSightError) else f"ask failed: {exc}", text
            )
            return
        if not worker.is_cancelled:
            app.call_from_thread(self._finished, stream.answer)

    def _set_answer(self, text: str) -> None:
        # An LLM's answer may carry escape sequences (OSC 52 would write the clipboard): shown, not sent.
        self.query_one("#ask-answer", Markdown).update(printable(text))
        self.query_one("#ask-body", VerticalScroll).scroll_end(animate=False)

    def _failed(self, message: str, partial: str = "") -> None:
        self.app.notify(message, severity="error", timeout=10)
        self._set_answer(
            (partial + "\n\n" if partial else "")
            + f"**Ask failed:** {message}\n\n"
            + ("" if partial else HELP if "back end" in message else "")
        )

    def _show_sources(self, hits: list[SearchResult], cited: set[int]) -> None:
        self.sources = list(hits)
        options = self.query_one("#ask-sources", OptionList)
        options.clear_options()
        for n, hit in enumerate(hits, start=1):
            row = Text(no_wrap=True, overflow="ellipsis")
            row.append(f"[{n}] ", style="bold yellow" if n in cited else "dim")
            row.append(
                printable(hit.location if hit.page or hit.slide else f"{hit.path}:{hit.start_line}-{hit.end_line}"),
                style="bold" if n in cited or not cited else "",
            )
            if hit.name and not hit.page:
                row.append(f"  {printable(hit.name)}", style="italic")
            options.add_option(Option(row))
        options.display = bool(hits)
        if hits:
            options.highlighted = 0

    def _finished(self, answer: Answer) -> None:
        self.answer = answer
        self._set_answer(
            (answer.text or "*The back end sent an empty answer.*") + (f"\n\n*({answer.cut})*" if answer.cut else "")
        )
        self._show_sources(answer.sources, set(answer.citations))
        usage = answer.usage or {}
        tokens = f" · {usage.get('input_tokens')}→{usage.get('output_tokens')} tok" if usage else ""
        first = f" · 1st token {answer.first_token_seconds * 1000:.0f} ms" if answer.first_token_seconds else ""
        self.query_one("#ask-status", Static).update(
            f"⏎ on a source shows it · {answer.backend} {answer.model} · {answer.seconds:.1f} s{first}{tokens}"
        )

    @on(OptionList.OptionSelected, "#ask-sources")
    def _source(self, event: OptionList.OptionSelected) -> None:
        self.dismiss((self.sources, event.option_index))

    def action_back(self) -> None:
        self.dismiss(None)
