#!/usr/bin/env python3
"""cfzero's ONNX exports in the real tools: the `onnx` checker, ONNX shape inference and ONNX
Runtime, against `cfzero debug outputs`.

Commands:

    onnx_check.py check   --model NET.onnx|NET.pb.gz --outputs OUT.json [--tolerance T]
                          [--relative] [--json]
    onnx_check.py vectors --model NET.onnx|NET.pb.gz --vectors VECTORS.json --net NAME [--json]
    onnx_check.py bench --model NET.onnx [--batches 1,64,256] [--threads 2] [--seconds 3] [--json]

`check` reads a plain ONNX model, or an Lc0 net file (`cfzero export --format lc0-onnx`), which it
parses with the protobuf library as Lc0's `pblczero.Net` (format NETWORK_ONNX, the `OnnxModel`
tensor names present in the embedded graph). It then

1. runs `onnx.checker.check_model(full_check=True)`,
2. runs strict shape inference and compares the inferred shape of every output with the
   declared one,
3. feeds the input tokens of OUT.json (as Lc0's planes: `[B, 112, 8, 8]`, the halfmove clock
   raw) through ONNX Runtime's CPU provider, one position at a time (batch 1) and as one batch of
   33 (the positions repeated), and compares every output the graph has with the same head of
   OUT.json: policy and soft-policy logits, W/D/L probabilities (a softmax of cfzero's logits),
   moves left (plies / 20 against cfzero's units), the q and st heads.

With `--relative` each output's difference is divided by its largest magnitude (at least 1), the
measure for f16 and bf16 graphs, whose error grows with the size of the logits.

`vectors` feeds the planes of Lc0's interop vectors (`tests/data/lc0/vectors.json`, cases of net
NAME) and compares the graph with what Lc0 itself computed for them: policy logits (Lc0's
float32 record), W/D/L and moves left (the reference values, within the tolerances the vectors
suggest: logits 1e-4, WDL 1e-5, moves left 1e-3 plies).

A bf16 graph cannot run on ONNX Runtime's CPU provider (it has no bf16 kernels); `check` runs it
with its bf16 weights widened to f32, which measures what the rounding of the weights costs.

Exit codes: 0 success, 1 a check failed, 2 bad input. Needs onnx, onnxruntime and numpy.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from onnx import TensorProto, helper, numpy_helper

PLANES = 112
HALFMOVE_PLANE = 109
HALFMOVE_SCALE = 99.0
BATCH = 33
PLIES_PER_UNIT = 20.0


class UserError(Exception):
    """Bad input: printed as one line, exit code 2."""


# --------------------------------------------------------------------------------------------
# Lc0's net file, parsed by the protobuf library from a descriptor of the fields it uses
# (numbers from Lc0's proto/net.proto).


def lc0_net_class():
    """The `pblczero.Net` message class (the fields an ONNX net file uses)."""
    f = descriptor_pb2.FileDescriptorProto(name="lc0_net_subset.proto", package="pblczero")
    F = descriptor_pb2.FieldDescriptorProto

    def message(name, fields):
        m = f.message_type.add(name=name)
        for fname, number, ftype, type_name in fields:
            field = m.field.add(name=fname, number=number, type=ftype, label=F.LABEL_OPTIONAL)
            if type_name:
                field.type_name = type_name

    message("EngineVersion", [("major", 1, F.TYPE_UINT32, None), ("minor", 2, F.TYPE_UINT32, None),
                              ("patch", 3, F.TYPE_UINT32, None)])
    message("NetworkFormat", [(n, i, F.TYPE_INT32, None) for n, i in
                              [("input", 1), ("output", 2), ("network", 3), ("policy", 4),
                               ("value", 5), ("moves_left", 6)]])
    message("Format", [("weights_encoding", 1, F.TYPE_INT32, None),
                       ("network_format", 2, F.TYPE_MESSAGE, ".pblczero.NetworkFormat")])
    message("OnnxModel", [("model", 1, F.TYPE_BYTES, None), ("data_type", 2, F.TYPE_INT32, None)]
            + [(n, i, F.TYPE_STRING, None) for n, i in
               [("input_planes", 3), ("output_value", 4), ("output_wdl", 5),
                ("output_policy", 6), ("output_mlh", 7)]])
    message("Net", [("magic", 1, F.TYPE_FIXED32, None),
                    ("min_version", 3, F.TYPE_MESSAGE, ".pblczero.EngineVersion"),
                    ("format", 4, F.TYPE_MESSAGE, ".pblczero.Format"),
                    ("onnx_model", 11, F.TYPE_MESSAGE, ".pblczero.OnnxModel")])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("pblczero.Net"))


def read_model(path: Path) -> tuple[onnx.ModelProto, dict]:
    """The ONNX model at `path` (plain or inside an Lc0 net file) and a report on the wrapper."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise UserError(f"{path}: {e.strerror}") from None
    if data[:2] != b"\x1f\x8b":
        return onnx.load_from_string(data), {}
    net = lc0_net_class()()
    net.ParseFromString(gzip.decompress(data))
    nf = net.format.network_format
    om = net.onnx_model
    model = onnx.load_from_string(om.model)
    names = {"input_planes": om.input_planes, "output_policy": om.output_policy,
             "output_wdl": om.output_wdl, "output_value": om.output_value,
             "output_mlh": om.output_mlh}
    graph_inputs = {i.name for i in model.graph.input}
    graph_outputs = {o.name for o in model.graph.output}
    missing = [f"{k}={v}" for k, v in names.items() if v and v not in
               (graph_inputs if k == "input_planes" else graph_outputs)]
    wrapper = {
        "magic": hex(net.magic),
        "min_version": f"{net.min_version.major}.{net.min_version.minor}.{net.min_version.patch}",
        "network_format": {"input": nf.input, "output": nf.output, "network": nf.network,
                           "policy": nf.policy, "value": nf.value, "moves_left": nf.moves_left},
        "data_type": om.data_type,
        "names": {k: v for k, v in names.items() if v},
        "names_missing_from_graph": missing,
        "ok": net.magic == 0x1C0 and nf.network == 5 and nf.input == 1 and not missing
        and bool(om.input_planes) and bool(om.output_policy),
    }
    return model, wrapper


