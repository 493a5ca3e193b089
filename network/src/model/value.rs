//! Value heads (winner, q, st) and the moves-left head.

use tch::{Tensor, nn};

use super::layers::Dense;

/// Number of categorical value buckets over [-1, 1].
pub const VALUE_BUCKETS: usize = 32;

/// Shared shape of every value-like head: Dense(d -> c) per token, Mish, flatten
/// (square-major, index c*square + channel), Dense(-> hidden), Mish.
#[derive(Debug)]
pub struct Trunk {
    /// Per-token dense `[c, d]`.
    pub embed: Dense,
    /// `[hidden, 64 c]`.
    pub fc1: Dense,
}

impl Trunk {
    /// Variables under `path`: `embed`, `fc1`.
    pub fn new(path: &nn::Path, d_model: usize, channels: usize, hidden: usize) -> Trunk {
        Trunk {
            embed: Dense::new(path / "embed", d_model, channels, true, 1.0),
            fc1: Dense::new(path / "fc1", 64 * channels, hidden, true, 1.0),
        }
    }

    /// `[B, hidden]` features of tokens `[B, 64, d]`.
    pub fn forward(&self, x: &Tensor) -> Tensor {
        let b = x.size()[0];
        self.fc1
            .forward(&self.embed.forward(x).mish().reshape([b, -1]))
            .mish()
    }
}

/// The winner head: W/D/L logits of the game result.
#[derive(Debug)]
pub struct WinnerHead {
    /// Trunk.
    pub trunk: Trunk,
    /// `[3, hidden]`.
    pub out: Dense,
}

impl WinnerHead {
    /// Variables under `path`: `embed`, `fc1`, `out`.
    pub fn new(path: &nn::Path, d_model: usize, channels: usize, hidden: usize) -> WinnerHead {
        WinnerHead {
            trunk: Trunk::new(path, d_model, channels, hidden),
            out: Dense::new(path / "out", hidden, 3, true, 1.0),
        }
    }

    /// Logits `[B, 3]`.
    pub fn forward(&self, x: &Tensor) -> Tensor {
        self.out.forward(&self.trunk.forward(x))
    }
}

/// Outputs of a `q` or `st` head.
#[derive(Debug)]
pub struct ValueOutputs {
    /// The tanh scalar `[B]`.
    pub value: Tensor,
    /// The sigmoid error estimate `[B]` (predicts the squared error of `value`).
    pub error: Tensor,
    /// Logits of the 32 buckets over [-1, 1] `[B, 32]`.
    pub categorical: Tensor,
}

/// A `q` or `st` head: tanh scalar, sigmoid error estimate and categorical buckets.
#[derive(Debug)]
pub struct ScalarValueHead {
    /// Trunk.
    pub trunk: Trunk,
    /// `[1, hidden]`, tanh after it.
    pub value: Dense,
    /// `[1, hidden]`, sigmoid after it.
    pub error: Dense,
    /// `[32, hidden]`.
    pub categorical: Dense,
}

impl ScalarValueHead {
    /// Variables under `path`: `embed`, `fc1`, `value`, `error`, `categorical`.
    pub fn new(path: &nn::Path, d_model: usize, channels: usize, hidden: usize) -> ScalarValueHead {
        ScalarValueHead {
            trunk: Trunk::new(path, d_model, channels, hidden),
            value: Dense::new(path / "value", hidden, 1, true, 1.0),
            error: Dense::new(path / "error", hidden, 1, true, 1.0),
            categorical: Dense::new(path / "categorical", hidden, VALUE_BUCKETS, true, 1.0),
        }
    }

    /// The head's outputs for tokens `[B, 64, d]`.
    pub fn forward(&self, x: &Tensor) -> ValueOutputs {
        let h = self.trunk.forward(x);
        ValueOutputs {
            value: self.value.forward(&h).squeeze_dim(1).tanh(),
            error: self.error.forward(&h).squeeze_dim(1).sigmoid(),
            categorical: self.categorical.forward(&h),
        }
    }
}

/// Initial output of the moves-left head, in units of 20 plies.
const INITIAL_MOVES_LEFT: f64 = 2.0;

/// Gain of the moves-left output layer's initial weights, small so that the bias dominates.
const MOVES_LEFT_OUT_GAIN: f64 = 0.1;

/// The moves-left head: ReLU scalar in units of 20 plies (trained on plies_left / 20).
#[derive(Debug)]
pub struct MovesLeftHead {
    /// Trunk.
    pub trunk: Trunk,
    /// `[1, hidden]`, ReLU after it.
    pub out: Dense,
}

impl MovesLeftHead {
    /// Variables under `path`: `embed`, `fc1`, `out`.
    pub fn new(path: &nn::Path, d_model: usize, channels: usize, hidden: usize) -> MovesLeftHead {
        // The output passes a ReLU: starting every position near a typical target (40 plies)
        // keeps it out of the flat side, where it gets no gradient. With full-size weights the
        // trunk's output pushed some positions of a fresh micro net to zero, so the weights
        // start small and the bias dominates.
        let mut out = Dense::new(path / "out", hidden, 1, true, MOVES_LEFT_OUT_GAIN);
        if let Some(b) = out.b.as_mut() {
            tch::no_grad(|| {
                let _ = b.fill_(INITIAL_MOVES_LEFT);
            });
        }
        MovesLeftHead {
            trunk: Trunk::new(path, d_model, channels, hidden),
            out,
        }
    }

    /// Moves left `[B]` in units of 20 plies.
    pub fn forward(&self, x: &Tensor) -> Tensor {
        self.out
            .forward(&self.trunk.forward(x))
            .squeeze_dim(1)
            .relu()
    }
}
