#!/usr/bin/env python3
"""cfzero against the PyTorch reference (chessformer.py): same net, same outputs, speed.

For each config (default configs/tiny.toml):

1. builds cfzero (`cargo build --release`, a no-op when it is up to date),
2. creates the config's generation-0 net (`cfzero train --generations 0`), adds noise to every
   weight (so that the zero-initialised Shaw tables and norm biases count too) and exports it
   (`cfzero export --format native`),
3. checks that PyTorch reproduces every head of `cfzero debug outputs` to 1e-4,
4. times cfzero (`cfzero bench nn --json`, `cfzero bench train --json`) and PyTorch with the
   same thread count, batch sizes, seconds per measurement, training batch and steps, in
   `--repeat` rounds (the two take turns to go first; the best rate of each side counts, as
   the least disturbed by other load),
5. prints evaluations and training samples per second of both and their ratio (cfzero /
   PyTorch: above 1 means cfzero is faster), or with `--json` one JSON object.

Run it from anywhere with the project's venv (scripts/setup.sh makes it):

    .venv/bin/python bench/reference/compare.py [--config configs/cf6m.toml ...] [--json]

Timings are only as good as the machine is quiet: check `uptime` first. Needs torch and the
standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REFERENCE = Path(__file__).resolve().parent / "chessformer.py"

# Positions of the output check, shared with tests/reference_outputs.rs.
POSITIONS = Path(__file__).resolve().parent / "positions.epd"


class StepError(Exception):
    """A step failed: printed as one line, exit code 1."""


def run(*parts: object, what: str) -> str:
    """Runs the command `parts` (strings, paths, numbers) in the repository root; its stdout,
    or StepError naming `what`."""
    cmd = [str(p) for p in parts]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        err = (proc.stderr or proc.stdout).strip().splitlines()
        raise StepError(f"{what} failed ({' '.join(cmd)}): {err[-1] if err else proc.returncode}")
    return proc.stdout


def json_of(text: str, what: str) -> dict:
    """The JSON object printed by a command (progress lines before it are skipped)."""
    start = text.find("{")
    try:
        return json.loads(text[start:])
    except ValueError:
        raise StepError(f"{what} printed no JSON object: {text[:200]!r}") from None


def output_check(config: Path, cfzero: str, work: Path) -> tuple[Path, dict]:
    """Makes the config's test net (generation 0 with noise on every weight, so that the
    zero-initialised Shaw tables and norm biases count too), exports it natively and checks
    the reference against `cfzero debug outputs`. Returns the export and the check's report."""
    py, name = sys.executable, config.stem
    run_dir, net, export = (
        work / f"{name}-run",
        work / f"{name}.safetensors",
        work / f"{name}-export",
    )
    fresh = run_dir / "nets" / "gen-0000.safetensors"
    run(cfzero, "train", "--device", "cpu", "--config", config, "--run", run_dir,
        "--generations", 0, what="creating the net")  # fmt: skip
    run(py, REFERENCE, "perturb", "--net", fresh, "--out", net, what="perturbing the net")
    run(cfzero, "export", "--net", net, "--format", "native", "--out", export, what="exporting")
    positions, outputs, moves = POSITIONS, work / f"{name}.json", work / "moves.txt"
    moves.write_text(run(cfzero, "debug", "moves", what="cfzero debug moves"))
    run(cfzero, "debug", "outputs", "--net", net, "--positions", positions, "--out", outputs,
        what="cfzero debug outputs")  # fmt: skip
    check = [py, REFERENCE, "check", "--export", export, "--outputs", outputs, "--moves", moves]
    proc = subprocess.run([*map(str, check), "--json"], cwd=REPO, capture_output=True, text=True)
    if proc.returncode not in (0, 1):  # 1: outputs differ, reported below
        raise StepError(f"the output check failed: {proc.stderr.strip()}")
    return export, json_of(proc.stdout, "the output check")


