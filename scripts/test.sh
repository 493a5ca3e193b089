#!/usr/bin/env bash
# Sets up (if needed) and runs the whole test suite: format, lints, then every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
