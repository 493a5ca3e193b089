#!/usr/bin/env python3
"""A PyTorch implementation of cfzero's Chessformer: forward pass, loss and training step.

It reads a native export (``cfzero export --net NET.safetensors --format native --out DIR``:
``DIR/model.safetensors`` with cfzero's tensor names and ``DIR/config.json``, the ``[network]``
table as JSON) and computes exactly what cfzero computes, so that

* ``check`` can compare every head with ``cfzero debug outputs`` (same weights, same input
  tokens),
* ``step`` can compare training steps (loss, gradients, clipping, NAdam) with cfzero's, and
* ``bench`` can time the same computation in Python, for ``compare.py``.

The layers follow cfzero's Rust model (network/src/model/) one to one, including two details
that only matter for speed or rounding: Shaw attention has two equal forms (one for batches of up
to 4 positions, one for larger batches), and dense layers pad matrices of fewer than 8 rows
with zero rows. Both are kept so that the timings compare the same arithmetic.

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
import math
import struct
import sys
import time
import tomllib
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

# --------------------------------------------------------------------------------------------
# Constants of the model (network/src/encoding, network/src/model, network/src/loss.rs).

PLANES = 112  # input features per square token
POLICY_SIZE = 1858  # entries of the policy vector
ATTENTION_POLICY_SIZE = 64 * 64 + 8 * 8 * 3  # from-to logits, then promotion logits
VALUE_BUCKETS = 32  # categorical value buckets over [-1, 1]
SHAW_BUCKETS = 225  # (delta rank, delta file) in -7..=7 each
BUCKET_FORM_MAX_BATCH = 4  # largest batch whose Shaw attention uses the bucket form
MIN_ROWS = 8  # dense layers pad matrices of fewer rows (batch-invariant rounding)
NORM_EPS = 1e-6  # encoder norms
SMOLGEN_EPS = 1e-3  # smolgen's LayerNorms
ILLEGAL_LOGIT = -1e9  # illegal moves' logit in the loss
SOFT_POLICY_TEMPERATURE = 4.0
MOVES_LEFT_HUBER_DELTA = 0.5
MOVES_LEFT_SCALE = 20.0  # plies per unit of the moves-left head

# Loss weights of each head (LossWeights::default in network/src/config.rs).
DEFAULT_LOSS_WEIGHTS = {
    "policy": 1.0,
    "soft_policy": 8.0,
    "winner": 1.0,
    "q": 1.0,
    "q_error": 1.0,
    "q_categorical": 0.1,
    "st": 1.0,
    "st_error": 1.0,
    "st_categorical": 0.1,
    "moves_left": 1.0,
}


# cfzero's [train] table when a config has none (src/config.rs).
DEFAULT_TRAIN = {"batch_size": 256, "lr": {"peak": 0.001, "warmup_steps": 100}}


class UserError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


# --------------------------------------------------------------------------------------------
# safetensors without the safetensors package: an 8-byte little-endian header length, a JSON
# header (name -> dtype, shape, data_offsets; optional "__metadata__"), then the raw data.


# Tensors are read and written through torch.frombuffer, in the machine's byte order.
assert sys.byteorder == "little", "safetensors data is little-endian"


def read_safetensors(path: Path) -> tuple[dict[str, Tensor], dict[str, str]]:
    """The f32 tensors of a safetensors file by name, and its metadata."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror}") from None
    if len(data) < 8:
        raise UserError(f"{path}: not a safetensors file (too short)")
    (header_len,) = struct.unpack("<Q", data[:8])
    try:
        header = json.loads(data[8 : 8 + header_len])
    except (ValueError, UnicodeDecodeError):
        raise UserError(f"{path}: not a safetensors file (bad header)") from None
    metadata = header.pop("__metadata__", {}) or {}
    body = memoryview(data)[8 + header_len :]
    tensors = {}
    for name, info in header.items():
        try:
            dtype, shape, (start, end) = info["dtype"], info["shape"], info["data_offsets"]
            if dtype != "F32":
                raise UserError(f"{path}: tensor {name} is {dtype}, expected F32")
            raw = bytearray(body[start:end])
            flat = torch.frombuffer(raw, dtype=torch.float32) if raw else torch.zeros(0)
            tensors[name] = flat.reshape(shape)
        except (KeyError, TypeError, ValueError, RuntimeError):
            raise UserError(f"{path}: not a safetensors file (bad entry {name!r})") from None
    return tensors, metadata


