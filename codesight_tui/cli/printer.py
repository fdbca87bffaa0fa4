"""The printer: how an answer is written, kept apart from getting it (as ripgrep keeps its
printers apart from searching). Search hits and navigation answers as text, JSON or vimgrep
lines; index, eval and watch reports; the small formats they share. Everything goes to the
current call's stdout (``cli.context``)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codesight_tui.cli.context import current, safe, say
from codesight_tui.core.search.contract import byte_column

if TYPE_CHECKING:
    from codesight_tui.core.index.indexer import IndexReport
    from codesight_tui.core.search.contract import SearchResult
    from codesight_tui.core.search.navigate import Navigation
    from codesight_tui.core.store.watch import Batch


def paint(text: str, code: str) -> str:
    """``text`` in an SGR colour where the call's stdout takes colours, else as it is."""
    return f"\x1b[{code}m{text}\x1b[0m" if current().color else text


def print_hits(results: list[SearchResult], fmt: str, *, several: bool, terms: list[str], cwd: str | None) -> None:
    """Search hits as ``text`` (location, scope, how it was found, a snippet), ``json`` or
    ``vimgrep`` lines; ``several``: hits of several repositories, each labelled with its own."""
    if fmt == "json":
        out = []
        for r in results:
            d = r.to_dict()
            d["location"] = r.location
            d.pop("chunk_id", None)
            if not several:
                d.pop("repo", None)
            out.append(d)
        say(json.dumps(out, indent=2, ensure_ascii=False))
        return
    if fmt == "vimgrep":
        for r in results:
            say(safe(vimgrep_line(r, terms, cwd)))
        return
    for r in results:
        where = f"[{repo_label(r)}] " if several else ""
        # A document's place is its page, slide or (Word, which has no stable pages) its heading:
        # the lines of its extracted text mean nothing to a reader.
        loc = safe(f"{where}{r.location if r.is_document else f'{r.path}:{r.start_line}-{r.end_line}'}")
        scope = r.scope
        if r.whole_file:  # a file-level hit: the whole file (a module's root, or a file named), not a chunk
            also = [f"{a}-{b}" for a, b in r.parts if (a, b) != (r.start_line, r.end_line)]
            scope = f"[{r.grain}{'; also ' + ', '.join(also) if also else ''}]"
        if r.page or r.slide:  # the location says "p.12" / "slide 4"; a slide's title is left
            scope = scope.split(": ", 1)[1] if ": " in scope else ""
        if r.translations:  # the same page in other languages, folded into this one
            scope += f"  (+{r.translations} translation{'s' if r.translations > 1 else ''})"
        say(f"{paint(loc, '35')}  {paint(safe(scope), '1')}  {paint(f'[{retriever_tag(r)} {r.score:.4f}]', '2')}")
        say("\n".join(safe(line) for line in snippet(r.content)))


def print_navigation(nav: Navigation, action: str, fmt: str, root: Path, cwd: str) -> None:
    """``def``, ``refs``, ``callers`` or ``callees`` as ``json``, ``vimgrep`` lines, or ``text``:
    the definitions, the calls' targets, or the places grouped by file."""
    if fmt == "json":
        say(json.dumps(nav.to_dict(), indent=2, ensure_ascii=False))
        return

    def shown(path: str) -> str:
        full = root / path
        rel = os.path.relpath(full, cwd)
        return safe(rel if Path(rel).parts[:1] != ("..",) else str(full))

    if fmt == "vimgrep":
        places = (
            [(c.path, c.line, c.name, "") for c in nav.candidates]
            if action == "definitions"
            else [
                (s.target.path, s.target.line, s.name, "")
                if action == "callees" and s.target
                else (s.path, s.line, s.name, s.text)
                for s in nav.sites
            ]
        )
        texts = line_texts(root, places)
        for path, line, name, text in places:
            text = text or texts.get((path, line), "")
            say(f"{shown(path)}:{line}:{word_column(text, name)}:{safe(text.rstrip())}")
        return
    what = nav.symbol.qualified if nav.symbol else nav.name
    head = f"{safe(what).replace(chr(10), chr(92) + 'n')}: {nav.resolution}"
    if not nav and not nav.candidates:  # nothing to list: the one line on stderr says it
        head = ""
    if nav.symbol and action != "definitions":
        head += f", {nav.symbol.kind} at {shown(nav.symbol.path)}:{nav.symbol.line}"
    if not head:
        return
    say(paint(head, "1"))
    if action == "definitions":
        for c in nav.candidates:
            say(f"{paint(f'{shown(c.path)}:{c.line}', '35')}  {safe(c.kind)} {safe(c.qualified)}")
        return
    if action == "callees":
        for site in nav.sites:
            t = site.target
            to = f"{shown(t.path)}:{t.line}  {safe(t.kind)} {safe(t.qualified)}" if t else ""
            how = "" if site.resolution == "resolved" else f"  ({site.resolution})"
            say(f"{paint(safe(site.name), '1')}  {paint(f'line {site.line}', '2')}  {to}{how}")
        return
    last = None
    for site in nav.sites:
        if site.path != last:
            say(paint(shown(site.path), "35"))
            last = site.path
        where = f" in {site.within.qualified}" if site.within else ""
        how = "" if site.resolution == "resolved" else f"; {site.resolution}"
        say(f"  {site.line:>5}  {safe(site.text.strip()[:120])}  {paint(f'[{site.kind}{where}{how}]', '2')}")


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def ago(ts: float | None) -> str:
    if not ts:
        return "never"
    d = max(0, time.time() - ts)
    for unit, secs in (("d", 86400), ("h", 3600), ("m", 60)):
        if d >= secs:
            return f"{int(d // secs)}{unit} ago"
    return f"{int(d)}s ago"


