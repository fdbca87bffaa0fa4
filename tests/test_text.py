from hypothesis import given, settings, strategies as st

from codesight_tui.core.text import expansion_terms, fts_query, query_terms, split_identifier


def test_split_identifier_styles():
    assert split_identifier("parseConfigFile") == ["parse", "config", "file"]
    assert split_identifier("parse_config_file") == ["parse", "config", "file"]
    assert split_identifier("HTTPServer2") == ["http", "server", "2"]
    assert split_identifier("XMLHttpRequest") == ["xml", "http", "request"]


def test_expansion_terms_add_parts_and_joined_form():
    terms = expansion_terms("def parse_config_file(): return loadJSONData()").split()
    assert {"parse", "config", "file", "parseconfigfile", "load", "json", "data", "loadjsondata"} <= set(terms)


def test_query_terms_drop_stopwords_unless_nothing_left():
    assert query_terms("where do we retry failed uploads") == ["retry", "failed", "uploads"]
    assert query_terms("the of and") == ["the", "of", "and"]


@given(st.text(max_size=200))
@settings(max_examples=300, deadline=None)
def test_fts_query_always_quotes_every_term(q):
    m = fts_query(q)
    if m is not None:
        for part in m.split(" OR "):
            assert part.startswith('"') and part.endswith('"')
