#!/usr/bin/env bash
# Retrieval quality on the polyglot development set (49 repositories, 19 languages, 979 queries),
# with the published scores of semble, CodeRankEmbed, ck and ripgrep beside ours.
#   bash benchmarks/eval_polyglot.sh [extra codesight eval args]
# e.g. --mode bm25 (no vectors: fast), --fold A (or B: tune on one, confirm on the other),
# --repo flask --repo tokio, --coverage 0,10,50,100, --json.
# The first hybrid run embeds about 230,000 texts: hours on a 2-core CPU, about a minute on a GPU;
# the shared embedding cache makes later runs cheap while the embedded text stays the same.
set -euo pipefail
POLYGLOT=${POLYGLOT:-../shared/eval/polyglot}
CACHE=${POLYGLOT_CACHE:-.cache/polyglot}
bash "$POLYGLOT/unpack.sh" "$CACHE" >/dev/null
cp "$POLYGLOT/folds.json" "$CACHE/"
exec codesight eval "$CACHE" "$@"