# --------------------------------------------------------------------------------------------
# The checks.


def inferred_shapes(model: onnx.ModelProto) -> dict:
    """Each output's declared and inferred shapes (strict inference: a conflict raises)."""
    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True,
                                                 data_prop=True)
    infos = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    producer = {n.output[0]: n for n in inferred.graph.node}

    def dims(v):
        return [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]

    report = {}
    for out in model.graph.output:
        source = producer[out.name].input[0] if out.name in producer else out.name
        report[out.name] = {"declared": dims(out), "inferred": dims(infos[source])}
    return report


def widened(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of a bf16 model with f32 tensors and computation (bf16 weights widened)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.BFLOAT16:
            g.initializer[i].CopyFrom(numpy_helper.from_array(
                numpy_helper.to_array(t).astype(np.float32), t.name))
    for v in list(g.input) + list(g.output):
        if v.type.tensor_type.elem_type == TensorProto.BFLOAT16:
            v.type.tensor_type.elem_type = TensorProto.FLOAT
    for n in g.node:
        for a in n.attribute:
            if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.BFLOAT16:
                a.i = TensorProto.FLOAT
    return m


def planes_of(tokens: list[list[float]]) -> np.ndarray:
    """Lc0's planes [B, 112, 8, 8] of cfzero's input tokens (square-major, clock / 99)."""
    t = np.asarray(tokens, dtype=np.float64).reshape(-1, 64, PLANES).transpose(0, 2, 1).copy()
    t[:, HALFMOVE_PLANE, :] = np.rint(t[:, HALFMOVE_PLANE, :] * HALFMOVE_SCALE)
    return t.reshape(-1, PLANES, 8, 8)


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def expected_outputs(heads: dict) -> dict[str, np.ndarray]:
    """cfzero's outputs under the graph's output names, in the graph's units."""
    want = {"/output/policy": np.asarray(heads["policy"])}
    if heads.get("wdl") is not None:
        want["/output/wdl"] = softmax(np.asarray(heads["wdl"], dtype=np.float64))
    if heads.get("moves_left") is not None:
        want["/output/mlh"] = np.asarray(heads["moves_left"])[:, None] * PLIES_PER_UNIT
    if heads.get("soft_policy") is not None:
        want["/output/soft_policy"] = np.asarray(heads["soft_policy"])
    for name in ("q", "st"):
        if heads.get(name) is not None:
            h = heads[name]
            want[f"/output/{name}"] = np.asarray(h["value"])[:, None]
            want[f"/output/{name}_error"] = np.asarray(h["error"])[:, None]
            want[f"/output/{name}_categorical"] = np.asarray(h["categorical"])
    if heads.get("wdl") is None and heads.get("q") is not None:
        want["/output/value"] = want.pop("/output/q")
    return want


def session(model: onnx.ModelProto, threads: int) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])


