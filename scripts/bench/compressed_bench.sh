#!/bin/bash
# Compressed mode (docs/benchmarks/ann.md): at one size of the kit's clustered-128 (default 1M), back to back
# in one run: folio default and folio compressed (each built, reopened and swept, with its
# resident memory over the build, the reopen and the searches), faiss IndexHNSWSQ (SQ8,
# scripts/bench/faiss_sq8.py) and hnswlib (build memory, scripts/bench/hnswlib_memory.py; QPS,
# ann_peers.py), same M and ef_construction, 2 build threads, under nice. Each step's wall
# time goes to OUT/steps.md. CI does not run it.
# Usage, from the repository root: scripts/bench/compressed_bench.sh [OUT]   (default
#   target/bench/compressed)
#   env: N (1000000), RESCORE (compressed re-score width, the default when empty), PY (the
#   kit's venv, scripts/bench/requirements.txt, default target/bench/venv), BENCH (the kit),
#   DATA (generated datasets, default target/bench/ann-scale), FOLIO (the binary), HNSWLIB
#   (0 skips the two hnswlib steps)
set -u
OUT=${1:-target/bench/compressed}
N=${N:-1000000}
RESCORE=${RESCORE:-}
FOLIO=${FOLIO:-target/release/folio}
PY=${PY:-target/bench/venv/bin/python}
BENCH=${BENCH:-../shared/bench}
DATA=${DATA:-target/bench/ann-scale}
FILTERS=none,random_0.1,correlated_0.1,random_0.01,correlated_0.001
R="--time-budget 1 --min-queries 100 --queries 500 --stop-recall 0.99"
HERE=$(cd "$(dirname "$0")" && pwd)
NICE="nice -n 10"
export OPENBLAS_NUM_THREADS=1
NAME=clustered-128-$N
SET=$DATA/$NAME
mkdir -p "$OUT" "$DATA"
. "$HERE/steps.sh"

if [ ! -f "$SET/meta.json" ]; then
  step data "$OUT/data.log" $NICE $PY $BENCH/ann_data.py --out "$DATA" --dataset clustered-128 --n $N \
    --queries 500 --name $NAME
fi
rm -f "$OUT/default.folio" "$OUT/compressed.folio"
step "folio default" "$OUT/folio-default.log" $NICE $FOLIO bench ann --data "$SET" --store "$OUT/default.folio" \
  --json "$OUT/folio-default.json" --build-threads 2 --filters $FILTERS $R
rm -f "$OUT/default.folio"
step "folio compressed" "$OUT/folio-compressed.log" $NICE $FOLIO bench ann --data "$SET" \
  --store "$OUT/compressed.folio" --json "$OUT/folio-compressed.json" --build-threads 2 --filters $FILTERS $R \
  --compressed ${RESCORE:+--rescore $RESCORE}
rm -f "$OUT/compressed.folio"
step "faiss SQ8" "$OUT/faiss-sq8.log" $NICE $PY "$HERE/faiss_sq8.py" "$SET" --kit $BENCH --threads 2 \
  --json "$OUT/faiss-sq8.json" --queries 500 --time-budget 1 --min-queries 100 --stop-recall 0.99
if [ "${HNSWLIB:-1}" = 0 ]; then
  cat "$OUT/steps.md"
  exit 0
fi
step "hnswlib memory" "$OUT/hnswlib-memory.log" $NICE $PY "$HERE/hnswlib_memory.py" "$SET" --threads 2 \
  --json "$OUT/hnswlib-memory.json"
step "hnswlib" "$OUT/hnswlib.log" $NICE $PY $BENCH/ann_peers.py --data "$SET" --out "$OUT/hnswlib" \
  --peers hnswlib --filters $FILTERS --build-threads 2 --no-callback-cost $R
cat "$OUT/steps.md"
