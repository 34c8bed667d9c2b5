#!/usr/bin/env bash
# The whole test suite, the command the README names and `.ci/run` ends with: the pinned
# test models, milvus-lite and the Python test environment (downloaded while Rust compiles);
# the Rust tests of every crate but the Python one in one cargo invocation (the library and
# the dependencies they share compile once, with the features unified); the README's quick
# path as printed, with the binary that build made; the Python wheel and its pytest.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p target
(scripts/ci/test_models.sh && scripts/ci/install_milvus_lite.sh &&
  scripts/ci/test_python.sh --prepare) > target/test-downloads.log 2>&1 &
downloads=$!
trap 'kill "$downloads" 2>/dev/null || true' EXIT
cargo test --release --workspace --exclude folio-python --no-run
wait "$downloads" || { cat target/test-downloads.log >&2; exit 1; }
trap - EXIT
cargo test --release --workspace --exclude folio-python
FOLIO_BIN_DIR=target/release scripts/ci/quickstart.sh
scripts/ci/test_python.sh
