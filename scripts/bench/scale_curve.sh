#!/bin/bash
# The scale curve of docs/benchmarks/ann.md (issue 18): per dataset and size, the kit's data
# (generated once, reused), one folio build (kept for the rounds, as ann_bench.sh does) and
# hnswlib's build/reopen memory, then ROUNDS back-to-back rounds of hnswlib, faiss, the exact
# scan and folio; the ratios per size (ann_ratios.py), one point file per size, and
# `folio bench curve` over them: the tables (curve.md, curve.json) and the plot (curve.png).
# Every step's wall time goes to OUT/steps.md. CI does not run it.
# Usage, from the repository root: scripts/bench/scale_curve.sh [OUT]   (default target/bench/scalecurve)
#   env: SIZES (clustered-128, default "200000 1000000 2000000"), SIZES_384 (normalized-384,
#   default "1000000"; either empty to skip), ROUNDS (3), PY (the kit's venv,
#   scripts/bench/requirements.txt, default target/bench/venv), BENCH (the kit), DATA
#   (generated datasets, default target/bench/ann-scale), FOLIO (the binary), KEEP (1: keep
#   each point's builds in OUT and, when a point's builds are there, run only its rounds:
#   for a query-time change, where the builds of a 2M point take an hour)
set -u
OUT=${1:-target/bench/scalecurve}
FOLIO=${FOLIO:-target/release/folio}
PY=${PY:-target/bench/venv/bin/python}
BENCH=${BENCH:-../shared/bench}
DATA=${DATA:-target/bench/ann-scale}
ROUNDS=${ROUNDS:-3}
KEEP=${KEEP:-0}
SIZES=${SIZES-200000 1000000 2000000}
SIZES_384=${SIZES_384-1000000}
FILTERS=none,random_0.1,correlated_0.1,random_0.01,correlated_0.001
R="--time-budget 1 --min-queries 100 --queries 500 --stop-recall 0.99"
HERE=$(cd "$(dirname "$0")" && pwd)
export OPENBLAS_NUM_THREADS=1
mkdir -p "$OUT" "$DATA"
echo "| point | step | seconds |" > "$OUT/steps.md"
echo "|---|---|---:|" >> "$OUT/steps.md"

# step POINT NAME LOG COMMAND...: runs the command, its output into LOG, and records its time.
step() {
  local point=$1 name=$2 log=$3; shift 3
  local t0=$SECONDS
  echo "== $point $name $(date +%T)"
  "$@" > "$log" 2>&1 || { echo "failed: $* (see $log)"; exit 1; }
  echo "| $point | $name | $((SECONDS - t0)) |" >> "$OUT/steps.md"
}

point() {
  local D=$1 N=$2 P=$OUT/$1-$2 NAME=$1-$2
  local SET=$DATA/$NAME
  mkdir -p "$P"
  if [ ! -f "$SET/meta.json" ]; then
    step $NAME data "$P/data.log" $PY $BENCH/ann_data.py --out "$DATA" --dataset $D --n $N --queries 500 --name $NAME
  fi
  local BUILT=0
  [ "$KEEP" = 1 ] && [ -f "$P/store.folio" ] && [ -f "$P/peers-build.json" ] && BUILT=1
  if [ $BUILT = 0 ]; then
    rm -f "$P/store.folio"
    # The store holds the principals of the filters it is built with: build with all of them.
    step $NAME "folio build" "$P/folio-build.log" $FOLIO bench ann --data "$SET" --store "$P/store.folio" \
      --json "$P/folio-build.json" --build-threads 2 --filters $FILTERS --ef 64 --queries 100
    step $NAME "hnswlib memory" "$P/hnswlib-memory.log" $PY "$HERE/hnswlib_memory.py" "$SET" --threads 2 \
      --json "$P/hnswlib-memory.json"
  fi
  local ARGS="" ROUND_LIST=""
  for r in $(seq 1 $ROUNDS); do
    local RND=$P/round$r REUSE=--reuse-cache
    mkdir -p "$RND"
    # The first round of a fresh point builds the peers' indexes (its results, with their
    # build records, are kept as peers-build.json); every other round loads them.
    [ $r = 1 ] && [ $BUILT = 0 ] && REUSE=""
    step $NAME "round $r: faiss, hnswlib" "$RND/peers.log" $PY $BENCH/ann_peers.py --data "$SET" --out "$RND" \
      --cache "$P/cache" $REUSE --peers faiss,hnswlib --filters $FILTERS --build-threads 2 --no-callback-cost $R
    [ -z "$REUSE" ] && cp "$RND/results.json" "$P/peers-build.json"
    step $NAME "round $r: exact" "$RND/exact.log" $PY $BENCH/ann_peers.py --data "$SET" --out "$RND/exact" \
      --peers exact --filters $FILTERS $R
    step $NAME "round $r: folio" "$RND/folio.log" $FOLIO bench ann --data "$SET" --store "$P/store.folio" \
      --reuse-store --json "$RND/folio.json" --filters $FILTERS $R
    ARGS="$ARGS --round r$r=$RND/results.json,$RND/exact/results.json,$RND/folio.json"
    ROUND_LIST="$ROUND_LIST $RND"
  done
  $PY $BENCH/ann_ratios.py --ref hnswlib --target 0.95 $ARGS --md "$P/ratios.md" > "$P/ratios.log" 2>&1
  # The point file `folio bench curve` reads: every round's records, and the builds.
  $PY - "$D" "$N" "$OUT/$NAME.json" "$P" $ROUND_LIST <<'EOF'
import json, sys
dataset, n, out, point, rounds = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
load = lambda f: json.load(open(f))
records = lambda f: (lambda d: d["records"] if isinstance(d, dict) else d)(load(f))
builds = [dict(r, by=by) for by, f in (("folio bench ann", f"{point}/folio-build.json"),
                                       ("ann_peers.py", f"{point}/peers-build.json"))
          for r in records(f) if r.get("type") == "build"]
builds.append(dict(load(f"{point}/hnswlib-memory.json"), by="hnswlib_memory.py"))
json.dump({"dataset": dataset, "n": n, "builds": builds,
           "rounds": [sum((records(f"{d}/{f}") for f in ("results.json", "exact/results.json", "folio.json")), [])
                      for d in rounds]}, open(out, "w"), indent=1)
EOF
  [ "$KEEP" = 1 ] || rm -f "$P/store.folio"
}

for N in $SIZES; do point clustered-128 $N; done
for N in $SIZES_384; do point normalized-384 $N; done
CURVE=""
for N in $SIZES; do CURVE="$CURVE $OUT/clustered-128-$N.json"; done
for N in $SIZES_384; do CURVE="$CURVE $OUT/normalized-384-$N.json"; done
$FOLIO bench curve $CURVE --png "$OUT/curve.png" --json "$OUT/curve.json" > "$OUT/curve.md"
cat "$OUT/curve.md" "$OUT/steps.md"
echo "== done $(date +%T)"
