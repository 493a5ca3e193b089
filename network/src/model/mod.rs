//! The Chessformer model (docs/METHODS.md §2): embedding with gates, post-LN encoder layers,
//! attention policy heads and value heads.

pub mod attention;
pub mod encoder;
pub mod layers;
pub mod policy;
pub mod shaw;
pub mod smolgen;
pub mod value;

use tch::{Device, Kind, Tensor, nn};

use crate::config::{ConfigError, NetworkConfig, PositionEncoding};
use crate::encoding::{PLANES, attention_gather};
use attention::AttentionContext;
use encoder::EncoderLayer;
use layers::Dense;
use policy::PolicyHead;
use value::{MovesLeftHead, ScalarValueHead, WinnerHead};
pub use value::{VALUE_BUCKETS, ValueOutputs};

/// Everything the network predicts for a batch of `B` positions. Optional heads are `None`
/// when the config turns them off.
#[derive(Debug)]
pub struct ModelOutputs {
    /// Policy logits `[B, 1858]` (unmasked).
    pub policy: Tensor,
    /// Soft-policy logits `[B, 1858]` (unmasked).
    pub soft_policy: Option<Tensor>,
    /// Winner W/D/L logits `[B, 3]`.
    pub wdl: Option<Tensor>,
    /// The `q` head.
    pub q: Option<ValueOutputs>,
    /// The `st` head.
    pub st: Option<ValueOutputs>,
    /// Moves left `[B]` in units of 20 plies (multiply by 20 for plies).
    pub moves_left: Option<Tensor>,
}

impl ModelOutputs {
    /// What a search reads as the value: WDL probabilities `[B, 3]` and the value W - L `[B]`,
    /// both f32 whatever the net's kind. From the winner head; a net without one uses its `q`
    /// head's scalar `q`, with WDL `((1+q)/2, 0, (1-q)/2)`. `None` if the net has neither.
    pub fn play_values(&self) -> Option<(Tensor, Tensor)> {
        let wdl = match (&self.wdl, &self.q) {
            (Some(logits), _) => logits.softmax(-1, Kind::Float),
            (None, Some(q)) => {
                let v = q.value.to_kind(Kind::Float).unsqueeze(1);
                Tensor::cat(&[(1.0 + &v) / 2.0, v.zeros_like(), (1.0 - &v) / 2.0], 1)
            }
            (None, None) => return None,
        };
        let values = wdl.select(1, 0) - wdl.select(1, 2);
        Some((wdl, values))
    }
}

/// Embedding: `mish(x W^T + b) * gate_mul + gate_add`, gates `[64, d]`.
#[derive(Debug)]
pub struct Embedding {
    /// `[d, 112]` with bias.
    pub dense: Dense,
    /// Multiplicative gate `[64, d]`, init 1.
    pub gate_mul: Tensor,
    /// Additive gate `[64, d]`, init 0.
    pub gate_add: Tensor,
}

/// The Chessformer's layers (tensors shared with a [`nn::VarStore`]).
#[derive(Debug)]
pub struct Chessformer {
    /// Input embedding.
    pub embed: Embedding,
    /// Encoder layers.
    pub layers: Vec<EncoderLayer>,
    /// Global smolgen generator `[4096, gen]` (smolgen nets only).
    pub smolgen_w: Option<Tensor>,
    /// Policy head.
    pub policy: PolicyHead,
    /// Soft policy head.
    pub soft_policy: Option<PolicyHead>,
    /// Winner head.
    pub winner: Option<WinnerHead>,
    /// `q` head.
    pub q: Option<ScalarValueHead>,
    /// `st` head.
    pub st: Option<ScalarValueHead>,
    /// Moves-left head.
    pub moves_left: Option<MovesLeftHead>,
    /// The form of Shaw attention ([`shaw::ShawForm::BySize`] unless set).
    pub shaw_form: shaw::ShawForm,
    gather: Tensor,
    bucket_index: Tensor,
}

