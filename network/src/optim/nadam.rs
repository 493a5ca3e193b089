//! NAdam, with PyTorch's semantics (`torch.optim.NAdam`, `decoupled_weight_decay=True`):
//! Nesterov momentum with the momentum-decay schedule of Dozat (psi = 0.004), and weight decay
//! decoupled from the gradient (as AdamW) and applied to weight matrices only (see [`decays`]).
//!
//! At step t (from 1), for each parameter p with gradient g:
//! ```text
//! mu_t     = beta1 * (1 - 0.5 * 0.96^(t * psi))
//! mu_next  = beta1 * (1 - 0.5 * 0.96^((t + 1) * psi))
//! prod_t   = prod_{i<=t} mu_i
//! p       *= 1 - lr * weight_decay          (decayed parameters only)
//! m        = beta1 * m + (1 - beta1) * g
//! v        = beta2 * v + (1 - beta2) * g^2
//! denom    = sqrt(v / (1 - beta2^t)) + eps
//! p       -= lr * (1 - mu_t) / (1 - prod_t) * g / denom
//! p       -= lr * mu_next / (1 - prod_t * mu_next) * m / denom
//! ```

use std::collections::HashMap;

use tch::{Tensor, nn};

/// Whether weight decay applies to the variable `name` with `dims` dimensions: the weight
/// matrices of dense layers (variables `w`, and the smolgen generator `smolgen_w`, a dense
/// layer's weight too). As usual with AdamW, biases, norm gains and biases, the embedding's
/// gates and the Shaw tables are not decayed: they are few offsets, scales and position terms
/// rather than the weights that overfit, and gains and multiplicative gates are neutral at 1,
/// not 0, so decay would pull them away from their neutral value.
pub fn decays(name: &str, dims: usize) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name);
    dims == 2 && (last == "w" || last == "smolgen_w")
}

/// Hyper-parameters of [`NAdam`] (defaults: docs/METHODS.md §2).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NAdamConfig {
    /// First-moment decay.
    pub beta1: f64,
    /// Second-moment decay.
    pub beta2: f64,
    /// Added to the root of the second moment.
    pub eps: f64,
    /// Momentum decay psi.
    pub momentum_decay: f64,
    /// Decoupled weight decay: each step multiplies every decayed parameter by
    /// `1 - lr * weight_decay`, apart from the gradient's update (0 = none).
    pub weight_decay: f64,
}

impl Default for NAdamConfig {
    fn default() -> Self {
        NAdamConfig {
            beta1: 0.9,
            beta2: 0.98,
            eps: 1e-7,
            momentum_decay: 0.004,
            weight_decay: 0.0,
        }
    }
}

/// The NAdam optimizer over a fixed list of parameters.
#[derive(Debug)]
pub struct NAdam {
    /// Hyper-parameters.
    pub config: NAdamConfig,
    params: Vec<Tensor>,
    /// Whether weight decay applies to each parameter.
    decay: Vec<bool>,
    /// First moments, one per parameter.
    pub m: Vec<Tensor>,
    /// Second moments, one per parameter.
    pub v: Vec<Tensor>,
    /// Steps taken: the learning-rate schedule's position, kept when a run's moments are lost.
    pub step: u64,
    /// Updates since the moments were zero: the `t` of the bias corrections and the momentum
    /// schedule. Equal to `step` unless a run went on from a published net without its
    /// optimizer state, where the moments start again from zero at a late `step` (with `t =
    /// step` the first update would be several times too large).
    pub moment_steps: u64,
    /// Product of the momentum coefficients so far.
    pub mu_product: f64,
}

impl NAdam {
    /// An optimizer for `params`, every one of them decayed, moments at zero. To decay only
    /// a net's weight matrices use [`NAdam::for_var_store`].
    pub fn new(params: Vec<Tensor>, config: NAdamConfig) -> NAdam {
        NAdam::with_decay(params.into_iter().map(|p| (p, true)).collect(), config)
    }

