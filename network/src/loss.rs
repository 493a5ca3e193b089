//! Training targets and the weighted loss over all heads (docs/METHODS.md §2, §6).

use tch::{Kind, Reduction, Tensor};

use crate::config::LossWeights;
use crate::mask::{ILLEGAL_LOGIT, mask_logits};
use crate::model::{ModelOutputs, VALUE_BUCKETS, ValueOutputs};

/// Temperature of the soft policy target.
pub const SOFT_POLICY_TEMPERATURE: f64 = 4.0;
/// Huber delta of the moves-left loss.
pub const MOVES_LEFT_HUBER_DELTA: f64 = 0.5;
/// Plies per unit of the moves-left head.
pub const MOVES_LEFT_SCALE: f64 = 20.0;

/// Targets of one training batch of `B` positions (all float32 except `legal`).
#[derive(Debug)]
pub struct TrainingBatch {
    /// Inputs `[B, 64, 112]`.
    pub inputs: Tensor,
    /// Search policy `[B, 1858]`: probabilities, zero on illegal moves.
    pub policy: Tensor,
    /// Legal mask `[B, 1858]` (bool, or float 0/1).
    pub legal: Tensor,
    /// Game result `[B, 3]` (win, draw, loss for the side to move).
    pub wdl: Tensor,
    /// Root search value `[B]` in [-1, 1].
    pub q: Tensor,
    /// Short-term value `[B]` in [-1, 1].
    pub st: Tensor,
    /// Plies left in the game `[B]`; NaN where it is not known (a position labelled on its
    /// own), which trains the moves-left head nothing.
    pub moves_left: Tensor,
}

impl TrainingBatch {
    /// The batch moved to `device`.
    pub fn to_device(&self, device: tch::Device) -> TrainingBatch {
        TrainingBatch {
            inputs: self.inputs.to_device(device),
            policy: self.policy.to_device(device),
            legal: self.legal.to_device(device),
            wdl: self.wdl.to_device(device),
            q: self.q.to_device(device),
            st: self.st.to_device(device),
            moves_left: self.moves_left.to_device(device),
        }
    }
}

/// One term of the training loss. The list of terms lives here once: their names (config keys,
/// log and TensorBoard tags) and every list of them are derived from [`LossTerm::ALL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LossTerm {
    /// Cross-entropy of the policy against the search policy.
    Policy,
    /// Cross-entropy of the soft policy against the search policy at temperature 4.
    SoftPolicy,
    /// Cross-entropy of the winner head against the game result.
    Winner,
    /// Squared error of the `q` head's scalar.
    Q,
    /// Squared error of the `q` head's error estimate.
    QError,
    /// Cross-entropy of the `q` head's categorical buckets.
    QCategorical,
    /// Squared error of the `st` head's scalar.
    St,
    /// Squared error of the `st` head's error estimate.
    StError,
    /// Cross-entropy of the `st` head's categorical buckets.
    StCategorical,
    /// Huber loss of the moves-left head.
    MovesLeft,
}

impl LossTerm {
    /// Every term, in the order logs list them.
    pub const ALL: [LossTerm; 10] = [
        LossTerm::Policy,
        LossTerm::SoftPolicy,
        LossTerm::Winner,
        LossTerm::Q,
        LossTerm::QError,
        LossTerm::QCategorical,
        LossTerm::St,
        LossTerm::StError,
        LossTerm::StCategorical,
        LossTerm::MovesLeft,
    ];

    /// The term's name: its key in `[train.loss]` and its tag under `loss/`.
    pub fn name(self) -> &'static str {
        match self {
            LossTerm::Policy => "policy",
            LossTerm::SoftPolicy => "soft_policy",
            LossTerm::Winner => "winner",
            LossTerm::Q => "q",
            LossTerm::QError => "q_error",
            LossTerm::QCategorical => "q_categorical",
            LossTerm::St => "st",
            LossTerm::StError => "st_error",
            LossTerm::StCategorical => "st_categorical",
            LossTerm::MovesLeft => "moves_left",
        }
    }
}

