#!/bin/bash
# The filtered-ANN measurements of docs/benchmarks/ann.md: per dataset a full run
# (peers, then folio, merged report), back-to-back rounds with ratios, then builds back to
# back (hnswlib first, then folio first). Run from the repository root; needs the kit's venv
# (scripts/bench/requirements.txt) and data:
#   python3 -m venv target/bench/venv && target/bench/venv/bin/pip install -r scripts/bench/requirements.txt
#   target/bench/venv/bin/python ../shared/bench/ann_data.py --out target/bench/ann --dataset all
# Usage: scripts/bench/ann_bench.sh [OUT]   (default target/bench/annbench;
#   env: FOLIO, PY, BENCH, DATA, ROUNDS, DATASETS)
set -u
OUT=${1:-target/bench/annbench}
FOLIO=${FOLIO:-target/release/folio}
PY=${PY:-target/bench/venv/bin/python}
BENCH=${BENCH:-../shared/bench}
DATA=${DATA:-target/bench/ann}
ROUNDS=${ROUNDS:-4}
export OPENBLAS_NUM_THREADS=1
mkdir -p "$OUT"
for D in ${DATASETS:-clustered-128 normalized-384}; do
  S="--time-budget 2 --min-queries 100 --queries 500"
  echo "== $D full run $(date +%T)"
  $PY $BENCH/ann_peers.py --data $DATA/$D --out $OUT/$D/full --cache $OUT/cache --build-threads 2 $S > $OUT/$D.peers.log 2>&1
  rm -f $OUT/$D.folio
  $FOLIO bench ann --data $DATA/$D --json $OUT/$D/full/folio.json --build-threads 2 --store $OUT/$D.folio $S > $OUT/$D.folio.log 2>&1
  $PY $BENCH/ann_peers.py --out $OUT/$D/full --report-only --merge $OUT/$D/full/folio.json > $OUT/$D.merged.md 2>&1
  R="--time-budget 1 --min-queries 100 --queries 500 --stop-recall 0.99"
  ARGS=""
  for r in $(seq 1 $ROUNDS); do
    echo "== $D round $r $(date +%T)"
    RND=$OUT/$D/round$r; mkdir -p $RND
    $PY $BENCH/ann_peers.py --data $DATA/$D --out $RND --cache $OUT/cache --reuse-cache --peers faiss,hnswlib,usearch \
      --filters none,random_0.5,correlated_0.5,random_0.1,correlated_0.1 --no-callback-cost $R > $RND/peers.log 2>&1
    $PY $BENCH/ann_peers.py --data $DATA/$D --out $RND/exact --peers exact $R > $RND/exact.log 2>&1
    $FOLIO bench ann --data $DATA/$D --store $OUT/$D.folio --reuse-store --json $RND/folio.json $R > $RND/folio.log 2>&1
    ARGS="$ARGS --round r$r=$RND/results.json,$RND/exact/results.json,$RND/folio.json"
  done
  $PY $BENCH/ann_ratios.py --ref hnswlib --target 0.95 $ARGS --md $OUT/$D.ratios.md > $OUT/$D.ratios.log 2>&1
  for order in hf fh; do
    for who in $(echo $order | fold -w1); do
      if [ $who = h ]; then
        echo "== $D build hnswlib $(date +%T)"
        $PY $BENCH/ann_peers.py --data $DATA/$D --out $OUT/$D/build-$order --peers hnswlib --filters none --ef 64 \
          --build-threads 2 --queries 100 --no-callback-cost 2>&1 | grep "build threads"
      else
        echo "== $D build folio $(date +%T)"
        $FOLIO bench ann --data $DATA/$D --filters none --ef 64 --queries 100 --build-threads 2 2>&1 | grep -E "^- (ingest|file)"
      fi
    done
  done
done
echo "== done $(date +%T)"
