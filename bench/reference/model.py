"""cfzero's Chessformer in PyTorch: constants, index tables, layers, attention, heads, the
whole net and its loading from a native export or a cfzero net.

The layers follow cfzero's Rust model (network/src/model/) one to one, including two details
that only matter for speed or rounding: Shaw attention has two equal forms (one for batches of up
to 4 positions, one for larger batches), and dense layers pad matrices of fewer than 8 rows
with zero rows. Both are kept so that the timings compare the same arithmetic.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from errors import UserError
from safetensors_io import read_safetensors

# --------------------------------------------------------------------------------------------
# Constants of the model (network/src/encoding, network/src/model).

PLANES = 112  # input features per square token
POLICY_SIZE = 1858  # entries of the policy vector
ATTENTION_POLICY_SIZE = 64 * 64 + 8 * 8 * 3  # from-to logits, then promotion logits
VALUE_BUCKETS = 32  # categorical value buckets over [-1, 1]
SHAW_BUCKETS = 225  # (delta rank, delta file) in -7..=7 each
BUCKET_FORM_MAX_BATCH = 4  # largest batch whose Shaw attention uses the bucket form
MIN_ROWS = 8  # dense layers pad matrices of fewer rows (batch-invariant rounding)
NORM_EPS = 1e-6  # encoder norms
SMOLGEN_EPS = 1e-3  # smolgen's LayerNorms


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
    """Shaw attention against the ungathered tables (`[H, 225, d_head]` each, the bias
    `[H, 225]`): products with all 225 buckets, then the bucket of each (query, key) pair picked
    out. For small batches.

    Logits: `(q_i . k_j + q_i . rq_b + k_j . rk_b + bias_b) / sqrt(d_head)` with b = bucket(i, j);
    the bias is the position-only term of Shaw et al.'s `(q_i + a^Q)(k_j + a^K)^T`, learned per
    head and bucket, scaled like the other terms (network/src/model/shaw.rs, `ShawTables`)."""
    b, h, n, dh = q.shape
    tq, tk, tv, tb = tables
    idx = index.view(1, 1, n, n).expand(b, h, n, n)
    qr = (q @ tq.transpose(-2, -1)).gather(3, idx)  # q_i . rq[bucket(i, j)]
    kr = (tk @ k.transpose(-2, -1)).gather(2, idx)  # k_j . rk[bucket(i, j)]
    rb = tb.index_select(1, index).view(h, n, n)  # bias[bucket(i, j)], broadcast over the batch
    logits = (q @ k.transpose(-2, -1) + qr + kr + rb) * (1.0 / math.sqrt(dh))
    a = logits.softmax(-1)
    # For a fixed query, j -> bucket(i, j) is one-to-one: spread the weights over the buckets.
    spread = a.new_zeros(b, h, n, SHAW_BUCKETS).scatter(3, idx, a)
    return a @ v + spread @ tv


def attend_shaw_gathered(q, k, v, gathered) -> Tensor:
    """Shaw attention over tables gathered to `[H, 64, 64, d_head]` (query, key), the bias to
    `[H, 64, 64]`: each Shaw term is one batched product over the (head, square) pairs with the
    batch as the rows."""
    b, h, n, dh = q.shape
    rq, rk, rv, rb = gathered

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
    logits = (q @ k.transpose(-2, -1) + qr + kr + rb) * (1.0 / math.sqrt(dh))
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
            self.rpe_bias = nn.Parameter(torch.zeros(self.heads, SHAW_BUCKETS))
        elif self.position == "smolgen":
            self.smolgen = Smolgen(cfg, d, self.heads)

    def split(self, x: Tensor) -> Tensor:
        b, n, d = x.shape
        return x.view(b, n, self.heads, d // self.heads).permute(0, 2, 1, 3)

    def forward(self, x: Tensor, bucket_index: Tensor, smolgen_w: Tensor | None) -> Tensor:
        b, n, d = x.shape
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        if self.position == "shaw":
            tables = (self.rpe_q, self.rpe_k, self.rpe_v, self.rpe_bias)
            if b <= BUCKET_FORM_MAX_BATCH:
                z = attend_shaw_buckets(q, k, v, tables, bucket_index)
            else:
                h = self.heads
                gathered = tuple(
                    t.index_select(1, bucket_index).view(h, 64, 64, *t.shape[2:]) for t in tables
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
        value and output projections and the FFN), zero biases and Shaw tables (the logit
        bias included), unit gains."""
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


def may_be_missing(name: str) -> bool:
    """Whether a net file may lack tensor `name`: the Shaw logit bias `encoder.<i>.attn.rpe_bias`,
    added after nets were first saved."""
    parts = name.split(".")
    return (
        len(parts) == 4
        and parts[0] == "encoder"
        and parts[1].isdigit()
        and parts[2:] == ["attn", "rpe_bias"]
    )


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
    # Nets saved before the Shaw logit bias existed lack it: it loads as zero, its initial
    # value (network/src/checkpoint.rs, `may_be_missing`).
    for name in set(expected) - set(tensors):
        if may_be_missing(name):
            tensors[name] = torch.zeros_like(expected[name])
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
