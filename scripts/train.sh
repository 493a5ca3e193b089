#!/usr/bin/env bash
# Sets up (if needed) and runs the main job: a training run with the tiny preset.
# Extra arguments go to `cfzero train`, e.g. `scripts/train.sh --minutes 60` or `--resume`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec cargo run --release --locked -- train --config configs/tiny.toml --run runs/tiny "$@"
