import re

from hypothesis import given, settings
from hypothesis import strategies as st
from properties import examples

from codesight_tui.core.text import expansion_terms, fts_query, query_terms, split_identifier


def test_split_identifier_styles() -> None:
    assert split_identifier("parseConfigFile") == ["parse", "config", "file"]
    assert split_identifier("parse_config_file") == ["parse", "config", "file"]
    assert split_identifier("HTTPServer2") == ["http", "server", "2"]
    assert split_identifier("XMLHttpRequest") == ["xml", "http", "request"]


def test_expansion_terms_add_parts_and_joined_form() -> None:
    terms = expansion_terms("def parse_config_file(): return loadJSONData()").split()
    assert {"parse", "config", "file", "parseconfigfile", "load", "json", "data", "loadjsondata"} <= set(terms)


def _expansions_by_every_identifier(text: str) -> set[str]:
    """The definition: split every identifier, keep those of more than one part."""
    out: set[str] = set()
    for ident in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text):
        parts = split_identifier(ident)
        if len(parts) > 1:
            out.update(parts + ["".join(parts)])
    return out


@given(st.text(alphabet=st.sampled_from("aAbBzZ09_ .(é\n"), max_size=120))
@settings(max_examples=examples(500), deadline=None)
def test_expansion_terms_equal_splitting_every_identifier(text: str) -> None:
    terms = expansion_terms(text).split()
    assert len(terms) == len(set(terms))
    assert set(terms) == _expansions_by_every_identifier(text)


def test_expansion_terms_edge_identifiers_and_long_words() -> None:
    assert set(expansion_terms("2fooBar __init__ x9 ABC HTTPServer foo_").split()) == {
        "foo",
        "bar",
        "foobar",
        "x",
        "9",
        "x9",
        "http",
        "server",
        "httpserver",
    }
    assert expansion_terms("a" * 200_000 + " b" * 1000) == ""  # linear, not quadratic


def test_query_terms_drop_stopwords_unless_nothing_left() -> None:
    assert query_terms("where do we retry failed uploads") == ["retry", "failed", "uploads"]
    assert query_terms("the of and") == ["the", "of", "and"]


@given(st.text(max_size=200))
@settings(max_examples=examples(300), deadline=None)
def test_fts_query_always_quotes_every_term(q: str) -> None:
    m = fts_query(q)
    if m is not None:
        for part in m.split(" OR "):
            assert part.startswith('"') and part.endswith('"')


def test_expansion_terms_do_not_depend_on_the_hash_seed() -> None:
    """The terms' order decides which phrases match ("basic_json" is the phrase "basic json"): it
    came from a set, so each process (each hash seed) indexed a repository a little differently,
    and BM25 answered differently after every rebuild."""
    import subprocess
    import sys

    text = (
        "template<typename BasicJsonType, typename TargetType> void from_json(const BasicJsonType& j,"
        " TargetType& value) { adl_serializer<ValueType>::to_json(j, identity_tag<TargetType>{}); }"
    )
    probe = f"from codesight_tui.core.text import expansion_terms; print(expansion_terms({text!r}))"
    outs = {
        subprocess.run(
            [sys.executable, "-c", probe],
            capture_output=True,
            text=True,
            check=True,
            env={**__import__("os").environ, "PYTHONHASHSEED": str(seed)},
        ).stdout
        for seed in range(8)
    }
    assert len(outs) == 1
    assert "basic json type basicjsontype" in outs.pop()
