//! NAdam, with PyTorch's semantics (`torch.optim.NAdam`, `decoupled_weight_decay=False`):
//! Nesterov momentum with the momentum-decay schedule of Dozat (psi = 0.004).
//!
//! At step t (from 1), for each parameter with gradient g:
//! ```text
//! mu_t     = beta1 * (1 - 0.5 * 0.96^(t * psi))
//! mu_next  = beta1 * (1 - 0.5 * 0.96^((t + 1) * psi))
//! prod_t   = prod_{i<=t} mu_i
//! g        = g + weight_decay * p
//! m        = beta1 * m + (1 - beta1) * g
//! v        = beta2 * v + (1 - beta2) * g^2
//! denom    = sqrt(v / (1 - beta2^t)) + eps
//! p       -= lr * (1 - mu_t) / (1 - prod_t) * g / denom
//! p       -= lr * mu_next / (1 - prod_t * mu_next) * m / denom
//! ```

use tch::Tensor;

/// Hyper-parameters of [`NAdam`] (defaults of DESIGN §3).
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
    /// L2 penalty added to the gradient.
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
    /// First moments, one per parameter.
    pub m: Vec<Tensor>,
    /// Second moments, one per parameter.
    pub v: Vec<Tensor>,
    /// Steps taken.
    pub step: u64,
    /// Product of the momentum coefficients so far.
    pub mu_product: f64,
}

impl NAdam {
    /// An optimizer for `params` (e.g. `vs.trainable_variables()`), moments at zero.
    pub fn new(params: Vec<Tensor>, config: NAdamConfig) -> NAdam {
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
            step: 0,
            mu_product: 1.0,
        }
    }

    /// The parameters, in the optimizer's order.
    pub fn params(&self) -> &[Tensor] {
        &self.params
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
    /// gradient are left untouched (moments included), as PyTorch does.
    pub fn step(&mut self, lr: f64) {
        self.step += 1;
        let t = self.step;
        let c = self.config;
        let mu = self.mu(t);
        let mu_next = self.mu(t + 1);
        self.mu_product *= mu;
        let bias2 = 1.0 - c.beta2.powf(t as f64);
        let step_g = lr * (1.0 - mu) / (1.0 - self.mu_product);
        let step_m = lr * mu_next / (1.0 - self.mu_product * mu_next);
        tch::no_grad(|| {
            for ((p, m), v) in self.params.iter_mut().zip(&mut self.m).zip(&mut self.v) {
                let g = p.grad();
                if !g.defined() {
                    continue;
                }
                let g = if c.weight_decay != 0.0 {
                    &g + &*p * c.weight_decay
                } else {
                    g
                };
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
