#!/usr/bin/env bash
# Readies and checks cfzero on a machine with an NVIDIA GPU, in one command:
#   CUDA libtorch set-up, release build, the tests that need a device, and short `--device cuda`
#   benches (nn, selfplay, train) of configs/tiny.toml and configs/cf6m.toml; a few minutes at most
#   after the build. Everything goes to runs/gpu-check/<UTC time>.log as well.
# Without a GPU it prints one line and exits 0. CFZERO_GPU_CHECK_NVIDIA_SMI replaces the
# `nvidia-smi` it asks (tests point it at a missing path or a fake script).
set -euo pipefail
cd "$(dirname "$0")/.."

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
bench() {
  step "cfzero bench $*"
  cargo run --release --locked --quiet -- bench "$@"
}

main() {
  step "GPUs (nvidia-smi -L)"
  echo "$gpus"

  step "scripts/setup.sh --gpu (CUDA libtorch into .venv)"
  scripts/setup.sh --gpu

  step "cargo build --release --locked"
  cargo build --release --locked

  # The tests that need a device: those whose name contains `cuda`, run with CFZERO_TEST_CUDA=1
  # so a test can tell that a GPU is promised. None exists yet (no test in tests/ or a crate's
  # tests/ mentions CUDA), so this step compiles the tests and runs none until one is added.
  step "CFZERO_TEST_CUDA=1 cargo test --release --locked --workspace -- cuda"
  CFZERO_TEST_CUDA=1 cargo test --release --locked --workspace -- cuda

  # Short budgets: a second or two per measurement. bench nn measures f32 and bf16 side by side;
  # bench train has no precision flag because cfzero trains in f32 only (no bf16 autocast path,
  # see BENCHMARKS.md), so training speed is f32.
  local config
  for config in configs/tiny.toml configs/cf6m.toml; do
    bench nn --config "$config" --device cuda --precision f32,bf16 --batches 1,64,256,1024 \
      --seconds 1 --matmul-size 8192
    bench selfplay --config "$config" --device cuda --moves 1000 --nn-seconds 1
    bench train --config "$config" --device cuda --steps 20
  done
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
