"""Retrieval, ranking, "more like this", `ask`, and what answers cost."""
