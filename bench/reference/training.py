"""cfzero's loss (network/src/loss.rs) and training step (trainer/src/learner.rs) in PyTorch:
the loss of every head, backward, gradient clipping, NAdam, the learning-rate schedule and the
stochastic weight average, plus the synthetic batch that `cfzero bench train` trains on."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from model import PLANES, POLICY_SIZE, VALUE_BUCKETS, Chessformer

# --------------------------------------------------------------------------------------------
# Constants of the loss (network/src/loss.rs).

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


def decays(name: str, param: Tensor) -> bool:
    """Whether weight decay applies to parameter `name`: the dense layers' weight matrices
    (`w`, and the smolgen generator `smolgen_w`); not biases, norms, gates or Shaw tables
    (network/src/optim/nadam.rs, `decays`)."""
    return param.dim() == 2 and name.rsplit(".", 1)[-1] in ("w", "smolgen_w")


class Learner:
    """cfzero's training step: forward, weighted loss, backward, global gradient-norm clip,
    NAdam (PyTorch's, the semantics cfzero's own NAdam copies: betas 0.9/0.98, eps 1e-7,
    momentum decay 0.004, decoupled weight decay on the weight matrices only), the step's policy
    accuracy and value MSE, and a stochastic weight average of the weights every `swa_every`
    steps."""

    def __init__(self, model: Chessformer, train: dict):
        self.model = model
        self.params = list(model.parameters())
        self.grad_clip = train.get("grad_clip", 10.0)
        lr = train.get("lr", DEFAULT_TRAIN["lr"])
        self.peak, self.warmup = lr["peak"], lr.get("warmup_steps", 0)
        self.decay_steps, self.decay_factor = lr.get("decay_steps", []), lr.get("decay_factor", 0.1)
        self.weights = {**DEFAULT_LOSS_WEIGHTS, **train.get("loss", {})}
        named = list(model.named_parameters())
        self.opt = torch.optim.NAdam(
            [
                {
                    "params": [p for n, p in named if decays(n, p)],
                    "weight_decay": train.get("weight_decay", 0.0),
                },
                {"params": [p for n, p in named if not decays(n, p)], "weight_decay": 0.0},
            ],
            lr=self.peak,
            betas=(0.9, 0.98),
            eps=1e-7,
            momentum_decay=0.004,
            decoupled_weight_decay=True,
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

