#!/usr/bin/env python3
"""A PyTorch implementation of cfzero's Chessformer: forward pass, loss and training step.

It reads a native export (``cfzero export --net NET.safetensors --format native --out DIR``:
``DIR/model.safetensors`` with cfzero's tensor names and ``DIR/config.json``, the ``[network]``
table as JSON) and computes exactly what cfzero computes, so that

* ``check`` can compare every head with ``cfzero debug outputs`` (same weights, same input
  tokens),
* ``step`` can compare training steps (loss, gradients, clipping, NAdam) with cfzero's, and
* ``bench`` can time the same computation in Python, for ``compare.py``.

This file is the command line; the rest lives beside it: ``model.py`` (the network),
``training.py`` (loss and training step), ``safetensors_io.py`` (the file format) and
``errors.py`` (the error for bad input).

Commands (``--help`` on each for the options):

    chessformer.py check   --export DIR --outputs OUT.json [--moves MOVES.txt] [--json]
    chessformer.py bench   --export DIR [--config C.toml] [--threads N] [--json]
    chessformer.py step    --net NET [--batch 16] [--steps 2] [--lr 0.001] [--expect AFTER]
    chessformer.py perturb --net IN.safetensors --out OUT.safetensors [--seed S]

Needs only torch and the standard library. Exit codes: 0 success, 1 a check failed,
2 bad input (a missing file, a malformed export).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tomllib
from pathlib import Path

import torch
from torch import Tensor

from errors import UserError
from model import PLANES, Chessformer, full_config, gather_from_moves, load_model, policy_gather
from safetensors_io import read_safetensors, write_safetensors
from training import DEFAULT_TRAIN, Learner, synthetic_batch

# --------------------------------------------------------------------------------------------
# Commands.


def flat_outputs(outputs: dict) -> dict[str, Tensor]:
    """Outputs by head name (`q.value`, ...), heads that are off left out."""
    flat = {}
    for name, value in outputs.items():
        if isinstance(value, dict):
            flat.update({f"{name}.{k}": v for k, v in value.items()})
        elif value is not None:
            flat[name] = value
    return flat


def cmd_check(args: argparse.Namespace) -> int:
    """Compares every head with `cfzero debug outputs`: the whole batch in one pass, and each
    position alone (so both forms of Shaw attention are checked)."""
    model = load_model(args.export).eval()
    if args.moves is not None:
        try:
            moves = args.moves.read_text().split()
        except OSError as e:
            raise UserError(f"cannot read {args.moves}: {e.strerror}") from None
        if gather_from_moves(moves) != policy_gather():
            print("policy gather: the table from --moves differs from the rule", file=sys.stderr)
            return 1
    try:
        ref = json.loads(args.outputs.read_text())
    except OSError as e:
        raise UserError(f"cannot read {args.outputs}: {e.strerror}") from None
    except ValueError as e:
        raise UserError(f"{args.outputs}: not JSON: {e}") from None
    if full_config(ref["network"]) != model.config:
        raise UserError(f"{args.outputs}: its net's config differs from the export's")
    inputs = torch.tensor(ref["inputs"], dtype=torch.float32).view(-1, 64, PLANES)
    expected = {}
    for name, value in ref["outputs"].items():
        if isinstance(value, dict):
            expected.update({f"{name}.{k}": torch.tensor(v) for k, v in value.items()})
        elif value is not None:
            expected[name] = torch.tensor(value)
    with torch.no_grad():
        whole = flat_outputs(model(inputs))
        single = [flat_outputs(model(inputs[i : i + 1])) for i in range(inputs.shape[0])]
    if set(whole) != set(expected):
        print(
            f"heads differ: cfzero {sorted(expected)}, reference {sorted(whole)}", file=sys.stderr
        )
        return 1
    diffs = {}
    for name, want in expected.items():
        alone = torch.cat([s[name] for s in single], 0)
        diffs[name] = {
            "batch": (whole[name] - want).abs().max().item(),
            "single": (alone - want).abs().max().item(),
        }
    worst = max(max(d.values()) for d in diffs.values())
    ok = worst < args.tolerance
    if args.json:
        print(
            json.dumps(
                {
                    "positions": inputs.shape[0],
                    "tolerance": args.tolerance,
                    "ok": ok,
                    "max_abs_diff": diffs,
                }
            )
        )
    else:
        print(f"{inputs.shape[0]} positions; max |cfzero - PyTorch| per head", end="")
        print(f" (tolerance {args.tolerance:g}):")
        print(f"{'head':<18} {'whole batch':>12} {'one by one':>12}")
        for name, d in diffs.items():
            print(f"{name:<18} {d['batch']:>12.3e} {d['single']:>12.3e}")
        print("ok" if ok else f"FAILED: {worst:.3e} >= {args.tolerance:g}")
    return 0 if ok else 1


def time_inference(model: Chessformer, batch: int, seconds: float, play: bool = False) -> float:
    """Evaluations per second at `batch` positions a pass, as `cfzero bench nn` measures them:
    random inputs, no gradients, the policy read back each pass, one warm-up pass, then passes
    for about `seconds`. Every head, or with `play` only those a search reads."""
    x = torch.rand(batch, 64, PLANES, device=model.gather.device)
    forward = model.forward_play if play else model.forward

    def once() -> None:
        with torch.no_grad():
            forward(x)["policy"].cpu()

    once()
    start = time.perf_counter()
    evaluations = 0
    while evaluations == 0 or time.perf_counter() - start < seconds:
        once()
        evaluations += batch
    return evaluations / max(time.perf_counter() - start, 1e-9)


def time_training(model: Chessformer, train: dict, steps: int) -> dict[str, float]:
    """Training samples per second, as `cfzero bench train` measures them: the synthetic batch
    of the config's size, one warm-up step, then `steps` timed steps."""
    size = max(1, train.get("batch_size", 256))
    learner = Learner(model, train)
    batch = synthetic_batch(size)  # stays on the host: each step copies it to the model's device
    learner.step(batch)
    start = time.perf_counter()
    for _ in range(steps):
        learner.step(batch)
    seconds = max(time.perf_counter() - start, 1e-9)
    return {
        "batch": size,
        "steps": steps,
        "seconds": seconds,
        "samples_per_second": steps * size / seconds,
    }