def summary(report: IndexReport) -> str:
    skipped = ", ".join(f"{n} {why.replace('_', ' ')}" for why, n in sorted(report.skipped.items()))
    vec = f"{report.embedded} embedded, {report.cache_hits} from cache"
    if report.doc_views:
        vec += f" (+{report.doc_views} doc views embedded)"
    if report.vectors_pending:
        vec += f", {report.vectors_pending} pending"
    lines = [
        (
            f"indexed {report.files:,} files, {report.chunks:,} chunks in {report.seconds:.1f}s"
            f" (lexical {report.lexical_seconds:.1f}s, vectors {report.embed_seconds:.1f}s)"
        ),
        (
            f"  changed: {report.files_changed} files ({report.chunks_added} chunks added,"
            f" {report.chunks_removed} removed), {report.files_deleted} files deleted"
        ),
        f"  vectors: {vec}",
    ]
    if report.static_embedded or report.distill_seconds:
        lines.append(
            f"  static tier: {report.static_embedded:,} chunks in {report.static_seconds:.1f}s"
            + (
                f" (model distilled in {report.distill_seconds:.0f}s, once per machine)"
                if report.distill_seconds
                else ""
            )
        )
    if skipped:
        lines.append(f"  skipped: {skipped}")
    if report.secrets_masked:
        lines.append(f"  secrets: {report.secrets_masked} keys or tokens masked before indexing")
    return "\n".join(lines)


def snippet(content: str, width: int = 100, lines: int = 3) -> list[str]:
    out = []
    for line in content.split("\n"):
        if line.strip():
            out.append("    " + (line[: width - 1] + "…" if len(line) > width else line))
        if len(out) >= lines:
            break
    return out


def word_column(text: str, name: str) -> int:
    """The 1-based column of ``name`` as a whole word in ``text`` (else its first non-blank)."""
    import re

    m = re.search(rf"(?<![\w$]){re.escape(name.rsplit('.', 1)[-1])}(?![\w$])", text) if name else None
    return m.start() + 1 if m else len(text) - len(text.lstrip()) + 1


def line_texts(root: Path, places: list[tuple[str, int, str, str]]) -> dict[tuple[str, int], str]:
    """The lines of the files the places name that have no text yet (definitions), read once per file."""
    out: dict[tuple[str, int], str] = {}
    for path in {p for p, _, _, text in places if not text}:
        try:
            lines = (root / path).read_text(encoding="utf-8", errors="replace").split("\n")
        except OSError:
            continue
        for p, line, _, _ in places:
            if p == path and 0 < line <= len(lines):
                out[p, line] = lines[line - 1]
    return out


def repo_label(hit: SearchResult) -> str:
    """A hit's repository as the text output names it: a local root's name, a fleet
    repository's name and commit."""
    return f"{hit.repo}@{hit.commit[:10]}" if hit.commit else Path(hit.repo).name