def write_safetensors(path: Path, tensors: dict[str, Tensor], metadata: dict[str, str]) -> None:
    """Writes f32 `tensors` (sorted by name) and string `metadata` as a safetensors file."""
    header: dict[str, object] = {"__metadata__": metadata}
    chunks = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name].detach().to(torch.float32).reshape(-1)
        raw = bytearray(4 * t.numel())
        if t.numel():
            torch.frombuffer(raw, dtype=torch.float32).copy_(t)
        header[name] = {
            "dtype": "F32",
            "shape": list(tensors[name].shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        chunks.append(bytes(raw))
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the format pads the header to 8 bytes with spaces
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(chunks))


# --------------------------------------------------------------------------------------------
# Index tables.


def policy_gather() -> list[int]:
    """For each of the 1858 policy entries, the position of its logit among the attention
    policy head's 4288 (network/src/encoding/attention.rs).

    Lc0's policy index lists, for each from-square 0..63 (a1 = 0, side to move's view), every
    to-square in increasing order that a queen or a knight reaches (logit from*64+to); then, for
    each from-file and each to-file at most one file away, promotions on rank 7 -> 8 to queen,
    rook and bishop (logit 4096 + from_file*24 + to_file*3 + piece). A knight promotion uses the
    plain move's entry.
    """
    gather = []
    for src in range(64):
        for dst in range(64):
            df, dr = abs(src % 8 - dst % 8), abs(src // 8 - dst // 8)
            queen = df == 0 or dr == 0 or df == dr
            knight = (df, dr) in ((1, 2), (2, 1))
            if src != dst and (queen or knight):
                gather.append(src * 64 + dst)
    for from_file in range(8):
        for to_file in range(8):
            if abs(from_file - to_file) <= 1:
                gather.extend(4096 + from_file * 24 + to_file * 3 + p for p in range(3))
    assert len(gather) == POLICY_SIZE and max(gather) < ATTENTION_POLICY_SIZE
    return gather


def gather_from_moves(moves: list[str]) -> list[int]:
    """The same table from the 1858 UCI strings that `cfzero debug moves` prints."""

    def square(s: str) -> int:
        return (ord(s[0]) - ord("a")) + 8 * (int(s[1]) - 1)

    gather = []
    for uci in moves:
        src, dst = square(uci[0:2]), square(uci[2:4])
        if len(uci) == 5:
            gather.append(4096 + (src % 8) * 24 + (dst % 8) * 3 + "qrb".index(uci[4]))
        else:
            gather.append(src * 64 + dst)
    return gather


def shaw_bucket_index() -> Tensor:
    """Bucket of each (query i, key j) pair, query-major `[4096]`:
    (rank_j - rank_i + 7) * 15 + (file_j - file_i + 7)."""
    sq = torch.arange(64)
    rank, file = sq // 8, sq % 8
    bucket = (rank[None, :] - rank[:, None] + 7) * 15 + (file[None, :] - file[:, None] + 7)
    return bucket.reshape(-1)


# --------------------------------------------------------------------------------------------
# Layers (network/src/model/layers.rs).


def pad_rows(x: Tensor) -> Tensor:
    """`x` `[rows, ...]` with zero rows appended up to MIN_ROWS."""
    rows = x.shape[0]
    if rows >= MIN_ROWS:
        return x
    return torch.cat([x, x.new_zeros((MIN_ROWS - rows, *x.shape[1:]))], 0)


class Dense(nn.Module):
    """`y = x W^T + b` with weight `w` `[out, in]` and optional bias `b` `[out]`.

    A matrix `[B, in]` of fewer than MIN_ROWS rows is padded with zero rows first, as cfzero
    does (libtorch rounds products of one to three rows differently)."""

    def __init__(self, d_in: int, d_out: int, bias: bool = True):
        super().__init__()
        self.w = nn.Parameter(torch.empty(d_out, d_in))
        self.b = nn.Parameter(torch.zeros(d_out)) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() == 2 and x.shape[0] < MIN_ROWS:
            return F.linear(pad_rows(x), self.w, self.b)[: x.shape[0]]
        return F.linear(x, self.w, self.b)


class Norm(nn.Module):
    """RMSNorm (`gain`) or LayerNorm (`gain`, `bias`) over the last dimension."""

    def __init__(self, kind: str, d: int, eps: float = NORM_EPS):
        super().__init__()
        self.kind, self.eps = kind, eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d)) if kind == "layer" else None

    def forward(self, x: Tensor) -> Tensor:
        if self.kind == "rms":
            return F.rms_norm(x, x.shape[-1:], self.gain, self.eps)
        return F.layer_norm(x, x.shape[-1:], self.gain, self.bias, self.eps)