def cmd_bench(args: argparse.Namespace) -> int:
    """Times inference at each batch size and the training step."""
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    train = dict(DEFAULT_TRAIN)
    if args.config is not None:
        try:
            train = tomllib.loads(args.config.read_text()).get("train", DEFAULT_TRAIN)
        except OSError as e:
            raise UserError(f"cannot read {args.config}: {e.strerror}") from None
        except tomllib.TOMLDecodeError as e:
            raise UserError(f"{args.config}: {e}") from None
    if args.train_batch > 0:
        train["batch_size"] = args.train_batch
    torch.manual_seed(1)
    model = load_model(args.export).to(args.device)
    params = sum(p.numel() for p in model.parameters())
    inference = []
    model.eval()
    for batch in args.batches:
        inference.append(
            {
                "batch": batch,
                "evaluations_per_second": time_inference(model, batch, args.seconds, args.play),
            }
        )
    training = None
    if args.train_steps > 0:
        model.train()
        training = time_training(model, train, args.train_steps)
    report = {
        "torch": torch.__version__,
        "device": args.device,
        "heads": "play" if args.play else "all",
        "threads": torch.get_num_threads(),
        "parameters": params,
        "inference": inference,
        "train": training,
    }
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"PyTorch {report['torch']}, {args.device}, {report['threads']} threads", end="")
    print(f", {params} parameters")
    print(f"{'batch':>6} {'evaluations/s':>14}")
    for r in inference:
        print(f"{r['batch']:>6} {r['evaluations_per_second']:>14.0f}")
    if training:
        rate, size, steps = training["samples_per_second"], training["batch"], training["steps"]
        print(f"training: {rate:.0f} samples/s (batch {size}, {steps} steps)")
    return 0


def cmd_step(args: argparse.Namespace) -> int:
    """Trains a net for a few steps on the synthetic batch and compares the losses and the
    weights with cfzero's after the same steps (written by tests/reference_outputs.rs)."""
    model = load_model(args.net).train()
    train = {
        "batch_size": args.batch,
        "lr": {"peak": args.lr},
        "grad_clip": args.grad_clip,
        "weight_decay": args.weight_decay,
        "swa_every": 0,
    }
    learner = Learner(model, train)
    batch = synthetic_batch(args.batch, varied=True)
    steps = [learner.step(batch) for _ in range(args.steps)]
    report: dict = {"steps": steps}
    if args.expect is not None:
        want, _ = read_safetensors(args.expect)
        have = model.state_dict()
        if set(want) != set(have):
            raise UserError(f"{args.expect}: its tensors are not the net's")
        diffs = {name: (have[name] - want[name]).abs().max().item() for name in sorted(want)}
        worst = max(diffs, key=diffs.get)
        report["max_weight_diff"] = diffs[worst]
        report["worst_tensor"] = worst
    print(json.dumps(report))
    return 0


