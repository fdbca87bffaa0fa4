"""``codesight ask``: a question answered by the configured LLM from the search's best hits,
streamed, with the sources it was given and which of them it cited."""

from __future__ import annotations

import argparse
import json

from codesight_tui.cli.context import EXIT_OK, current, err, safe, say
from codesight_tui.cli.printer import paint
from codesight_tui.cli.progress import ready
from codesight_tui.cli.roots import resolve_root, workspace
from codesight_tui.core.errors import UsageError
from codesight_tui.core.modes import Vectors


def cmd_ask(args: argparse.Namespace) -> int:
    from codesight_tui.core.search.ask import llm_config

    if args.top_k is not None and not 1 <= args.top_k <= 50:
        raise UsageError("--top-k must be between 1 and 50")
    cs = workspace().engine(resolve_root(args.path, yes=args.yes))
    llm_config(cs.settings)  # a missing back end is said before any indexing
    ready(cs, "hybrid", args.full)
    stream = cs.ask_stream(
        args.question,
        args.top_k,
        glob=args.glob,
        vectors=Vectors.LOAD if args.full else Vectors.STATIC,  # core.repo.retrieval.tier_of says what that comes to
    )
    for notice in stream.notices:
        err(notice)
    if args.json:
        for _ in stream:
            pass
        say(json.dumps(stream.answer.to_dict(), indent=2, ensure_ascii=False))
        return EXIT_OK
    try:
        for delta in stream:
            current().out.write(safe(delta))
            current().out.flush()
    finally:
        if stream.answer.text:
            current().out.write("\n")
    answer = stream.answer
    if answer.cut:
        err(answer.cut)
    cited = set(answer.citations)
    say("\nSources:")
    for n, _hit in enumerate(answer.sources, start=1):
        label = safe(answer.source_label(n))
        mark = "" if n in cited else "  (not cited)"
        say(f"  [{n}] {paint(label, '35')}{mark}")
    usage = answer.usage or {}
    tokens = f", {usage.get('input_tokens')} tokens in, {usage.get('output_tokens')} out" if usage else ""
    err(f"{answer.backend} {answer.model}: {answer.seconds:.1f} s{tokens}")
    return EXIT_OK