    /// An optimizer for the trainable variables of `vs`, in `vs.trainable_variables()` order
    /// (the order of saved optimizer states), weight decay on those that [`decays`] picks.
    pub fn for_var_store(vs: &nn::VarStore, config: NAdamConfig) -> NAdam {
        // Trainable variables come without names: match them to theirs by storage.
        let names: HashMap<usize, String> = vs
            .variables()
            .into_iter()
            .map(|(name, t)| (t.data_ptr() as usize, name))
            .collect();
        let params = vs
            .trainable_variables()
            .into_iter()
            .map(|p| {
                let decay = names
                    .get(&(p.data_ptr() as usize))
                    .is_some_and(|name| decays(name, p.dim()));
                (p, decay)
            })
            .collect();
        NAdam::with_decay(params, config)
    }

    /// An optimizer for `params`, each with whether weight decay applies to it; moments at zero.
    pub fn with_decay(params: Vec<(Tensor, bool)>, config: NAdamConfig) -> NAdam {
        let (params, decay): (Vec<Tensor>, Vec<bool>) = params.into_iter().unzip();
        let zeros = |ps: &[Tensor]| {
            ps.iter()
                .map(|p| p.zeros_like().detach())
                .collect::<Vec<_>>()
        };
        NAdam {
            config,
            m: zeros(&params),
            v: zeros(&params),
            params,
            decay,
            step: 0,
            moment_steps: 0,
            mu_product: 1.0,
        }
    }

    /// The parameters, in the optimizer's order.
    pub fn params(&self) -> &[Tensor] {
        &self.params
    }

    /// Whether weight decay applies to each parameter, in the optimizer's order.
    pub fn decayed(&self) -> &[bool] {
        &self.decay
    }

    fn mu(&self, t: u64) -> f64 {
        self.config.beta1 * (1.0 - 0.5 * 0.96f64.powf(t as f64 * self.config.momentum_decay))
    }

    /// Sets all gradients to zero.
    pub fn zero_grad(&mut self) {
        for p in &mut self.params {
            p.zero_grad();
        }
    }

    /// One update with learning rate `lr` from the current gradients. Parameters without a
    /// gradient are left untouched (moments and weight decay included), as PyTorch does.
    pub fn step(&mut self, lr: f64) {
        self.step += 1;
        self.moment_steps += 1;
        let t = self.moment_steps;
        let c = self.config;
        let mu = self.mu(t);
        let mu_next = self.mu(t + 1);
        self.mu_product *= mu;
        let bias2 = 1.0 - c.beta2.powf(t as f64);
        let step_g = lr * (1.0 - mu) / (1.0 - self.mu_product);
        let step_m = lr * mu_next / (1.0 - self.mu_product * mu_next);
        let params = self.params.iter_mut().zip(&self.decay);
        tch::no_grad(|| {
            for (((p, &decay), m), v) in params.zip(&mut self.m).zip(&mut self.v) {
                let g = p.grad();
                if !g.defined() {
                    continue;
                }
                // Decoupled: the decay shrinks the weight itself and never enters the moments.
                if decay && c.weight_decay != 0.0 {
                    let _ = p.g_mul_scalar_(1.0 - lr * c.weight_decay);
                }
                let _ = m.g_mul_scalar_(c.beta1).g_add_(&(&g * (1.0 - c.beta1)));
                let _ = v
                    .g_mul_scalar_(c.beta2)
                    .g_add_(&(g.square() * (1.0 - c.beta2)));
                let denom = (&*v / bias2).sqrt() + c.eps;
                let update = (&g * step_g + &*m * step_m) / denom;
                let _ = p.g_sub_(&update);
            }
        });
    }
}

/// Scales all gradients so that their global L2 norm is at most `max_norm`; returns the norm
/// before clipping.
pub fn clip_grad_norm(params: &[Tensor], max_norm: f64) -> f64 {
    tch::no_grad(|| {
        let grads: Vec<Tensor> = params
            .iter()
            .map(|p| p.grad())
            .filter(|g| g.defined())
            .collect();
        if grads.is_empty() {
            return 0.0;
        }
        let sq: Vec<Tensor> = grads
            .iter()
            .map(|g| g.square().sum(tch::Kind::Double))
            .collect();
        let norm = Tensor::stack(&sq, 0)
            .sum(tch::Kind::Double)
            .sqrt()
            .double_value(&[]);
        if norm > max_norm {
            let scale = max_norm / (norm + 1e-6);
            for mut g in grads {
                let _ = g.g_mul_scalar_(scale);
            }
        }
        norm
    })
}
