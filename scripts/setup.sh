#!/usr/bin/env bash
# One-time set-up of libtorch (from PyPI's torch wheel) in .venv; fast and silent when already done.
#   scripts/setup.sh          what cfzero needs to build and run on a CPU (~1.3 GB): libtorch alone
#   scripts/setup.sh --test   also what the tests need (~4.1 GB): Python's `import torch` for the
#                             PyTorch reference, which links the CUDA libraries even on a CPU, and
#                             python-chess, numpy, onnx, onnxruntime and moto (scripts/test.sh)
#   scripts/setup.sh --gpu    full torch with the CUDA stack and the tests' packages (~4.7 GB)
set -euo pipefail
cd "$(dirname "$0")/.."

TORCH_VERSION=2.13.0
want=cpu
case "${1:-}" in
  --gpu) want=gpu ;;
  --test) want=test ;;
  "") ;;
  *) echo "setup: unknown argument ${1} (expected --test or --gpu)" >&2; exit 2 ;;
esac
[[ "${CFZERO_GPU:-}" == "1" ]] && want=gpu
stamp=.venv/.cfzero-setup
stamped() { [[ -f "$stamp" && "$(cat "$stamp")" == "torch=$TORCH_VERSION flavour=$1" && -e .libtorch/lib/libtorch.so ]]; }
# Each flavour includes the ones before it: cpu < test < gpu.
case "$want" in
  cpu) stamped cpu || stamped test || stamped gpu ;;
  test) stamped test || stamped gpu ;;
  gpu) stamped gpu ;;
esac && exit 0

command -v cargo >/dev/null || { echo "setup: cargo not found; install Rust (https://rustup.rs)" >&2; exit 1; }
py=$(command -v python3 || true)
[[ -n "$py" ]] || { echo "setup: python3 not found; it is needed to fetch libtorch from PyPI" >&2; exit 1; }

echo "setup: installing libtorch $TORCH_VERSION ($want) into .venv (once)" >&2
[[ -x .venv/bin/python ]] || "$py" -m venv .venv
pip=(.venv/bin/python -m pip install --disable-pip-version-check -q)
if [[ "$want" == gpu ]]; then
  "${pip[@]}" "torch==$TORCH_VERSION"
else
  # torch's own libraries link libcudart/cupti even for CPU use; these two small wheels satisfy that.
  "${pip[@]}" --no-deps "torch==$TORCH_VERSION" nvidia-cuda-runtime==13.0.96 nvidia-cuda-cupti==13.0.85
fi
if [[ "$want" == test ]]; then
  # The PyTorch reference (bench/reference/, tests/reference_outputs.rs) imports torch in Python,
  # and torch._C links the CUDA libraries below even on CPU (~2.5 GB); cfzero itself needs none.
  "${pip[@]}" --no-warn-conflicts "cuda-toolkit[cublas,cufft,cufile,curand,cusparse,nvjitlink,nvrtc]==13.0.3" \
    nvidia-cudnn-cu13==9.20.0.48 nvidia-cusparselt-cu13==0.8.1 nvidia-nccl-cu13==2.29.7 nvidia-nvshmem-cu13==3.4.5 \
    "typing-extensions>=4.10.0" filelock "sympy>=1.13.3" "networkx>=2.5.1" jinja2 "fsspec>=0.8.5"
fi
if [[ "$want" != cpu ]]; then
  # The python-chess client drives the UCI engine in the tests; numpy feeds the PyTorch reference
  # benchmark; onnx (checker, shape inference) and onnxruntime run the ONNX exports in
  # tests/onnx_export.rs; moto's S3 API server (moto_server, started on 127.0.0.1 by store/tests)
  # stands in for S3.
  "${pip[@]}" chess numpy onnx==1.23.2 onnxruntime==1.32.0 "moto[server]==5.2.5"
fi

site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
[[ -e "$site/torch/lib/libtorch.so" ]] || { echo "setup: torch installed but $site/torch/lib/libtorch.so is missing" >&2; exit 1; }
ln -sfn "$(realpath --relative-to=. "$site/torch")" .libtorch
echo "torch=$TORCH_VERSION flavour=$want" > "$stamp"
echo "setup: done (libtorch at .libtorch -> $site/torch)" >&2