# --------------------------------------------------------------------------------------------
# Attention (network/src/model/{attention,shaw,smolgen}.rs).


def attend(q: Tensor, k: Tensor, v: Tensor, bias: Tensor | None = None) -> Tensor:
    """Scaled dot-product attention, `[B, H, 64, d_head]` each, with an optional
    `[B, H, 64, 64]` bias added after scaling."""
    logits = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(q.shape[-1]))
    if bias is not None:
        logits = logits + bias
    return logits.softmax(-1) @ v


def attend_shaw_buckets(q, k, v, tables, index) -> Tensor:
    """Shaw attention against the ungathered `[H, 225, d_head]` tables: products with all
    225 buckets, then the bucket of each (query, key) pair picked out. For small batches."""
    b, h, n, dh = q.shape
    tq, tk, tv = tables
    idx = index.view(1, 1, n, n).expand(b, h, n, n)
    qr = (q @ tq.transpose(-2, -1)).gather(3, idx)  # q_i . rq[bucket(i, j)]
    kr = (tk @ k.transpose(-2, -1)).gather(2, idx)  # k_j . rk[bucket(i, j)]
    logits = (q @ k.transpose(-2, -1) + qr + kr) * (1.0 / math.sqrt(dh))
    a = logits.softmax(-1)
    # For a fixed query, j -> bucket(i, j) is one-to-one: spread the weights over the buckets.
    spread = a.new_zeros(b, h, n, SHAW_BUCKETS).scatter(3, idx, a)
    return a @ v + spread @ tv


def attend_shaw_gathered(q, k, v, gathered) -> Tensor:
    """Shaw attention over tables gathered to `[H, 64, 64, d_head]` (query, key): each Shaw
    term is one batched product over the (head, square) pairs with the batch as the rows."""
    b, h, n, dh = q.shape
    rq, rk, rv = gathered

    def by_square(t: Tensor, x: int) -> Tensor:
        # [B, H, 64, x] -> [H*64, rows, x], the batch padded to at least MIN_ROWS rows.
        return pad_rows(t.permute(1, 2, 0, 3).reshape(h * n, b, x).transpose(0, 1)).transpose(0, 1)

    def unpad(t: Tensor, y: int) -> Tensor:
        # [H*64, rows, y] -> [H, 64, B, y]
        return t[:, :b].reshape(h, n, b, y)

    rq_t = rq.reshape(h * n, n, dh).transpose(1, 2)
    qr = unpad(by_square(q, dh).bmm(rq_t), n).permute(2, 0, 1, 3)
    rk_t = rk.permute(0, 2, 3, 1).reshape(h * n, dh, n)
    kr = unpad(by_square(k, dh).bmm(rk_t), n).permute(2, 0, 3, 1)
    logits = (q @ k.transpose(-2, -1) + qr + kr) * (1.0 / math.sqrt(dh))
    a = logits.softmax(-1)
    ar = unpad(by_square(a, n).bmm(rv.reshape(h * n, n, dh)), dh).permute(2, 0, 1, 3)
    return a @ v + ar


class Smolgen(nn.Module):
    """Lc0's smolgen: a per-position attention bias `[B, H, 64, 64]` generated from a
    compressed copy of the layer input through the global generator `smolgen_w`."""

    def __init__(self, cfg: dict, d_model: int, heads: int):
        super().__init__()
        att = cfg["attention"]
        c, hidden, gen = att["smolgen_compress"], att["smolgen_hidden"], att["smolgen_gen"]
        self.heads, self.gen = heads, gen
        self.compress = Dense(d_model, c, bias=False)
        self.dense1 = Dense(64 * c, hidden)
        self.ln1 = Norm("layer", hidden, SMOLGEN_EPS)
        self.dense2 = Dense(hidden, heads * gen)
        self.ln2 = Norm("layer", heads * gen, SMOLGEN_EPS)

    def forward(self, x: Tensor, generator: Tensor) -> Tensor:
        b = x.shape[0]
        c = self.compress(x).reshape(b, -1)  # square-major: compress * square + channel
        hid = self.ln1(F.silu(self.dense1(c)))
        g = self.ln2(F.silu(self.dense2(hid))).view(b, self.heads, self.gen)
        return (g @ generator.t()).view(b, self.heads, 64, 64)


