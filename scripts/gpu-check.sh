#!/usr/bin/env bash
# Readies and checks cfzero on a machine with an NVIDIA GPU, in one command:
#   CUDA libtorch set-up, release build, the tests that need a device, short `--device cuda`
#   benches (nn, selfplay, train in f32 and bf16) of configs/tiny.toml and configs/cf6m.toml,
#   and both trained on a PGN in f32 and in bf16 autocast, loss side by side; a few minutes
#   after the build. Everything goes to runs/gpu-check/<UTC time>.log as well.
#
#   scripts/gpu-check.sh                the usual way: set-up and build here (needs the network)
#   scripts/gpu-check.sh --prebuilt DIR a machine without the network or Rust: DIR holds a
#                                       `cfzero` and the test binaries (`cuda_device-*`) built
#                                       elsewhere against the libtorch this machine has, which
#                                       LD_LIBRARY_PATH (or the binaries' rpath) must find
#
# Without a GPU it prints one line and exits 0. CFZERO_GPU_CHECK_NVIDIA_SMI replaces the
# `nvidia-smi` it asks (tests point it at a missing path or a fake script).
set -euo pipefail
cd "$(dirname "$0")/.."

prebuilt=
case "${1:-}" in
  "") ;;
  --prebuilt)
    [[ -n "${2:-}" ]] || { echo "gpu-check: --prebuilt needs a folder" >&2; exit 2; }
    prebuilt=$(realpath "$2")
    [[ -x "$prebuilt/cfzero" ]] || { echo "gpu-check: no executable $prebuilt/cfzero" >&2; exit 2; }
    ;;
  *) echo "gpu-check: unknown argument ${1} (expected --prebuilt DIR)" >&2; exit 2 ;;
esac

smi=${CFZERO_GPU_CHECK_NVIDIA_SMI:-nvidia-smi}
no_gpu() {
  echo "gpu-check: no NVIDIA GPU found ($1); nothing to check"
  exit 0
}
command -v "$smi" >/dev/null 2>&1 || no_gpu "no executable $smi"
# timeout: a wedged driver can leave nvidia-smi hanging.
if gpus=$(timeout 60 "$smi" -L 2>/dev/null); then smi_rc=0; else smi_rc=$?; fi
gpus=$(grep -E '^GPU [0-9]+' <<<"$gpus" || true)
[[ -n "$gpus" ]] || no_gpu "$smi -L listed none, exit $smi_rc"

# Each step: a header line, then the command as it runs.
step() {
  echo
  echo "=== gpu-check: $* ==="
}
cfzero() {
  if [[ -n "$prebuilt" ]]; then
    "$prebuilt/cfzero" "$@"
  else
    cargo run --release --locked --quiet -- "$@"
  fi
}
bench() {
  step "cfzero bench $*"
  cfzero bench "$@"
}

# Each config trained on a PGN for the same steps from the same seed, in f32 and in bf16
# autocast: the generation lines (loss, accuracy) side by side. CFZERO_GPU_CHECK_PGN names a
# larger PGN than the tests' eight games, CFZERO_GPU_CHECK_STEPS the steps (default 400).
precision_curves() {
  local dir precision config name
  local pgn=${CFZERO_GPU_CHECK_PGN:-tests/data/pgn/lichess_sample.pgn}
  local steps=${CFZERO_GPU_CHECK_STEPS:-400}
  dir=$(mktemp -d)
  for config in "$@"; do
    name=$(basename "$config" .toml)
    for precision in f32 bf16; do
      step "cfzero learn: $name on $pgn, $steps steps, train.precision = $precision"
      # No in-run evaluation: its matches play one position at a time, which on a GPU took
      # cf6m 40-90 s a generation, longer than the training.
      sed -e '/^every *=/d' -e 's/^\[eval\]$/[eval]\nevery = 0/' "$config" >"$dir/$name.toml"
      grep -q '^every = 0$' "$dir/$name.toml" || printf '\n[eval]\nevery = 0\n' >>"$dir/$name.toml"
      cfzero learn --config "$dir/$name.toml" --run "$dir/$name-$precision" --device cuda \
        --train-precision "$precision" --data "pgn:$pgn" --steps "$steps" \
        --steps-per-generation $((steps / 8))
    done
  done
  rm -rf "$dir"
}

main() {
  step "GPUs (nvidia-smi -L)"
  echo "$gpus"

  # The tests that need a device: those whose name contains `cuda`, run with
  # CFZERO_TEST_CUDA=1, under which a missing device fails them instead of skipping.
  if [[ -n "$prebuilt" ]]; then
    local test_binary
    for test_binary in "$prebuilt"/cuda_device-*; do
      step "CFZERO_TEST_CUDA=1 $(basename "$test_binary") cuda"
      CFZERO_TEST_CUDA=1 "$test_binary" cuda
    done
  else
    step "scripts/setup.sh --gpu (CUDA libtorch into .venv)"
    scripts/setup.sh --gpu

    step "cargo build --release --locked"
    cargo build --release --locked

    step "CFZERO_TEST_CUDA=1 cargo test --release --locked --workspace -- cuda"
    CFZERO_TEST_CUDA=1 cargo test --release --locked --workspace -- cuda
  fi

  # Short budgets: a second or two per measurement; bench nn and bench train measure f32 and
  # bf16 side by side (training in bf16 is autocast with f32 weights, `train.precision`).
  local config actors
  actors=$(($(nproc) > 3 ? $(nproc) - 2 : 1))
  for config in configs/tiny.toml configs/cf6m.toml; do
    bench nn --config "$config" --device cuda --precision f32,bf16 --batches 1,64,256,1024 \
      --seconds 1 --matmul-size 8192
    bench selfplay --config "$config" --device cuda --moves 1000 --nn-seconds 1
    # The same with an actor per spare core and one server batching them all.
    bench selfplay --config "$config" --device cuda --moves 4000 --nn-seconds 1 \
      --actors "$actors" --games-per-actor 64 --servers 1
    bench train --config "$config" --device cuda --precision f32,bf16 --steps 20
    bench train --config "$config" --device cuda --precision f32,bf16 --steps 20 --batch 2048
  done
  precision_curves configs/tiny.toml configs/cf6m.toml
}

mkdir -p runs/gpu-check
log="$PWD/runs/gpu-check/$(date -u +%Y%m%dT%H%M%SZ).log"
# main runs in a subshell of its own with errexit on (the first failing step ends it); its exit
# status is taken from the pipeline so that the log's location is printed either way.
set +e
(
  set -e
  main
) 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
if ((status == 0)); then
  echo "gpu-check: all steps passed; log in $log" | tee -a "$log"
else
  echo "gpu-check: FAILED (exit $status, in the last step above); log in $log" | tee -a "$log"
fi
exit "$status"
