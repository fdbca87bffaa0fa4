"""Reciprocal Rank Fusion and the relevance floors: what every search pipeline (a local index,
a fleet store, several repositories) fuses and cuts by. The lowest layer of retrieval: it imports
nothing of codesight's."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TypeVar

_Id = TypeVar("_Id", bound=Hashable)


def rrf_scores(
    rankings: dict[str, list[_Id]],
    k: int = 60,
    weights: dict[str, float] | None = None,
) -> tuple[dict[_Id, float], dict[_Id, dict[str, int]]]:
    """Reciprocal Rank Fusion, the one implementation behind hybrid search, the ranking stack and
    several repositories' lists: ``score(d) = sum over lists of weight / (k + rank(d))`` (weight 1
    unless given). Returns ``({id: score}, {id: {list: rank}})``; ids may be any hashable."""
    scores: dict[_Id, float] = {}
    ranks: dict[_Id, dict[str, int]] = {}
    for name, ids in rankings.items():
        w = 1.0 if weights is None else weights.get(name, 1.0)
        for rank, cid in enumerate(ids, start=1):
            scores[cid] = scores.get(cid, 0.0) + w / (k + rank)
            ranks.setdefault(cid, {})[name] = rank
    return scores, ranks


def rrf_fuse(rankings: dict[str, list[_Id]], k: int = 60) -> list[tuple[_Id, float, dict[str, int]]]:
    """``rrf_scores`` in order: ``(id, score, {list: rank})`` by score, ties broken by best
    single rank."""
    scores, ranks = rrf_scores(rankings, k)
    order = sorted(scores, key=lambda c: (-scores[c], min(ranks[c].values())))
    return [(c, scores[c], ranks[c]) for c in order]


# Cosine similarity under which the nearest chunk counts as unrelated (all-MiniLM-L6-v2: a real
# question's best hit scores 0.35 to 0.8; punctuation and random words score below 0.2).
RELEVANCE_FLOOR = 0.25
# The same for the static tier. Static similarities separate nonsense from questions far less well
# (random words reach 0.45 to 0.6 on rich's source, a real question 0.4 to 0.6): this floor only
# drops the emptiest queries ("the", unrelated everyday words score about 0.2).
STATIC_RELEVANCE_FLOOR = 0.3
# A model trained for retrieval spreads its cosines differently (a question's best hit about 0.15,
# not 0.5): its folder states its own floor (config.json "relevance_floor", set where it was trained
# by matching held-out pair similarities to the distilled model's at this floor); see
# StaticEmbedder.relevance_floor.
# So an answer from the static tier alone (nothing lexical, no full model) also needs this share of
# the query's words to be whole words the model knows: "zzqqxxnonexistentword" and "xkcd blorp
# fnord" reach 0.47 to 0.64 on rich's source, more than "progress bar with eta" (0.50).
STATIC_KNOWN_WORDS = 0.5
# How fast the static list fades as the full model's vectors cover the index: its weight is
# scaled by (1 - their coverage) ** this. 4 beat 1, 50 and dropping it once the full model has
# any vector, at 10%, 25% and 50% coverage on ten polyglot repositories (+0.017 at 10%), and held
# the devset (benchmarks/results-static.txt).
STATIC_FADE = 4