class Attention(nn.Module):
    """Multi-head self-attention over the 64 square tokens with its position term (Shaw
    tables, smolgen or none). Head h uses channels h*d_head..(h+1)*d_head."""

    def __init__(self, cfg: dict):
        super().__init__()
        d, self.heads = cfg["d_model"], cfg["heads"]
        dh = d // self.heads
        bias = cfg.get("qkv_bias", False)
        self.q, self.k, self.v = Dense(d, d, bias), Dense(d, d, bias), Dense(d, d, bias)
        self.out = Dense(d, d)
        self.position = cfg["attention"]["position"]
        if self.position == "shaw":
            self.rpe_q = nn.Parameter(torch.zeros(self.heads, SHAW_BUCKETS, dh))
            self.rpe_k = nn.Parameter(torch.zeros(self.heads, SHAW_BUCKETS, dh))
            self.rpe_v = nn.Parameter(torch.zeros(self.heads, SHAW_BUCKETS, dh))
        elif self.position == "smolgen":
            self.smolgen = Smolgen(cfg, d, self.heads)

    def split(self, x: Tensor) -> Tensor:
        b, n, d = x.shape
        return x.view(b, n, self.heads, d // self.heads).permute(0, 2, 1, 3)

    def forward(self, x: Tensor, bucket_index: Tensor, smolgen_w: Tensor | None) -> Tensor:
        b, n, d = x.shape
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        if self.position == "shaw":
            tables = (self.rpe_q, self.rpe_k, self.rpe_v)
            if b <= BUCKET_FORM_MAX_BATCH:
                z = attend_shaw_buckets(q, k, v, tables, bucket_index)
            else:
                h, dh = self.heads, d // self.heads
                gathered = tuple(
                    t.index_select(1, bucket_index).view(h, 64, 64, dh) for t in tables
                )
                z = attend_shaw_gathered(q, k, v, gathered)
        elif self.position == "smolgen":
            z = attend(q, k, v, self.smolgen(x, smolgen_w))
        else:
            z = attend(q, k, v)
        return self.out(z.permute(0, 2, 1, 3).reshape(b, n, d))


class EncoderLayer(nn.Module):
    """Post-norm encoder layer with DeepNorm residual scaling alpha = (2 N)^-1/4:
    `x = Norm(x + alpha MHA(x)); x = Norm(x + alpha FFN(x))`, FFN = dense, Mish, dense."""

    def __init__(self, cfg: dict):
        super().__init__()
        d = cfg["d_model"]
        self.alpha = (2.0 * cfg["layers"]) ** -0.25
        self.attn = Attention(cfg)
        self.norm1 = Norm(cfg.get("norm", "rms"), d)
        self.ffn1 = Dense(d, cfg["dff"])
        self.ffn2 = Dense(cfg["dff"], d)
        self.norm2 = Norm(cfg.get("norm", "rms"), d)

    def forward(self, x: Tensor, bucket_index: Tensor, smolgen_w: Tensor | None) -> Tensor:
        x = self.norm1(x + self.attn(x, bucket_index, smolgen_w) * self.alpha)
        return self.norm2(x + self.ffn2(F.mish(self.ffn1(x))) * self.alpha)


# --------------------------------------------------------------------------------------------
# Heads (network/src/model/{policy,value}.rs).


class PolicyHead(nn.Module):
    """Attention policy: from-to logits `Q K^T / sqrt(d_pol)` of the embedded tokens, plus
    promotion offsets from the keys of rank 8 (knight offset added to those of q, r, b),
    gathered into the 1858-entry order."""

    def __init__(self, d_model: int, d_pol: int):
        super().__init__()
        self.d_pol = d_pol
        self.embed = Dense(d_model, d_pol)
        self.q = Dense(d_pol, d_pol)
        self.k = Dense(d_pol, d_pol)
        self.promo = Dense(d_pol, 4, bias=False)

    def forward(self, x: Tensor, gather: Tensor) -> Tensor:
        b = x.shape[0]
        e = F.mish(self.embed(x))
        qp, kp = self.q(e), self.k(e)
        c = qp @ kp.transpose(-2, -1) / math.sqrt(self.d_pol)
        o = self.promo(kp[:, 56:64]).transpose(1, 2)  # [B, 4 pieces, 8 to-files]
        offsets = o[:, 0:3] + o[:, 3:4]  # [B, 3, 8]
        base = c[:, 48:56, 56:64]  # [B, from_file, to_file]
        promotions = base.unsqueeze(-1) + offsets.permute(0, 2, 1).unsqueeze(1)  # [B, 8, 8, 3]
        logits = torch.cat([c.reshape(b, 4096), promotions.reshape(b, 192)], 1)
        return logits.index_select(1, gather)


class Trunk(nn.Module):
    """Shared start of the value-like heads: per-token dense, Mish, flatten (square-major),
    dense, Mish."""

    def __init__(self, d_model: int, channels: int, hidden: int):
        super().__init__()
        self.embed = Dense(d_model, channels)
        self.fc1 = Dense(64 * channels, hidden)

    def forward(self, x: Tensor) -> Tensor:
        return F.mish(self.fc1(F.mish(self.embed(x)).reshape(x.shape[0], -1)))


class WinnerHead(Trunk):
    """Win/draw/loss logits `[B, 3]`."""

    def __init__(self, d_model: int, channels: int, hidden: int):
        super().__init__(d_model, channels, hidden)
        self.out = Dense(hidden, 3)

    def forward(self, x: Tensor) -> Tensor:
        return self.out(super().forward(x))


class ScalarValueHead(Trunk):
    """The q and st heads: tanh value `[B]`, sigmoid error estimate `[B]` and 32 bucket
    logits `[B, 32]`."""

    def __init__(self, d_model: int, channels: int, hidden: int):
        super().__init__(d_model, channels, hidden)
        self.value = Dense(hidden, 1)
        self.error = Dense(hidden, 1)
        self.categorical = Dense(hidden, VALUE_BUCKETS)

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        h = super().forward(x)
        return {
            "value": self.value(h).squeeze(1).tanh(),
            "error": self.error(h).squeeze(1).sigmoid(),
            "categorical": self.categorical(h),
        }


class MovesLeftHead(Trunk):
    """Moves left `[B]` in units of 20 plies (ReLU output)."""

    def __init__(self, d_model: int, channels: int, hidden: int):
        super().__init__(d_model, channels, hidden)
        self.out = Dense(hidden, 1)

    def forward(self, x: Tensor) -> Tensor:
        return self.out(super().forward(x)).squeeze(1).relu()


# --------------------------------------------------------------------------------------------
# The model (network/src/model/mod.rs).


def full_config(cfg: dict) -> dict:
    """`cfg` (a `[network]` table) with cfzero's defaults filled in."""
    cfg = dict(cfg)
    cfg.setdefault("value_channels", 32)
    cfg.setdefault("value_hidden", 128)
    cfg.setdefault("norm", "rms")
    cfg.setdefault("moves_left_channels", 8)
    cfg.setdefault("moves_left_hidden", 128)
    cfg.setdefault("qkv_bias", False)
    att = dict(cfg.get("attention") or {})
    att.setdefault("position", "shaw")
    att.setdefault("smolgen_compress", 8)
    att.setdefault("smolgen_hidden", 64)
    att.setdefault("smolgen_gen", 32)
    cfg["attention"] = att
    outputs = dict(cfg.get("outputs") or {})
    for head in ("soft_policy", "winner", "q", "st", "moves_left"):
        outputs.setdefault(head, True)
    cfg["outputs"] = outputs
    return cfg


class Embedding(nn.Module):
    """`mish(x W^T + b) * gate_mul + gate_add`, gates `[64, d]` per square."""

    def __init__(self, d_model: int):
        super().__init__()
        self.w = nn.Parameter(torch.empty(d_model, PLANES))
        self.b = nn.Parameter(torch.zeros(d_model))
        self.gate_mul = nn.Parameter(torch.ones(64, d_model))
        self.gate_add = nn.Parameter(torch.zeros(64, d_model))

    def forward(self, x: Tensor) -> Tensor:
        return F.mish(F.linear(x, self.w, self.b)) * self.gate_mul + self.gate_add


class Chessformer(nn.Module):
    """The whole net. Parameter names (`state_dict` keys) are cfzero's tensor names."""

    def __init__(self, cfg: dict):
        super().__init__()
        cfg = full_config(cfg)
        self.config = cfg
        d, heads = cfg["d_model"], cfg["outputs"]
        vc, vh = cfg["value_channels"], cfg["value_hidden"]
        self.embed = Embedding(d)
        self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg["layers"]))
        if cfg["attention"]["position"] == "smolgen":
            self.smolgen_w = nn.Parameter(torch.empty(4096, cfg["attention"]["smolgen_gen"]))
        else:
            self.smolgen_w = None
        self.policy = PolicyHead(d, cfg["d_pol"])
        self.soft_policy = PolicyHead(d, cfg["d_pol"]) if heads["soft_policy"] else None
        self.value_winner = WinnerHead(d, vc, vh) if heads["winner"] else None
        self.value_q = ScalarValueHead(d, vc, vh) if heads["q"] else None
        self.value_st = ScalarValueHead(d, vc, vh) if heads["st"] else None
        self.moves_left = (
            MovesLeftHead(d, cfg["moves_left_channels"], cfg["moves_left_hidden"])
            if heads["moves_left"]
            else None
        )
        self.register_buffer("gather", torch.tensor(policy_gather()), persistent=False)
        self.register_buffer("bucket_index", shaw_bucket_index(), persistent=False)
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """cfzero's initialisation: Glorot-normal dense weights (DeepNorm gain beta on the
        value and output projections and the FFN), zero biases and Shaw tables, unit gains."""
        beta = (8.0 * self.config["layers"]) ** -0.25
        deepnorm = ("attn.v", "attn.out", "ffn1", "ffn2")  # inside encoder layers
        for name, module in self.named_modules():
            if isinstance(module, Dense):
                d_out, d_in = module.w.shape
                gain = beta if name.startswith("encoder.") and name.endswith(deepnorm) else 1.0
                module.w.normal_(0.0, gain * math.sqrt(2.0 / (d_in + d_out)))
        self.embed.w.normal_(0.0, math.sqrt(2.0 / (PLANES + self.config["d_model"])))
        if self.smolgen_w is not None:
            self.smolgen_w.normal_(0.0, math.sqrt(2.0 / (self.smolgen_w.shape[1] + 4096)))
        if self.moves_left is not None:
            self.moves_left.out.b.fill_(2.0)

    def forward(self, x: Tensor) -> dict[str, Tensor | dict[str, Tensor] | None]:
        """Every head's raw outputs for inputs `[B, 64, 112]` (token-major planes)."""
        x = self.body(x)
        return {
            "policy": self.policy(x, self.gather),
            "soft_policy": None if self.soft_policy is None else self.soft_policy(x, self.gather),
            "wdl": None if self.value_winner is None else self.value_winner(x),
            "q": None if self.value_q is None else self.value_q(x),
            "st": None if self.value_st is None else self.value_st(x),
            "moves_left": None if self.moves_left is None else self.moves_left(x),
        }

    def body(self, x: Tensor) -> Tensor:
        """The tokens `[B, 64, d]` after the encoder."""
        x = self.embed(x)
        for layer in self.encoder:
            x = layer(x, self.bucket_index, self.smolgen_w)
        return x

    def forward_play(self, x: Tensor) -> dict[str, Tensor | dict[str, Tensor] | None]:
        """Only what a search reads (cfzero's `forward_play`): the policy and the winner head,
        or the q head for a net without one."""
        x = self.body(x)
        wdl = None if self.value_winner is None else self.value_winner(x)
        return {
            "policy": self.policy(x, self.gather),
            "wdl": wdl,
            "q": self.value_q(x) if wdl is None and self.value_q is not None else None,
        }