def read_json(path: Path) -> dict:
    """The JSON document at `path`; UserError if it cannot be read or parsed."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"{path}: {e}") from None


def input_type(model: onnx.ModelProto):
    elem = model.graph.input[0].type.tensor_type.elem_type
    return {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float16}[elem]


def cmd_check(args: argparse.Namespace) -> int:
    model, wrapper = read_model(Path(args.model))
    doc = read_json(Path(args.outputs))
    onnx.checker.check_model(model, full_check=True)
    shapes = inferred_shapes(model)
    bf16 = model.graph.input[0].type.tensor_type.elem_type == TensorProto.BFLOAT16
    runnable = widened(model) if bf16 else model
    sess = session(runnable, args.threads)
    planes = planes_of(doc["inputs"]).astype(input_type(runnable))
    n = planes.shape[0]
    want = expected_outputs(doc["outputs"])
    names = [o.name for o in sess.get_outputs()]
    singles = [dict(zip(names, sess.run(None, {"/input/planes": planes[i:i + 1]})))
               for i in range(n)]
    rows = [i % n for i in range(BATCH)]
    batch = dict(zip(names, sess.run(None, {"/input/planes": planes[rows]})))
    diffs, unmatched = {}, [name for name in names if name not in want]
    for name in names:
        if name not in want:
            continue
        w = want[name]
        one = np.concatenate([s[name] for s in singles]).astype(np.float64)
        many = batch[name].astype(np.float64)
        scale = PLIES_PER_UNIT if name == "/output/mlh" else 1.0
        if args.relative:
            scale *= max(1.0, float(np.abs(w).max()))
        diffs[name] = {
            "batch1": float(np.abs(one - w).max() / scale),
            f"batch{BATCH}": float(np.abs(many - w[rows]).max() / scale),
        }
    worst = max(max(d.values()) for d in diffs.values())
    report = {
        "model": str(args.model),
        "precision": {TensorProto.FLOAT: "f32", TensorProto.FLOAT16: "f16",
                      TensorProto.BFLOAT16: "bf16 (weights widened to f32)"}[
            model.graph.input[0].type.tensor_type.elem_type],
        "opset": [o.version for o in model.opset_import],
        "checker": "ok",
        "shapes": shapes,
        "shapes_ok": all(s["declared"] == s["inferred"] for s in shapes.values()),
        "positions": n,
        "max_abs_diff": diffs,
        "outputs_without_reference": unmatched,
        "worst": worst,
        "tolerance": args.tolerance,
        "relative": args.relative,
    }
    if wrapper:
        report["lc0"] = wrapper
    report["ok"] = (report["shapes_ok"] and worst <= args.tolerance and not unmatched
                    and wrapper.get("ok", True))
    print(json.dumps(report, indent=None if args.json else 2))
    return 0 if report["ok"] else 1


def vector_planes(case: dict) -> np.ndarray:
    """The planes [112, 8, 8] of one case of Lc0's vectors (mask bit s = square s)."""
    out = np.zeros((PLANES, 64))
    for p, plane in enumerate(case["planes"]):
        mask = int(plane["mask"], 16)
        out[p] = [plane["value"] if mask >> sq & 1 else 0.0 for sq in range(64)]
    return out.reshape(PLANES, 8, 8)