def vimgrep_line(hit: SearchResult, terms: list[str], cwd: str | None = None) -> str:
    """``path:line:col:text`` for a hit, as ``rg --vimgrep`` prints it: the path as the user can
    open it from here (``shown_path``), the hit's line (its definition's own line, else the first
    matching one), the column of the first query word on it (else of its first non-blank
    character), and that line's text."""
    line = hit.line or hit.start_line
    text = hit.match_text or (hit.content.split("\n")[0] if hit.content else "")
    low = text.lower()
    cols = [low.find(t.lower()) for t in terms if t and low.find(t.lower()) >= 0]
    col = min(cols) + 1 if cols else len(text) - len(text.lstrip()) + 1
    return f"{shown_path(hit, cwd)}:{line}:{col}:{text.rstrip()}"


def retriever_tag(hit: SearchResult) -> str:
    """Which lists found a hit, as the plain output says it: ``bm25+static``, ``bm25+vec``, ``vec``,
    ``definition`` (a definition no list ranked). It said ``bm25+vec`` for a static-tier hit."""
    parts = [
        name for name, rank in (("bm25", hit.bm25_rank), ("static", hit.static_rank), ("vec", hit.vector_rank)) if rank
    ]
    return "+".join(parts) or ("grep" if hit.spans else "definition" if hit.definition else "bm25")


def batch_line(batch: Batch, report: IndexReport) -> dict[str, Any]:
    kinds: dict[str, int] = {}
    for kind in batch.changes.values():
        kinds[kind] = kinds.get(kind, 0) + 1
    return {
        "time": time.strftime("%H:%M:%S"),
        "full": batch.full,
        "paths": len(batch.changes),
        "changes": kinds,
        "files_changed": report.files_changed,
        "files_deleted": report.files_deleted,
        "chunks_added": report.chunks_added,
        "chunks_removed": report.chunks_removed,
        "embedded": report.embedded,
        "cache_hits": report.cache_hits,
        "vectors_pending": report.vectors_pending,
        "seconds": round(report.seconds, 3),
        "warnings": report.warnings,
    }


def tilde(path: Path | str) -> str:
    """``path`` with the home directory written ``~``."""
    try:
        return "~/" + Path(path).relative_to(Path.home()).as_posix()
    except ValueError:
        return str(path)


