#!/usr/bin/env bash
# The whole test suite, the command the README names and `.ci/run` ends with: the pinned
# test models, milvus-lite and the Python test environment (downloaded while Rust compiles);
# the Rust tests of every crate but the Python one in one cargo invocation (the library and
# the dependencies they share compile once, with the features unified); the Python wheel,
# which reuses that build (tools/workspace-hack); then, beside the Rust tests, the wheel's
# pytest and the README's quick path as printed, with the binary the build made.
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
scripts/ci/test_python.sh --build
(scripts/ci/test_python.sh --test && FOLIO_BIN_DIR=target/release scripts/ci/quickstart.sh) \
  > target/test-python.log 2>&1 &
beside=$!
trap 'kill "$beside" 2>/dev/null || true' EXIT
cargo test --release --workspace --exclude folio-python
status=0
wait "$beside" || status=$?
trap - EXIT
cat target/test-python.log
exit "$status"