def load_model(path: Path) -> Chessformer:
    """A model with the weights of a native export directory (`model.safetensors` and
    `config.json`) or of a cfzero `.safetensors` checkpoint (config in its metadata)."""
    if path.is_dir():
        config_path = path / "config.json"
        try:
            cfg = json.loads(config_path.read_text())
        except OSError as e:
            raise UserError(f"cannot read {config_path}: {e.strerror}") from None
        except ValueError as e:
            raise UserError(f"{config_path}: not JSON: {e}") from None
        tensors, _ = read_safetensors(path / "model.safetensors")
    else:
        tensors, metadata = read_safetensors(path)
        if "cfzero.network_config" not in metadata:
            raise UserError(f"{path}: no cfzero.network_config metadata (not a cfzero net)")
        cfg = json.loads(metadata["cfzero.network_config"])
    model = Chessformer(cfg)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(tensors))
    unknown = sorted(set(tensors) - set(expected))
    if missing or unknown:
        raise UserError(
            f"{path}: tensors do not match the config: missing {missing[:5]}, unknown {unknown[:5]}"
        )
    for name, t in tensors.items():
        if tuple(t.shape) != tuple(expected[name].shape):
            raise UserError(
                f"{path}: {name} has shape {list(t.shape)}, expected {list(expected[name].shape)}"
            )
    model.load_state_dict(tensors)
    return model