impl Chessformer {
    /// Creates the variables of `cfg` under `root` (names listed in each layer's `new`).
    pub fn new(root: &nn::Path, cfg: &NetworkConfig) -> Result<Chessformer, ConfigError> {
        cfg.validate()?;
        let d = cfg.d_model;
        let device = root.device();
        let embed = Embedding {
            dense: Dense::new(root / "embed", PLANES, d, true, 1.0),
            gate_mul: (root / "embed").var("gate_mul", &[64, d as i64], nn::Init::Const(1.0)),
            gate_add: (root / "embed").var("gate_add", &[64, d as i64], nn::Init::Const(0.0)),
        };
        let layers = (0..cfg.layers)
            .map(|i| EncoderLayer::new(&(root / "encoder" / i), cfg))
            .collect();
        let smolgen_w = (cfg.attention.position == PositionEncoding::Smolgen).then(|| {
            let gen_size = cfg.attention.smolgen_gen;
            let std = (2.0 / (gen_size + 4096) as f64).sqrt();
            root.var(
                "smolgen_w",
                &[4096, gen_size as i64],
                nn::Init::Randn {
                    mean: 0.0,
                    stdev: std,
                },
            )
        });
        let (vc, vh) = (cfg.value_channels, cfg.value_hidden);
        let h = &cfg.outputs;
        let gather: Vec<i64> = attention_gather().iter().map(|&i| i as i64).collect();
        Ok(Chessformer {
            embed,
            layers,
            smolgen_w,
            policy: PolicyHead::new(&(root / "policy"), d, cfg.d_pol),
            soft_policy: h
                .soft_policy
                .then(|| PolicyHead::new(&(root / "soft_policy"), d, cfg.d_pol)),
            winner: h
                .winner
                .then(|| WinnerHead::new(&(root / "value_winner"), d, vc, vh)),
            q: h.q
                .then(|| ScalarValueHead::new(&(root / "value_q"), d, vc, vh)),
            st: h
                .st
                .then(|| ScalarValueHead::new(&(root / "value_st"), d, vc, vh)),
            moves_left: h.moves_left.then(|| {
                MovesLeftHead::new(
                    &(root / "moves_left"),
                    d,
                    cfg.moves_left_channels,
                    cfg.moves_left_hidden,
                )
            }),
            shaw_form: shaw::ShawForm::BySize,
            gather: Tensor::from_slice(&gather).to_device(device),
            bucket_index: shaw::bucket_index(device),
        })
    }

    /// Keeps every attention layer's weights in the form its forward pass uses (see
    /// [`attention::Attention::prepare`]), for the Shaw form `form`. For inference only: the
    /// kept weights must be prepared again after every change of the variables.
    pub fn prepare_inference(&mut self, form: shaw::ShawForm) {
        self.shaw_form = form;
        for layer in &mut self.layers {
            layer.attn.prepare(&self.bucket_index, form);
        }
    }

    /// The context every attention layer of a forward pass shares.
    fn context(&self) -> AttentionContext<'_> {
        AttentionContext {
            bucket_index: &self.bucket_index,
            smolgen_w: self.smolgen_w.as_ref(),
            shaw_form: self.shaw_form,
        }
    }

    /// The embedded tokens `[B, 64, d]` of inputs `[B, 64, 112]`, before the encoder.
    fn embed_tokens(&self, inputs: &Tensor) -> Tensor {
        let e = &self.embed;
        e.dense.forward(inputs).mish() * &e.gate_mul + &e.gate_add
    }

    /// The tokens after the encoder, `[B, 64, d]`, for inputs `[B, 64, 112]`.
    pub fn body(&self, inputs: &Tensor) -> Tensor {
        let ctx = self.context();
        let mut x = self.embed_tokens(inputs);
        for layer in &self.layers {
            x = layer.forward(&x, &ctx);
        }
        x
    }

    /// The attention probabilities `[B, H, 64, 64]` of encoder layer `layer` (0-based) for
    /// inputs `[B, 64, 112]`; `None` if the net has fewer layers.
    pub fn attention_map(&self, inputs: &Tensor, layer: usize) -> Option<Tensor> {
        let target = self.layers.get(layer)?;
        let ctx = self.context();
        let mut x = self.embed_tokens(inputs);
        for l in &self.layers[..layer] {
            x = l.forward(&x, &ctx);
        }
        Some(target.attn.probabilities(&x, &ctx))
    }

    /// The outputs a search needs, for inputs `[B, 64, 112]`: the policy and the winner
    /// head (the `q` head for a net without one). The soft policy, `st`, moves-left and
    /// (with a winner head) `q` heads are not computed: self-play, matches and UCI never
    /// read them (in tiny they are 9% of an evaluation's FLOPs).
    pub fn forward_play(&self, inputs: &Tensor) -> ModelOutputs {
        let x = self.body(inputs);
        let wdl = self.winner.as_ref().map(|w| w.forward(&x));
        ModelOutputs {
            policy: self.policy.forward(&x, &self.gather),
            soft_policy: None,
            q: match wdl {
                Some(_) => None,
                None => self.q.as_ref().map(|h| h.forward(&x)),
            },
            wdl,
            st: None,
            moves_left: None,
        }
    }

    /// Runs the whole network on inputs `[B, 64, 112]` (token-major planes).
    pub fn forward(&self, inputs: &Tensor) -> ModelOutputs {
        let x = self.body(inputs);
        ModelOutputs {
            policy: self.policy.forward(&x, &self.gather),
            soft_policy: self
                .soft_policy
                .as_ref()
                .map(|p| p.forward(&x, &self.gather)),
            wdl: self.winner.as_ref().map(|w| w.forward(&x)),
            q: self.q.as_ref().map(|h| h.forward(&x)),
            st: self.st.as_ref().map(|h| h.forward(&x)),
            moves_left: self.moves_left.as_ref().map(|m| m.forward(&x)),
        }
    }
}

