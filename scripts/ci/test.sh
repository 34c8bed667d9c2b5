#!/usr/bin/env bash
# The whole test suite, the command `.ci/run` ends with: the pinned test models, the Rust
# tests, the Python wheel and its pytest, then the pinned milvus-lite and the folio-milvus
# tests against it.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/ci/test_models.sh
cargo test --release
scripts/ci/test_python.sh
scripts/ci/install_milvus_lite.sh
cargo test --release -p folio-milvus
