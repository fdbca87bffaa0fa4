#!/usr/bin/env bash
# Retrieval quality on the shared devset (75 queries over rich, jinja2 and commander): the README table.
#   bash benchmarks/eval_devset.sh [extra codesight eval args]
# Set CODESIGHT_RANKING=plain CODESIGHT_RETRIEVER_DEPTH=20 for the starting point (plain RRF, top 20 each).
set -euo pipefail
DEVSET=${DEVSET:-../shared/eval/devset}
CACHE=${DEVSET_CACHE:-.cache/devset}
[ -d "$CACHE/src/commander-12.1.0/package" ] || bash "$DEVSET/fetch.sh" "$CACHE"
exec codesight eval "$DEVSET"/{rich,jinja2,commander}.json \
  --path "$CACHE/src/rich-13.9.4" --path "$CACHE/src/jinja2-3.1.4" --path "$CACHE/src/commander-12.1.0/package" "$@"
