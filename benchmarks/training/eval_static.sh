#!/usr/bin/env bash
# Fast mode (BM25 + static) NDCG@10 of one static model on polyglot fold A, fold B and the devset,
# one line each with the categories, and the full reports under OUT (default /tmp/eval-static).
#   bash benchmarks/training/eval_static.sh MODEL_DIR [OUT]
set -euo pipefail
model=$(cd "$1" && pwd)
out=${2:-/tmp/eval-static/$(basename "$model")}
mkdir -p "$out"
cd "$(dirname "$0")/../.."
for what in A B dev; do
  if [ "$what" = dev ]; then
    CODESIGHT_STATIC_MODEL=$model bash benchmarks/eval_devset.sh --mode fast > "$out/$what.txt" 2>&1
  else
    CODESIGHT_STATIC_MODEL=$model bash benchmarks/eval_polyglot.sh --mode fast --fold "$what" > "$out/$what.txt" 2>&1
  fi
  printf '%-4s %s\n' "$what" "$(grep -A1 '^ndcg@10 *architecture' "$out/$what.txt" | tail -1)"
done