/// A network: its config, its variables and its layers.
#[derive(Debug)]
pub struct Net {
    /// The shape of the net.
    pub config: NetworkConfig,
    /// The variables (names as in [`Chessformer::new`]).
    pub vs: nn::VarStore,
    /// The layers.
    pub model: Chessformer,
}

impl Net {
    /// A freshly initialised net on `device` (float32).
    pub fn new(config: &NetworkConfig, device: Device) -> Result<Net, ConfigError> {
        let vs = nn::VarStore::new(device);
        let model = Chessformer::new(&vs.root(), config)?;
        Ok(Net {
            config: config.clone(),
            vs,
            model,
        })
    }

    /// [`Net::new`] with the weights of `seed`, the same whatever other threads draw at the
    /// same time (libtorch's generator is one per process; see [`crate::seeded`]).
    pub fn seeded(config: &NetworkConfig, device: Device, seed: i64) -> Result<Net, ConfigError> {
        let _draws = crate::seeded::seeded(seed);
        Net::new(config, device)
    }

    /// Runs the network (with gradients if enabled) on inputs `[B, 64, 112]`, moved to the
    /// net's device and kind.
    pub fn forward(&self, inputs: &Tensor) -> ModelOutputs {
        self.model
            .forward(&inputs.to_device(self.vs.device()).to_kind(self.kind()))
    }

    /// [`Chessformer::forward_play`] on inputs moved to the net's device and kind: only the
    /// heads a search reads.
    pub fn forward_play(&self, inputs: &Tensor) -> ModelOutputs {
        self.model
            .forward_play(&inputs.to_device(self.vs.device()).to_kind(self.kind()))
    }

    /// The kind of the net's weights and activations: `Float` unless [`Net::set_kind`] changed it.
    pub fn kind(&self) -> Kind {
        self.model.embed.dense.w.kind()
    }

    /// Readies the net to serve evaluations as an inference server runs it: weights in
    /// `kind`, the Shaw form fixed for batches of up to `max_batch` positions (so that a
    /// position's outputs do not depend on the batch it shares), and every layer's weights
    /// kept in the form its forward pass uses ([`Chessformer::prepare_inference`]). Not for a
    /// net that trains.
    pub fn prepare_serving(&mut self, kind: Kind, max_batch: usize) {
        self.set_kind(kind);
        self.model
            .prepare_inference(shaw::ShawForm::for_max_batch(max_batch.max(1)));
    }

    /// Converts every weight to the float kind `kind` (`Float`, `BFloat16` or `Half`), for
    /// inference in that precision. Weights kept by [`Chessformer::prepare_inference`] must be
    /// prepared again afterwards.
    pub fn set_kind(&mut self, kind: Kind) {
        match kind {
            Kind::BFloat16 => self.vs.bfloat16(),
            Kind::Half => self.vs.half(),
            _ => self.vs.float(),
        }
    }

    /// A copy of the net with its own variables (same config, device and kind).
    pub fn try_clone(&self) -> Result<Net, tch::TchError> {
        let mut copy = Net::new(&self.config, self.device())
            .map_err(|e| tch::TchError::Kind(format!("a net's own config was refused: {e}")))?;
        copy.set_kind(self.kind());
        copy.vs.copy(&self.vs)?;
        Ok(copy)
    }

    /// Number of trainable parameters.
    pub fn parameter_count(&self) -> usize {
        self.vs
            .trainable_variables()
            .iter()
            .map(|t| t.numel())
            .sum()
    }

    /// The device the net lives on.
    pub fn device(&self) -> Device {
        self.vs.device()
    }
}