# --------------------------------------------------------------------------------------------
# Loss (network/src/loss.rs) and the training step (trainer/src/learner.rs).


def cross_entropy(logits: Tensor, target: Tensor) -> Tensor:
    """Batch mean of `-sum target * log_softmax(logits)`."""
    return -(target * logits.log_softmax(-1)).sum(-1).mean()


def soft_target(policy: Tensor) -> Tensor:
    """`p^(1/T)` renormalised per row (zero rows stay zero)."""
    t = policy.clamp_min(0.0).pow(1.0 / SOFT_POLICY_TEMPERATURE)
    return t / t.sum(-1, keepdim=True).clamp_min(1e-12)


def two_hot(values: Tensor) -> Tensor:
    """Two-hot `[B, 32]` of values in [-1, 1] over bucket centres -1 + 2k/31."""
    n = VALUE_BUCKETS - 1.0
    pos = (values.clamp(-1.0, 1.0) + 1.0) * (n / 2.0)
    lo = pos.floor().clamp(0.0, n - 1.0)
    frac = (pos - lo).unsqueeze(-1)
    lo_idx = lo.long().unsqueeze(-1)
    z = values.new_zeros(values.shape[0], VALUE_BUCKETS)
    return z.scatter_add(-1, lo_idx, 1.0 - frac).scatter_add(-1, lo_idx + 1, frac)