/// The loss of a batch: the weighted total (for backward) and each unweighted term (for logging).
/// Terms of heads that are off are 0.
#[derive(Debug)]
pub struct LossTerms {
    /// Weighted sum, a scalar tensor with gradients.
    pub total: Tensor,
    /// `total` as a number.
    pub total_value: f64,
    /// Each term's unweighted value, in [`LossTerm::ALL`]'s order.
    values: [f64; LossTerm::ALL.len()],
}

impl LossTerms {
    /// The unweighted value of `term`.
    pub fn get(&self, term: LossTerm) -> f64 {
        self.values[term as usize]
    }

    fn set(&mut self, term: LossTerm, value: &Tensor) {
        self.values[term as usize] = value.double_value(&[]);
    }

    /// `(name, unweighted value)` of every term, for logging.
    pub fn named(&self) -> [(&'static str, f64); LossTerm::ALL.len()] {
        LossTerm::ALL.map(|t| (t.name(), self.get(t)))
    }
}

/// `-sum target * log_softmax(logits)` of each row, `[B]`.
fn row_cross_entropy(logits: &Tensor, target: &Tensor) -> Tensor {
    -(target * logits.log_softmax(-1, Kind::Float)).sum_dim_intlist(-1, false, Kind::Float)
}

/// Mean over the batch of [`row_cross_entropy`].
fn cross_entropy(logits: &Tensor, target: &Tensor) -> Tensor {
    row_cross_entropy(logits, target).mean(Kind::Float)
}

/// [`row_cross_entropy`] averaged over the rows that carry a target: a row of zeros (a position trained for its value alone) counts for nothing, and
/// with every row a target this is the plain mean.
fn policy_cross_entropy(logits: &Tensor, target: &Tensor) -> Tensor {
    let per_row = row_cross_entropy(logits, target);
    let rows = target
        .sum_dim_intlist(-1, false, Kind::Float)
        .gt(0.0)
        .to_kind(Kind::Float)
        .sum(Kind::Float);
    per_row.sum(Kind::Float) / rows.clamp_min(1.0)
}

/// Soft policy target: `p^(1/T)` renormalised over each row (zero rows stay zero).
pub fn soft_target(policy: &Tensor) -> Tensor {
    let t = policy
        .clamp_min(0.0)
        .pow_tensor_scalar(1.0 / SOFT_POLICY_TEMPERATURE);
    let sum = t.sum_dim_intlist(-1, true, Kind::Float).clamp_min(1e-12);
    t / sum
}

/// Two-hot encoding `[B, 32]` of values in [-1, 1] over bucket centres `-1 + 2k/31`.
pub fn two_hot(values: &Tensor) -> Tensor {
    let n = VALUE_BUCKETS as f64 - 1.0;
    let pos = (values.clamp(-1.0, 1.0) + 1.0) * (n / 2.0); // in [0, 31]
    let lo = pos.floor().clamp(0.0, n - 1.0);
    let frac = (&pos - &lo).unsqueeze(-1);
    let lo_idx = lo.to_kind(Kind::Int64).unsqueeze(-1);
    let z = Tensor::zeros(
        [values.size()[0], VALUE_BUCKETS as i64],
        (Kind::Float, values.device()),
    );
    z.scatter_add(-1, &lo_idx, &(1.0 - &frac))
        .scatter_add(-1, &(lo_idx + 1), &frac)
}

/// HL-Gauss targets `[B, 32]` (Imani and White 2018; ChessBench): the mass a normal
/// distribution centred on each value, with standard deviation `sigma` bucket widths, puts
/// on each bucket of width `2/31` around the centres `-1 + 2k/31`, renormalised to the
/// buckets' span. ChessBench uses 0.75 widths (of 128 buckets over [0, 1]).
pub fn hl_gauss(values: &Tensor, sigma: f64) -> Tensor {
    let n = VALUE_BUCKETS as f64 - 1.0;
    let width = 2.0 / n;
    let edges = Tensor::arange(VALUE_BUCKETS as i64 + 1, (Kind::Float, values.device())) * width
        - (1.0 + width / 2.0);
    let z = (edges.unsqueeze(0) - values.clamp(-1.0, 1.0).unsqueeze(-1))
        / (sigma * width * std::f64::consts::SQRT_2);
    let cdf = (z.erf() + 1.0) * 0.5;
    let last = VALUE_BUCKETS as i64;
    let mass = cdf.narrow(-1, 1, last) - cdf.narrow(-1, 0, last);
    let span = (cdf.narrow(-1, last, 1) - cdf.narrow(-1, 0, 1)).clamp_min(1e-12);
    mass / span
}

/// The categorical target of `values`: two-hot, or HL-Gauss when `hl_gauss_sigma` > 0.
pub fn categorical_target(values: &Tensor, hl_gauss_sigma: f64) -> Tensor {
    if hl_gauss_sigma > 0.0 {
        hl_gauss(values, hl_gauss_sigma)
    } else {
        two_hot(values)
    }
}

/// (squared error, error-estimate loss, categorical cross-entropy) of a `q`/`st` head.
fn value_terms(
    out: &ValueOutputs,
    target: &Tensor,
    hl_gauss_sigma: f64,
) -> (Tensor, Tensor, Tensor) {
    let se = (&out.value - target).square().mean(Kind::Float);
    let err_target = (target - out.value.detach()).square().detach();
    let err = (err_target - &out.error).square().mean(Kind::Float);
    let cat = cross_entropy(
        &out.categorical,
        &categorical_target(target, hl_gauss_sigma),
    );
    (se, err, cat)
}

/// The weighted loss of `outputs` against `batch` (which must be on the outputs' device).
pub fn loss(outputs: &ModelOutputs, batch: &TrainingBatch, weights: &LossWeights) -> LossTerms {
    let device = outputs.policy.device();
    let mut terms = LossTerms {
        total: Tensor::zeros([], (Kind::Float, device)),
        total_value: 0.0,
        values: [0.0; LossTerm::ALL.len()],
    };
    let mut total = Tensor::zeros([], (Kind::Float, device));
    let mut add = |term: LossTerm, l: Tensor| {
        terms.set(term, &l);
        total += l * weights.weight(term);
    };
    add(
        LossTerm::Policy,
        policy_cross_entropy(
            &mask_logits(&outputs.policy, &batch.legal, ILLEGAL_LOGIT),
            &batch.policy,
        ),
    );
    if let Some(soft) = &outputs.soft_policy {
        let l = policy_cross_entropy(
            &mask_logits(soft, &batch.legal, ILLEGAL_LOGIT),
            &soft_target(&batch.policy),
        );
        add(LossTerm::SoftPolicy, l);
    }
    if let Some(wdl) = &outputs.wdl {
        add(LossTerm::Winner, cross_entropy(wdl, &batch.wdl));
    }
    if let Some(q) = &outputs.q {
        let (se, err, cat) = value_terms(q, &batch.q, weights.hl_gauss_sigma);
        add(LossTerm::Q, se);
        add(LossTerm::QError, err);
        add(LossTerm::QCategorical, cat);
    }
    if let Some(st) = &outputs.st {
        let (se, err, cat) = value_terms(st, &batch.st, weights.hl_gauss_sigma);
        add(LossTerm::St, se);
        add(LossTerm::StError, err);
        add(LossTerm::StCategorical, cat);
    }
    if let Some(ml) = &outputs.moves_left {
        // Positions whose plies left are unknown (NaN) count for nothing; with every one
        // known this is the plain mean.
        let known = batch.moves_left.isnan().logical_not().to_kind(Kind::Float);
        let target = batch.moves_left.nan_to_num(0.0, None, None) / MOVES_LEFT_SCALE;
        let per = ml.huber_loss(&target, Reduction::None, MOVES_LEFT_HUBER_DELTA);
        let l = (per * &known).sum(Kind::Float) / known.sum(Kind::Float).clamp_min(1.0);
        add(LossTerm::MovesLeft, l);
    }
    terms.total_value = total.double_value(&[]);
    terms.total = total;
    terms
}
