"""Translated documentation folded into one result (issue 66 item 18): a web framework's checkout
whose docs are translated into a dozen languages gave the same page in four languages in the top
10, and not the implementation. The fixture is made here: a mirrored docs tree beside code."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import HashEmbedder

from codesight_tui import CodeSight
from codesight_tui.core.config import Settings
from codesight_tui.core.translations import language_segment, later, preferred_language

PAGE = """# Dependency injection

{intro}

Dependency injection gives each handler what it declares: a database session, the current user.
Declare a dependency in the handler's parameters and the framework provides it.
"""
INTROS = {
    "en": "Dependencies, explained.",
    "de": "Abhängigkeiten, erklärt.",
    "ja": "依存関係の説明。",
    "tr": "Bağımlılıklar açıklandı.",
    "zh-hant": "依賴項說明。",
    "es": "Dependencias, explicadas.",
}


@pytest.fixture
def site(tmp_path: Path, settings: Settings) -> Iterator[CodeSight]:
    root = tmp_path / "framework"
    (root / ".git").mkdir(parents=True)
    for code, intro in INTROS.items():
        page = root / "docs" / code / "docs" / "tutorial" / "dependencies.md"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(PAGE.format(intro=intro))
    (root / "framework").mkdir()
    (root / "framework" / "dependencies.py").write_text(
        'class DependencyInjector:\n    """Dependency injection: resolve each handler\'s declared dependency."""\n\n'
        "    def solve(self, handler):\n        return [self.provide(d) for d in handler.dependencies]\n"
    )
    (root / "tests" / "it").mkdir(parents=True)  # a code folder named like a language: never folded
    (root / "tests" / "it" / "test_injection.py").write_text("def test_dependency_injection():\n    assert True\n")
    (root / "tests" / "test_injection.py").write_text("def test_dependency_injection_too():\n    assert True\n")
    engine = CodeSight(root, settings=settings, embedder=HashEmbedder())
    engine.index(embed=False)
    yield engine
    engine.close()


def test_translations_are_one_result_in_the_readers_language(site: CodeSight, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANG", "C.UTF-8")
    hits = site.search("dependency injection", mode="bm25", top_k=10)
    pages = [h for h in hits if h.path.endswith("dependencies.md")]
    assert len(pages) == 1, [h.path for h in hits]
    assert pages[0].path == "docs/en/docs/tutorial/dependencies.md" and pages[0].translations == len(INTROS) - 1
    paths = [h.path for h in hits]
    assert "framework/dependencies.py" in paths  # the implementation has its place in the first 10
    assert "tests/it/test_injection.py" in paths and "tests/test_injection.py" in paths  # code is not folded
    monkeypatch.setenv("LANG", "de_DE.UTF-8")
    german = [h for h in site.search("dependency injection", mode="bm25", top_k=10) if h.path.endswith(".md")]
    assert [h.path for h in german] == ["docs/de/docs/tutorial/dependencies.md"]
    assert german[0].translations == len(INTROS) - 1


def test_language_folders_and_the_readers_language() -> None:
    assert language_segment("docs/zh-hant/docs/a.md") == ("docs/docs/a.md", "zh-hant")
    assert language_segment("docs/pt_BR/a.md") == ("docs/a.md", "pt-br")
    assert language_segment("docs/a.md") is None and language_segment("de/readme.md") == ("readme.md", "de")
    assert language_segment("src/main.md") is None  # "src" and "main" are no language codes
    assert preferred_language({"LANG": "de_DE.UTF-8"}) == "de" and preferred_language({"LANG": "C"}) == "en"
    assert preferred_language({"LC_ALL": "ja_JP.UTF-8", "LANG": "de_DE"}) == "ja"
    # a first index reads the reader's pages before the other translations
    assert later("docs/de/docs/a.md", "en") and not later("docs/en/docs/a.md", "en")
    assert not later("docs/de/docs/a.md", "de") and not later("tests/it/test_x.py", "en")