def time_cfzero(config: Path, args: argparse.Namespace, cfzero: str) -> dict:
    """One round of cfzero's timings: evaluations/s by batch, training samples/s and batch,
    threads, and what `bench nn` says about the net."""
    device = ("--device", args.device)
    batches = ",".join(map(str, args.batches))
    nn = json_of(
        run(cfzero, "bench", "nn", "--config", config, "--batches", batches, "--seconds",
            args.seconds, "--heads", "play" if args.play else "all", "--json", *device,
            what="cfzero bench nn"),
        "cfzero bench nn",
    )  # fmt: skip
    try:
        train = json_of(
            run(cfzero, "bench", "train", "--config", config, "--steps", args.train_steps,
                "--json", *device, what="cfzero bench train"),
            "cfzero bench train",
        )  # fmt: skip
        train_rate, train_batch = train["samples_per_second"], train.get("batch", 0)
    except StepError:
        # An older cfzero without `bench train`: training was part of `bench nn`.
        train_rate, train_batch = nn.get("train_samples_per_second"), 0
    return {
        "inference": {r["batch"]: r["evaluations_per_second"] for r in nn["inference"]},
        "train": train_rate,
        "train_batch": train_batch,
        "threads": nn["threads"],
        # Measured by `bench nn` just before its passes: a low one flags a disturbed round.
        "matmul_peak": nn.get("matmul_peak_gflops_per_second"),
        "parameters": nn.get("parameters"),
        "device": nn.get("device"),
    }


def time_pytorch(export: Path, config: Path, args, threads: int, train_batch: int) -> dict:
    """One round of the reference's timings with cfzero's thread count and training batch."""
    report = json_of(
        run(sys.executable, REFERENCE, "bench", "--export", export, "--config", config,
            "--threads", threads, "--batches", ",".join(map(str, args.batches)),
            "--seconds", args.seconds, "--train-steps", args.train_steps,
            "--train-batch", train_batch, "--device", args.device, "--json",
            *(["--play"] if args.play else []),
            what="the PyTorch bench"),
        "the PyTorch bench",
    )  # fmt: skip
    train = report.get("train") or {}
    return {
        "inference": {r["batch"]: r["evaluations_per_second"] for r in report["inference"]},
        "train": train.get("samples_per_second"),
        "train_batch": train.get("batch"),
        "torch": report["torch"],
    }


def best(rounds: list[dict], key: str, batch: int | None = None) -> float | None:
    """The best rate of `rounds` (the least disturbed one)."""
    rates = [r[key] if batch is None else r[key].get(batch) for r in rounds]
    rates = [x for x in rates if x]
    return max(rates) if rates else None


def compare(config: Path, args: argparse.Namespace, cfzero: str, work: Path) -> dict:
    """The output check and the timings of one config: `args.repeat` rounds, cfzero and
    PyTorch taking turns to go first, the best rate of each side counting."""
    export, check = output_check(config, cfzero, work)
    ours, theirs = [], []
    for i in range(args.repeat):
        if i % 2 == 0:
            ours.append(time_cfzero(config, args, cfzero))
        theirs.append(
            time_pytorch(export, config, args, ours[-1]["threads"], ours[-1]["train_batch"])
        )
        if i % 2 == 1:
            ours.append(time_cfzero(config, args, cfzero))

    def row(key: str, batch: int | None = None) -> dict:
        a, b = best(ours, key, batch), best(theirs, key, batch)
        runs = {
            "cfzero_runs": [r[key] if batch is None else r[key].get(batch) for r in ours],
            "pytorch_runs": [r[key] if batch is None else r[key].get(batch) for r in theirs],
        }
        return {"cfzero": a, "pytorch": b, "ratio": a / b if a and b else None, **runs}

    return {
        "config": str(config),
        "parameters": ours[0]["parameters"],
        "device": ours[0]["device"],
        "threads": ours[0]["threads"],
        "torch": theirs[0]["torch"],
        "repeat": args.repeat,
        "pytorch_heads": "play" if args.play else "all",
        "output_check": {
            "ok": check["ok"],
            "tolerance": check["tolerance"],
            "positions": check["positions"],
            # "batch": all positions in one pass, as cfzero ran them; "single": one by one
            # (for Shaw nets the other form of attention, which rounds differently).
            "max_abs_diff": check["max_abs_diff"],
        },
        "cfzero_matmul_peak_gflops_runs": [r["matmul_peak"] for r in ours],
        "inference": [{"batch": b, **row("inference", b)} for b in args.batches],
        "train": {"batch": theirs[0]["train_batch"], **row("train")},
    }


