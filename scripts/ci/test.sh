#!/usr/bin/env bash
# The whole test suite, the command `.ci/run` ends with: the pinned test models and
# milvus-lite; the Rust tests of every crate but the Python one in one cargo invocation (the
# library and the dependencies they share compile once, with the features unified); the
# README's quick path as printed, with the binary that build made; the Python wheel and its
# pytest.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/ci/test_models.sh
scripts/ci/install_milvus_lite.sh
cargo test --release --workspace --exclude folio-python
FOLIO_BIN_DIR=target/release scripts/ci/quickstart.sh
scripts/ci/test_python.sh