def cmd_perturb(args: argparse.Namespace) -> int:
    """Writes a copy of a cfzero net with Gaussian noise added to every weight, so that every
    parameter (Shaw tables and norm biases start at zero) shapes the outputs."""
    tensors, metadata = read_safetensors(args.net)
    if "cfzero.network_config" not in metadata:
        raise UserError(f"{args.net}: no cfzero.network_config metadata (not a cfzero net)")
    gen = torch.Generator().manual_seed(args.seed)
    noisy = {
        name: t + args.scale * torch.randn(t.shape, generator=gen) for name, t in tensors.items()
    }
    write_safetensors(args.out, noisy, metadata)
    print(f"wrote {args.out} ({len(noisy)} tensors, noise {args.scale:g})")
    return 0


def batch_list(text: str) -> list[int]:
    """`1,16,64` as a list of positive integers."""
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if any(v < 1 for v in values):
        raise argparse.ArgumentTypeError("every batch size must be at least 1")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    check = sub.add_parser("check", help="compare with `cfzero debug outputs`")
    check.add_argument(
        "--export",
        type=Path,
        required=True,
        help="native export directory (or a cfzero .safetensors)",
    )
    check.add_argument(
        "--outputs", type=Path, required=True, help="JSON written by `cfzero debug outputs`"
    )
    check.add_argument(
        "--moves", type=Path, help="`cfzero debug moves` output: cross-checks the policy gather"
    )
    check.add_argument(
        "--tolerance", type=float, default=1e-4, help="largest allowed max |difference|"
    )
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.set_defaults(run=cmd_check)

    bench = sub.add_parser("bench", help="time inference and the training step")
    bench.add_argument(
        "--export",
        type=Path,
        required=True,
        help="native export directory (or a cfzero .safetensors)",
    )
    bench.add_argument(
        "--config", type=Path, help="cfzero config whose [train] table the training step uses"
    )
    bench.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    bench.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    bench.add_argument(
        "--batches", type=batch_list, default=[1, 16, 64, 256], help="inference batch sizes"
    )
    bench.add_argument(
        "--seconds", type=float, default=3.0, help="seconds per inference measurement"
    )
    bench.add_argument(
        "--play",
        action="store_true",
        help="inference computes only the heads a search reads (cfzero's forward_play)",
    )
    bench.add_argument("--train-steps", type=int, default=10, help="timed training steps (0: none)")
    bench.add_argument(
        "--train-batch", type=int, default=0, help="training batch (0: the config's)"
    )
    bench.add_argument("--json", action="store_true", help="print one JSON object")
    bench.set_defaults(run=cmd_bench)

    step = sub.add_parser("step", help="training steps on the synthetic batch, as JSON")
    step.add_argument("--net", type=Path, required=True, help="native export or cfzero net")
    step.add_argument("--batch", type=int, default=16, help="positions per step")
    step.add_argument("--steps", type=int, default=2, help="steps")
    step.add_argument("--lr", type=float, default=0.001, help="learning rate (no schedule)")
    step.add_argument("--grad-clip", type=float, default=10.0, help="gradient-norm clip")
    step.add_argument(
        "--weight-decay", type=float, default=0.0, help="decoupled weight decay of the matrices"
    )
    step.add_argument("--expect", type=Path, help="cfzero's weights after the same steps")
    step.set_defaults(run=cmd_step)

    perturb = sub.add_parser("perturb", help="add noise to every weight of a cfzero net")
    perturb.add_argument("--net", type=Path, required=True, help="cfzero .safetensors net")
    perturb.add_argument("--out", type=Path, required=True, help="the noisy net to write")
    perturb.add_argument("--seed", type=int, default=1)
    perturb.add_argument("--scale", type=float, default=0.1, help="standard deviation of the noise")
    perturb.set_defaults(run=cmd_perturb)

    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