def value_terms(out: dict[str, Tensor], target: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(squared error, error-estimate loss, categorical cross-entropy) of a q or st head."""
    se = (out["value"] - target).square().mean()
    err_target = (target - out["value"].detach()).square()
    err = (err_target - out["error"]).square().mean()
    return se, err, cross_entropy(out["categorical"], two_hot(target))


def loss(
    outputs: dict, batch: dict[str, Tensor], weights: dict[str, float]
) -> tuple[Tensor, dict[str, Tensor]]:
    """The weighted total loss and each unweighted term."""
    illegal = batch["legal"] == 0  # legal: a 0/1 float mask (or bool)
    terms = {
        "policy": cross_entropy(
            outputs["policy"].masked_fill(illegal, ILLEGAL_LOGIT), batch["policy"]
        )
    }
    if outputs["soft_policy"] is not None:
        soft = outputs["soft_policy"].masked_fill(illegal, ILLEGAL_LOGIT)
        terms["soft_policy"] = cross_entropy(soft, soft_target(batch["policy"]))
    if outputs["wdl"] is not None:
        terms["winner"] = cross_entropy(outputs["wdl"], batch["wdl"])
    for head in ("q", "st"):
        if outputs[head] is not None:
            se, err, cat = value_terms(outputs[head], batch[head])
            terms[head], terms[f"{head}_error"], terms[f"{head}_categorical"] = se, err, cat
    if outputs["moves_left"] is not None:
        target = batch["moves_left"] / MOVES_LEFT_SCALE
        terms["moves_left"] = F.huber_loss(
            outputs["moves_left"], target, delta=MOVES_LEFT_HUBER_DELTA
        )
    total = sum(t * weights[name] for name, t in terms.items())
    return total, terms


class Learner:
    """cfzero's training step: forward, weighted loss, backward, global gradient-norm clip,
    NAdam (PyTorch's, the semantics cfzero's own NAdam copies: betas 0.9/0.98, eps 1e-7,
    momentum decay 0.004, L2 weight decay), the step's policy accuracy and value MSE, and a
    stochastic weight average of the weights every `swa_every` steps."""

    def __init__(self, model: Chessformer, train: dict):
        self.model = model
        self.params = list(model.parameters())
        self.grad_clip = train.get("grad_clip", 10.0)
        lr = train.get("lr", DEFAULT_TRAIN["lr"])
        self.peak, self.warmup = lr["peak"], lr.get("warmup_steps", 0)
        self.decay_steps, self.decay_factor = lr.get("decay_steps", []), lr.get("decay_factor", 0.1)
        self.weights = {**DEFAULT_LOSS_WEIGHTS, **train.get("loss", {})}
        self.opt = torch.optim.NAdam(
            self.params,
            lr=self.peak,
            betas=(0.9, 0.98),
            eps=1e-7,
            momentum_decay=0.004,
            weight_decay=train.get("weight_decay", 0.0),
        )
        self.swa_every, self.swa_max = train.get("swa_every", 10), max(1, train.get("swa_max", 10))
        self.swa: list[Tensor] | None = None
        self.swa_n = 0
        self.steps = 0

    def lr(self, step: int) -> float:
        """The schedule's learning rate at 0-based `step`: linear warmup, then step decay."""
        if step < self.warmup:
            return self.peak * (step + 1) / self.warmup
        return self.peak * self.decay_factor ** sum(1 for s in self.decay_steps if s <= step)

    def step(self, host: dict[str, Tensor]) -> dict[str, float]:
        """One optimisation step on a host batch (copied into fresh tensors, as cfzero does)."""
        device = self.model.gather.device
        batch = {name: t.to(device, copy=True) for name, t in host.items()}
        for group in self.opt.param_groups:
            group["lr"] = self.lr(self.steps)
        outputs = self.model(batch["inputs"])
        total, terms = loss(outputs, batch, self.weights)
        self.opt.zero_grad()
        total.backward()
        grad_norm = nn.utils.clip_grad_norm_(self.params, self.grad_clip)
        self.opt.step()
        self.steps += 1
        with torch.no_grad():
            legal = batch["legal"] > 0.5
            predicted = outputs["policy"].masked_fill(~legal, -math.inf).argmax(-1)
            accuracy = (predicted == batch["policy"].argmax(-1)).float().mean().item()
            if outputs["wdl"] is not None:
                p = outputs["wdl"].softmax(-1)
                z = batch["wdl"][:, 0] - batch["wdl"][:, 2]
                mse = ((p[:, 0] - p[:, 2]) - z).square().mean().item()
            else:
                mse = math.nan
            if self.swa_every > 0 and self.steps % self.swa_every == 0:
                self.update_swa()
        return {
            "loss": total.item(),
            **{name: t.item() for name, t in terms.items()},
            "policy_accuracy": accuracy,
            "value_mse": mse,
            "grad_norm": float(grad_norm),
        }

    def update_swa(self) -> None:
        """`avg = avg * n/(n+1) + w/(n+1)`, n capped at swa_max."""
        weights = [t.detach() for t in self.model.state_dict().values()]
        if self.swa is None:
            self.swa, self.swa_n = [w.clone() for w in weights], 1
            return
        n = float(self.swa_n)
        for avg, w in zip(self.swa, weights, strict=True):
            avg.mul_(n / (n + 1.0)).add_(w / (n + 1.0))
        self.swa_n = min(self.swa_n + 1, self.swa_max)


def synthetic_batch(size: int, varied: bool = False) -> dict[str, Tensor]:
    """The batch `cfzero bench train` trains on: sparse 0/1 inputs, 30 legal moves, one-hot
    policy and result targets, 40 plies left. `varied` (for `step`, and the same in
    tests/reference_outputs.rs) splits the policy target 3:1 over two moves and sets q, st and
    moves left to values that differ between positions."""
    i = torch.arange(size)[:, None]
    j = torch.arange(64 * PLANES)[None, :]
    inputs = ((i * 7 + j * 13) % 11 == 0).float().view(size, 64, PLANES)
    rows = torch.arange(size)
    legal = torch.zeros(size, POLICY_SIZE)
    legal[i, (i * 31 + torch.arange(30)[None, :] * 61) % POLICY_SIZE] = 1.0
    policy = torch.zeros(size, POLICY_SIZE)
    policy[rows, (rows * 31) % POLICY_SIZE] = 1.0
    wdl = torch.zeros(size, 3)
    wdl[rows, rows % 3] = 1.0
    q, st, moves_left = torch.zeros(size), torch.zeros(size), torch.full((size,), 40.0)
    if varied:
        policy[rows, (rows * 31) % POLICY_SIZE] = 0.75
        policy[rows, (rows * 31 + 61) % POLICY_SIZE] = 0.25
        q = ((rows % 5).float() - 2.0) / 2.5
        st = ((rows % 7).float() - 3.0) / 3.5
        moves_left = (rows % 9).float() * 11.0
    return {
        "inputs": inputs,
        "policy": policy,
        "legal": legal,
        "wdl": wdl,
        "q": q,
        "st": st,
        "moves_left": moves_left,
    }


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
    step.add_argument("--weight-decay", type=float, default=0.0, help="NAdam's L2 penalty")
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
