#!/usr/bin/env bash
# Sets up (if needed) and runs the main job: a training run with the tiny preset.
# Extra arguments go to `cfzero train`, e.g. `scripts/train.sh --minutes 60` or `--resume`.
# `scripts/train.sh --teacher [ENGINE] ...` trains configs/tiny-teacher.toml into runs/tiny-teacher
# instead, with Stockfish (found on PATH or in /usr/games) or ENGINE as the teacher.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
config=configs/tiny.toml
run=runs/tiny
engine=()
if [[ "${1:-}" == "--teacher" ]]; then
  shift
  config=configs/tiny-teacher.toml
  run=runs/tiny-teacher
  if [[ $# -gt 0 && "$1" != --* ]]; then
    engine=(--teacher "$1")
    shift
  fi
fi
exec cargo run --release --locked -- train --config "$config" --run "$run" "${engine[@]}" "$@"