def cmd_vectors(args: argparse.Namespace) -> int:
    model, wrapper = read_model(Path(args.model))
    doc = read_json(Path(args.vectors))
    cases = [c for c in doc["cases"] if c["net"] == args.net]
    if not cases:
        raise UserError(f"{args.vectors}: no cases of net {args.net!r}")
    sess = session(model, args.threads)
    planes = np.stack([vector_planes(c) for c in cases]).astype(input_type(model))
    names = [o.name for o in sess.get_outputs()]
    batch = dict(zip(names, sess.run(None, {"/input/planes": planes})))
    singles = [dict(zip(names, sess.run(None, {"/input/planes": planes[i:i + 1]})))
               for i in range(len(cases))]
    worst = {"logits_vs_lc0": 0.0, "wdl": 0.0, "q_vs_lc0": 0.0, "moves_left": 0.0}
    for form, outs in [("batch", lambda i: {k: v[i] for k, v in batch.items()}),
                       ("single", lambda i: {k: v[0] for k, v in singles[i].items()})]:
        for i, case in enumerate(cases):
            o = outs(i)
            record = case["lc0"]["record"]
            for move in case["legal_moves"]:
                got = float(o["/output/policy"][move["nn_index"]])
                worst["logits_vs_lc0"] = max(worst["logits_vs_lc0"],
                                             abs(got - record["logits"][move["uci"]]))
            wdl = o["/output/wdl"].astype(np.float64)
            worst["wdl"] = max(worst["wdl"], float(np.abs(wdl - case["wdl"]).max()))
            worst["q_vs_lc0"] = max(worst["q_vs_lc0"], abs(wdl[0] - wdl[2] - record["q"]))
            worst["moves_left"] = max(worst["moves_left"],
                                      abs(float(o["/output/mlh"][0]) - case["moves_left"]))
    limits = {"logits_vs_lc0": 1e-4, "wdl": 1e-5, "q_vs_lc0": 1e-5, "moves_left": 1e-3}
    report = {"model": str(args.model), "net": args.net, "cases": len(cases),
              "max_abs_diff": worst, "limits": limits,
              "ok": all(worst[k] <= limits[k] for k in limits) and wrapper.get("ok", True)}
    if wrapper:
        report["lc0"] = wrapper
    print(json.dumps(report, indent=None if args.json else 2))
    return 0 if report["ok"] else 1


def cmd_bench(args: argparse.Namespace) -> int:
    model, _ = read_model(Path(args.model))
    sess = session(model, args.threads)
    rng = np.random.default_rng(0)
    results = []
    for b in [int(x) for x in args.batches.split(",")]:
        x = (rng.random((b, PLANES, 8, 8)) < 0.1).astype(input_type(model))
        sess.run(None, {"/input/planes": x})  # warm-up
        start, evals = time.perf_counter(), 0
        while time.perf_counter() - start < args.seconds:
            sess.run(None, {"/input/planes": x})
            evals += b
        rate = evals / (time.perf_counter() - start)
        results.append({"batch": b, "evals_per_s": rate})
        if not args.json:
            print(f"batch {b:4d}: {rate:10.1f} evaluations/s", flush=True)
    if args.json:
        print(json.dumps({"model": str(args.model), "threads": args.threads,
                          "onnxruntime": ort.__version__, "results": results}))
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="checker, shape inference, ONNX Runtime against cfzero")
    c.add_argument("--model", required=True)
    c.add_argument("--outputs", required=True, help="from `cfzero debug outputs`")
    c.add_argument("--tolerance", type=float, default=1e-4)
    c.add_argument("--relative", action="store_true",
                   help="divide each output's difference by its largest magnitude (at least 1)")
    c.add_argument("--threads", type=int, default=1)
    c.add_argument("--json", action="store_true")
    v = sub.add_parser("vectors", help="the graph against Lc0's own outputs (vectors.json)")
    v.add_argument("--model", required=True)
    v.add_argument("--vectors", required=True)
    v.add_argument("--net", required=True, help="the vectors' net name, e.g. bt-smolgen")
    v.add_argument("--threads", type=int, default=1)
    v.add_argument("--json", action="store_true")
    b = sub.add_parser("bench", help="ONNX Runtime evaluations per second")
    b.add_argument("--model", required=True)
    b.add_argument("--batches", default="1,64,256")
    b.add_argument("--threads", type=int, default=2)
    b.add_argument("--seconds", type=float, default=3.0)
    b.add_argument("--json", action="store_true")
    args = p.parse_args()
    try:
        return {"check": cmd_check, "vectors": cmd_vectors, "bench": cmd_bench}[args.cmd](args)
    except UserError as e:
        print(f"onnx_check: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