def short(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def print_eval_report(report: dict[str, Any]) -> None:
    """The tables of ``codesight eval``: each metric per category and mode, NDCG@10 per language
    beside the published peers, and query latency."""
    from codesight_tui.core.apps.evaluation import METRICS

    summary = report["modes"]
    labels = list(summary)
    cats = sorted({c for m in summary.values() for c in m["categories"]})
    n = sum(len(f["modes"][labels[0]]["queries"]) for f in report["files"])
    say(f"{n} queries in {len(report['files'])} file(s); scores averaged per file, then across files\n")
    for metric in METRICS:
        say(f"{metric:<14}" + "".join(f"{c:>14}" for c in [*cats, "overall"]))
        for label in labels:
            row = [summary[label]["categories"].get(c, {}).get(metric, float("nan")) for c in cats]
            say(f"  {label:<12}" + "".join(f"{v:>14.3f}" for v in row + [summary[label]["overall"][metric]]))
        say()
    peers = report.get("published") or {}
    langs = sorted({lang for m in summary.values() for lang in m["languages"]})
    if len(langs) > 1 or peers:
        cols = labels + list(peers)
        say("ndcg@10 by language" + (" (published peers on the same repositories)" if peers else ""))
        say(f"{'language':<12}{'repos':>6}" + "".join(f"{c[:13]:>14}" for c in cols))
        for lang in langs:
            first = summary[labels[0]]["languages"][lang]
            row = [summary[lb]["languages"][lang]["ndcg@10"] for lb in labels]
            row += [peers[k]["languages"].get(lang, float("nan")) for k in peers]
            say(f"{lang:<12}{first['repos']:>6}" + "".join(f"{v:>14.3f}" for v in row))
        row = [summary[lb]["overall"]["ndcg@10"] for lb in labels] + [peers[k]["ndcg@10"] for k in peers]
        say(f"{'mean':<12}{len(report['files']):>6}" + "".join(f"{v:>14.3f}" for v in row))
        say()
    for label in labels:
        lat = summary[label]["latency_ms"]
        say(f"latency {label:<10} p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms")


def shown_path(hit: SearchResult, cwd: str | None) -> str:
    """A hit's path as the user can open it from here: relative to the current directory where it
    is below it, else absolute; a fleet hit's repository name and commit, then its path there."""
    if hit.commit:
        return f"{repo_label(hit)}/{hit.path}"
    full = os.path.join(hit.repo, hit.path) if hit.repo else hit.path  # strings: a path per file of thousands
    here = os.path.abspath(cwd or os.curdir)
    if os.path.isabs(full) and full.startswith(here + os.sep):  # below here: no walk up to compare
        return full[len(here) + 1 :]
    try:
        rel = os.path.relpath(full, cwd or os.curdir)
    except ValueError:
        return full
    return rel if rel != os.pardir and not rel.startswith(os.pardir + os.sep) else full


def _painted_matches(text: str, spans: tuple[tuple[int, int], ...]) -> str:
    """A matching line with each match in bold red on a terminal, as ripgrep shows it."""
    if not current().color or not spans:
        return safe(text)
    out, at = [], 0
    for start, end in spans:
        out += [safe(text[at:start]), paint(safe(text[start:end]), "1;31")]
        at = max(at, end)
    return "".join(out) + safe(text[at:])


def print_matches(hits: list[SearchResult], fmt: str, *, cwd: str | None, context: bool, several: bool) -> None:
    """``codesight grep``'s lines: ``text`` as ``path:line:col:text`` (the matches coloured on a
    terminal; context lines as ``path-line-text``, groups apart by ``--``, as ripgrep); ``vimgrep``,
    one line per match; ``files`` (``-l``); ``count`` (``-c``: matching lines per file); ``json``."""
    if fmt == "json":
        say(json.dumps([grep_dict(h, several) for h in hits], indent=2, ensure_ascii=False))
        return
    if fmt in ("files", "count"):
        counts: dict[str, int] = {}
        named: dict[tuple[str, str], str] = {}
        for h in hits:
            file = (h.repo, h.path)
            key = named.get(file) or named.setdefault(file, shown_path(h, cwd))
            counts[key] = counts.get(key, 0) + 1
        for path, n in counts.items():
            say(safe(path) if fmt == "files" else f"{safe(path)}:{n}")
        return
    plain = not current().color  # nothing painted: the whole text is made safe at once, at the end
    mark = (lambda text: text) if plain else safe
    shown: dict[tuple[str, str], str] = {}
    out: list[str] = []
    printed: dict[tuple[str, str], int] = {}  # per file, the last line shown
    last = None
    if plain and not context and fmt == "text":  # the common case, tens of thousands of lines: nothing else to do
        for h in hits:
            file = (h.repo, h.path)
            path = shown.get(file) or shown.setdefault(file, shown_path(h, cwd))
            out.append(f"{path}:{h.line}:{h.column}:{h.match_text}")
        if out:
            say(safe("\n".join(out)))
        return
    matched = {(h.repo, h.path, h.line) for h in hits}
    for h in hits:
        file = (h.repo, h.path)
        path = shown.get(file) or shown.setdefault(file, mark(shown_path(h, cwd)))
        text = h.match_text
        if fmt == "vimgrep":
            out += [f"{path}:{h.line}:{byte_column(text, start)}:{mark(text)}" for start, _end in h.spans]
            continue
        if not context:
            painted = mark(text) if plain else _painted_matches(text, h.spans)
            out.append(f"{paint(path, '35')}:{paint(str(h.line), '32')}:{h.column}:{painted}")
            continue
        upto = printed.get(file, 0)
        if last is not None and (last != file or h.start_line > upto + 1):
            out.append("--")
        for n, line in enumerate(h.content.split("\n"), start=h.start_line):
            if n <= upto:
                continue  # shown already, around the line before
            if n != h.line and (h.repo, h.path, n) in matched:
                break  # a match of its own, shown as one
            if n == h.line:
                painted = mark(text) if plain else _painted_matches(text, h.spans)
                out.append(f"{paint(path, '35')}:{paint(str(n), '32')}:{h.column}:{painted}")
            else:
                out.append(f"{paint(path, '35')}-{paint(str(n), '32')}-{mark(line)}")
            upto = n
        printed[file], last = upto, file
    if out:
        blob = "\n".join(out)
        say(safe(blob) if plain else blob)


def grep_dict(hit: SearchResult, several: bool) -> dict[str, object]:
    """A grep hit as JSON: where (repository, path, line, byte column), the line, its matches as
    character spans, the enclosing definition, and the context lines."""
    before, after = hit.context
    out: dict[str, object] = {
        "path": hit.path,
        "line": hit.line,
        "column": hit.column,
        "text": hit.match_text,
        "spans": [list(s) for s in hit.spans],
        "scope": hit.scope,
        "before": before,
        "after": after,
    }
    if several:
        out["repo"] = hit.repo
    return out