def print_report(r: dict) -> None:
    """One config's results as text."""
    check = r["output_check"]
    diffs = check["max_abs_diff"].values()
    batch, single = (max(d[form] for d in diffs) for form in ("batch", "single"))
    print(f"== {r['config']}: {r['parameters']} parameters, {r['device']}, ", end="")
    print(f"{r['threads']} threads, PyTorch {r['torch']}, best of {r['repeat']} rounds")
    verdict = "match" if check["ok"] else "DIFFER"
    count, positions = len(check["max_abs_diff"]), check["positions"]
    print(f"outputs: {verdict}, max |diff| over {count} outputs of {positions} positions: ", end="")
    print(f"{batch:.2e} in one batch, {single:.2e} one by one (tolerance {check['tolerance']:g})")
    print(f"{'batch':>6} {'cfzero eval/s':>14} {'PyTorch eval/s':>15} {'cfzero/PyTorch':>15}")
    for row in r["inference"]:
        ratio = f"{row['ratio']:.2f}" if row["ratio"] else "-"
        pytorch = f"{row['pytorch']:.0f}" if row["pytorch"] else "-"
        print(f"{row['batch']:>6} {row['cfzero']:>14.0f} {pytorch:>15} {ratio:>15}")
    t = r["train"]
    if t["cfzero"] and t["pytorch"]:
        print(
            f"{'train':>6} {t['cfzero']:>14.0f} {t['pytorch']:>15.0f} {t['ratio']:>15.2f}", end=""
        )
        print(f"   samples/s, batch {t['batch']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--config",
        type=Path,
        action="append",
        help="cfzero config (repeat for several; default configs/tiny.toml)",
    )
    parser.add_argument("--batches", default="1,16,64,256", help="inference batch sizes")
    parser.add_argument(
        "--seconds", type=float, default=3.0, help="seconds per inference measurement"
    )
    parser.add_argument("--train-steps", type=int, default=10, help="timed training steps")
    parser.add_argument(
        "--repeat", type=int, default=3, help="rounds of timings; the best of each side counts"
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda (both sides)")
    parser.add_argument(
        "--play",
        action="store_true",
        help="both sides compute only the heads a search reads (`cfzero bench nn --heads play`); "
        "by default both compute every head",
    )
    parser.add_argument(
        "--cfzero", type=Path, help="cfzero binary (default: build target/release/cfzero)"
    )
    parser.add_argument("--keep", type=Path, help="keep the nets and outputs in this directory")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    try:
        args.batches = [int(b) for b in args.batches.split(",")]
    except ValueError:
        parser.error(f"--batches: not a list of integers: {args.batches!r}")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    configs = [c.resolve() for c in (args.config or [REPO / "configs/tiny.toml"])]
    load_before = os.getloadavg()
    try:
        if args.cfzero is None:
            run("cargo", "build", "--release", "--bin", "cfzero", what="cargo build --release")
            cfzero = str(REPO / "target/release/cfzero")
        else:
            cfzero = str(args.cfzero.resolve())
        with tempfile.TemporaryDirectory(prefix="cfzero-reference-") as tmp:
            work = args.keep.resolve() if args.keep else Path(tmp)
            work.mkdir(parents=True, exist_ok=True)
            results = []
            for config in configs:
                if not args.json:
                    print(f"measuring {config} ...", file=sys.stderr)
                results.append(compare(config, args, cfzero, work))
    except StepError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    loads = {"before": load_before, "after": os.getloadavg()}
    if args.json:
        print(json.dumps({"load_average": loads, "results": results}, indent=2))
    else:
        before, after = (" ".join(f"{v:.2f}" for v in loads[k]) for k in ("before", "after"))
        print(f"load average (1, 5, 15 min): before {before}, after {after}")
        for r in results:
            print_report(r)
    return 0 if all(r["output_check"]["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
