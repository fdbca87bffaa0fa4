#!/usr/bin/env bash
# Issue 49: the shipped static table, from the corpus manifest to codesight_tui/models/static.
#   bash benchmarks/training/build_static.sh [OUT_DIR]
# Each step resumes from ~/.cache/codesight-train (or $CODESIGHT_TRAIN_DIR): the pairs, the full
# model's vectors of 40,000 of them (about 40 minutes on a 2-core CPU), two seeds of training
# (under 2 minutes each), their mean, and the relevance floor.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-codesight_tui/models/static}
work=${CODESIGHT_TRAIN_DIR:-$HOME/.cache/codesight-train}
[ -s "$work/pairs.jsonl" ] || python benchmarks/training/corpus.py --from-manifest
python benchmarks/training/teacher.py --where start --sample 40000
for seed in 0 1; do
  python benchmarks/training/train_static.py --where start --teacher 0.5 --teacher-sample 40000 --seed "$seed" \
    --out "$work/static-kd-seed$seed"
done
python benchmarks/training/soup.py "$out" "$work/static-kd-seed0" "$work/static-kd-seed1"
python benchmarks/training/train_static.py --where start --calibrate --out "$out"
