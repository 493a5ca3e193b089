//! The native backend's weights, laid out once when a net is loaded or published: every
//! dense layer packed for the products (`super::dense`), the attention's q, k and v in one
//! matrix with the logit scale folded into the queries, and the Shaw tables transposed and
//! scaled for the window kernels of `super::attention`.

use std::collections::HashMap;

use super::dense::DenseW;
use super::kernels::RowNorm;
use crate::backend::{BackendError, NamedWeights};
use cfzero_network::config::{NetworkConfig, Norm, PositionEncoding};
use cfzero_network::model::shaw::{BUCKETS, bucket};

/// Shaw tables of one layer, per head, laid out for the window kernels.
#[derive(Debug, Clone)]
pub struct ShawW {
    /// Query-side table transposed, `[H, d_head, 225]`.
    pub rq_t: Vec<f32>,
    /// Key-side table, scaled and transposed, `[H, d_head, 225]`.
    pub rk_t: Vec<f32>,
    /// Value-side table, `[H, 225, d_head]`.
    pub rv: Vec<f32>,
    /// Logit bias gathered to (query, key) and scaled, `[H, 64, 64]`.
    pub bias: Vec<f32>,
    /// Channels per head.
    pub d_head: usize,
    /// The tables as bf16 pairs for the bf16 pass (`ShawW::use_bf16`), none in f32.
    #[cfg(target_arch = "x86_64")]
    pub pairs: Option<super::attention_bf16::ShawPairs>,
}

impl ShawW {
    /// Packs the tables' bf16 pairs, where the CPU runs the bf16 products; returns whether
    /// it does.
    pub fn use_bf16(&mut self) -> bool {
        #[cfg(target_arch = "x86_64")]
        if super::dense_bf16::supported() {
            self.pairs = Some(super::attention_bf16::ShawPairs::pack(self));
            return true;
        }
        false
    }
}

/// Smolgen of one layer.
#[derive(Debug, Clone)]
pub struct SmolgenW {
    /// Per-square compression `[d, compress]`, no bias.
    pub compress: DenseW,
    /// `[64 * compress, hidden]`.
    pub dense1: DenseW,
    /// LayerNorm after dense1.
    pub ln1: (Vec<f32>, Vec<f32>),
    /// `[hidden, heads * gen]`.
    pub dense2: DenseW,
    /// LayerNorm after dense2.
    pub ln2: (Vec<f32>, Vec<f32>),
}

/// The position term of one attention layer.
#[derive(Debug, Clone)]
pub enum PositionW {
    /// Shaw tables.
    Shaw(ShawW),
    /// Smolgen (boxed: its five layers are ten times the size of the other variants).
    Smolgen(Box<SmolgenW>),
    /// None.
    None,
}

/// One encoder layer.
#[derive(Debug, Clone)]
pub struct LayerW {
    /// q, k, v in one `[d, 3d]` product, queries scaled by `1/sqrt(d_head)`.
    pub qkv: DenseW,
    /// Output projection `[d, d]`.
    pub out: DenseW,
    /// Position term.
    pub position: PositionW,
    /// Norm after attention.
    pub norm1: RowNorm,
    /// FFN `[d, dff]`, Mish after it.
    pub ffn1: DenseW,
    /// FFN `[dff, d]`.
    pub ffn2: DenseW,
    /// Norm after the FFN.
    pub norm2: RowNorm,
}

/// The attention policy head.
#[derive(Debug, Clone)]
pub struct PolicyW {
    /// `[d, d_pol]`, Mish after it.
    pub embed: DenseW,
    /// Queries `[d_pol, d_pol]`, scaled by `1 / sqrt(d_pol)`.
    pub q: DenseW,
    /// Keys `[d_pol, d_pol]`.
    pub k: DenseW,
    /// Promotion offsets `[4, d_pol]` (rows q, r, b, n; as stored, output-major).
    pub promo: Vec<f32>,
}

/// The value head the search reads.
#[derive(Debug, Clone)]
pub struct ValueW {
    /// Per-token `[d, c]`, Mish after it.
    pub embed: DenseW,
    /// `[64 c, hidden]`, Mish after it.
    pub fc1: DenseW,
    /// Output rows, as stored (`[3, hidden]` for W/D/L logits, `[1, hidden]` for a tanh q).
    pub out: Vec<f32>,
    /// Output bias.
    pub out_b: Vec<f32>,
    /// Whether the head is the winner head (W/D/L logits) or a `q` head (tanh scalar).
    pub winner: bool,
}

/// Everything the native forward pass reads.
#[derive(Debug, Clone)]
pub struct NativeWeights {
    /// Embedding `[112, d]`, Mish after it.
    pub embed: DenseW,
    /// Multiplicative gate `[64, d]`.
    pub gate_mul: Vec<f32>,
    /// Additive gate `[64, d]`.
    pub gate_add: Vec<f32>,
    /// Encoder layers.
    pub layers: Vec<LayerW>,
    /// Global smolgen generator, `gen` inputs to 4096 outputs.
    pub smolgen_gen_t: Option<DenseW>,
    /// Policy head.
    pub policy: PolicyW,
    /// Value head.
    pub value: ValueW,
}

impl NativeWeights {
    /// Every dense layer's products in bf16 ([`DenseW::use_bf16`]) and the Shaw tables'
    /// pairs ([`ShawW::use_bf16`]), the policy's queries against its keys aside (they stay
    /// f32, packed per position); false where the CPU does
    /// not run bf16 products (nothing changes then).
    pub fn use_bf16(&mut self) -> bool {
        let mut all: Vec<&mut DenseW> = vec![
            &mut self.embed,
            &mut self.policy.embed,
            &mut self.policy.q,
            &mut self.policy.k,
            &mut self.value.embed,
            &mut self.value.fc1,
        ];
        let mut shaw_ok = true;
        for layer in &mut self.layers {
            all.extend([
                &mut layer.qkv,
                &mut layer.out,
                &mut layer.ffn1,
                &mut layer.ffn2,
            ]);
            match &mut layer.position {
                PositionW::Smolgen(sg) => {
                    all.extend([&mut sg.compress, &mut sg.dense1, &mut sg.dense2]);
                }
                PositionW::Shaw(tables) => shaw_ok &= tables.use_bf16(),
                PositionW::None => {}
            }
        }
        all.extend(self.smolgen_gen_t.as_mut());
        // Every layer, not only up to a first refusal (there is none: the CPU check is one).
        let mut ok = shaw_ok;
        for layer in all {
            ok &= layer.use_bf16();
        }
        ok
    }
}

/// The tensors of a [`NamedWeights`] by name, each taken once.
struct Tensors<'a> {
    by_name: HashMap<&'a str, (&'a [i64], &'a [f32])>,
}

impl<'a> Tensors<'a> {
    fn new(weights: &'a NamedWeights) -> Result<Tensors<'a>, BackendError> {
        let mut by_name = HashMap::new();
        for (name, shape, values) in &weights.tensors {
            let numel: i64 = shape.iter().product();
            if shape.iter().any(|&s| s < 0) || numel as usize != values.len() {
                return Err(BackendError::Weights(format!(
                    "tensor `{name}` has {} values for shape {shape:?}",
                    values.len()
                )));
            }
            if by_name
                .insert(name.as_str(), (shape.as_slice(), values.as_slice()))
                .is_some()
            {
                return Err(BackendError::Weights(format!(
                    "tensor `{name}` given twice"
                )));
            }
        }
        Ok(Tensors { by_name })
    }

    /// The tensor `name`, which must have `shape`.
    fn take(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>, BackendError> {
        let (got, values) = self
            .by_name
            .remove(name)
            .ok_or_else(|| BackendError::Weights(format!("tensor `{name}` is missing")))?;
        if got.len() != shape.len() || got.iter().zip(shape).any(|(&g, &s)| g as usize != s) {
            return Err(BackendError::Weights(format!(
                "tensor `{name}` has shape {got:?}, the net needs {shape:?}"
            )));
        }
        Ok(values.to_vec())
    }

    /// A dense layer `<path>.w` `[out, in]` (and `<path>.b`), packed for the products.
    fn dense(
        &mut self,
        path: &str,
        d_in: usize,
        d_out: usize,
        bias: bool,
    ) -> Result<DenseW, BackendError> {
        let (w, b) = self.linear(path, d_in, d_out, bias)?;
        Ok(DenseW::new(&w, b.as_deref(), d_in, d_out))
    }

    /// The weight of a dense layer `[out, in]` and its bias.
    fn linear(
        &mut self,
        path: &str,
        d_in: usize,
        d_out: usize,
        bias: bool,
    ) -> Result<(Vec<f32>, Option<Vec<f32>>), BackendError> {
        let w = self.take(&format!("{path}.w"), &[d_out, d_in])?;
        let b = if bias {
            Some(self.take(&format!("{path}.b"), &[d_out])?)
        } else {
            None
        };
        Ok((w, b))
    }

    fn norm(&mut self, path: &str, kind: Norm, d: usize) -> Result<RowNorm, BackendError> {
        let gain = self.take(&format!("{path}.gain"), &[d])?;
        Ok(match kind {
            Norm::Rms => RowNorm::Rms { gain },
            Norm::Layer => RowNorm::Layer {
                gain,
                bias: self.take(&format!("{path}.bias"), &[d])?,
            },
        })
    }
}

/// The heads a served net may have besides those the search reads; their tensors are
/// accepted and not used.
const UNSERVED_HEADS: [&str; 5] = [
    "soft_policy.",
    "value_q.",
    "value_st.",
    "moves_left.",
    "value_winner.",
];

impl NativeWeights {
    /// Lays out `weights` (the variables of a `Net` with `config`) for the forward pass;
    /// refuses a set with a tensor missing, of another shape, or not of this net.
    pub fn new(config: &NetworkConfig, weights: &NamedWeights) -> Result<Self, BackendError> {
        config
            .validate()
            .map_err(|e| BackendError::Weights(format!("the net's config: {e}")))?;
        let mut t = Tensors::new(weights)?;
        let d = config.d_model;
        let (h, dh) = (config.heads, config.d_head());
        let scale = 1.0 / (dh as f32).sqrt();
        let embed = t.dense("embed", cfzero_network::encoding::PLANES, d, true)?;
        let gate_mul = t.take("embed.gate_mul", &[64, d])?;
        let gate_add = t.take("embed.gate_add", &[64, d])?;
        let mut layers = Vec::with_capacity(config.layers);
        for i in 0..config.layers {
            let p = format!("encoder.{i}");
            let a = format!("{p}.attn");
            let qkv_bias = config.qkv_bias;
            let (q, k, v) = (
                t.linear(&format!("{a}.q"), d, d, qkv_bias)?,
                t.linear(&format!("{a}.k"), d, d, qkv_bias)?,
                t.linear(&format!("{a}.v"), d, d, qkv_bias)?,
            );
            // [3d, d]: the rows of q (scaled), then those of k and of v.
            let w: Vec<f32> = (q.0.iter().map(|x| x * scale))
                .chain(k.0.iter().copied())
                .chain(v.0.iter().copied())
                .collect();
            let b: Option<Vec<f32>> = match (&q.1, &k.1, &v.1) {
                (Some(qb), Some(kb), Some(vb)) => Some(
                    qb.iter()
                        .map(|x| x * scale)
                        .chain(kb.iter().copied())
                        .chain(vb.iter().copied())
                        .collect(),
                ),
                _ => None,
            };
            let qkv = DenseW::new(&w, b.as_deref(), d, 3 * d);
            let position = match config.attention.position {
                PositionEncoding::Shaw => PositionW::Shaw(shaw(&mut t, &a, h, dh, scale)?),
                PositionEncoding::Smolgen => {
                    let s = &config.attention;
                    let sp = format!("{a}.smolgen");
                    let ln = |t: &mut Tensors, name: &str, n: usize| -> Result<_, BackendError> {
                        Ok((
                            t.take(&format!("{sp}.{name}.gain"), &[n])?,
                            t.take(&format!("{sp}.{name}.bias"), &[n])?,
                        ))
                    };
                    PositionW::Smolgen(Box::new(SmolgenW {
                        compress: t.dense(
                            &format!("{sp}.compress"),
                            d,
                            s.smolgen_compress,
                            false,
                        )?,
                        dense1: t.dense(
                            &format!("{sp}.dense1"),
                            64 * s.smolgen_compress,
                            s.smolgen_hidden,
                            true,
                        )?,
                        ln1: ln(&mut t, "ln1", s.smolgen_hidden)?,
                        dense2: t.dense(
                            &format!("{sp}.dense2"),
                            s.smolgen_hidden,
                            h * s.smolgen_gen,
                            true,
                        )?,
                        ln2: ln(&mut t, "ln2", h * s.smolgen_gen)?,
                    }))
                }
                PositionEncoding::None => PositionW::None,
            };
            layers.push(LayerW {
                qkv,
                out: t.dense(&format!("{a}.out"), d, d, true)?,
                position,
                norm1: t.norm(&format!("{p}.norm1"), config.norm, d)?,
                ffn1: t.dense(&format!("{p}.ffn1"), d, config.dff, true)?,
                ffn2: t.dense(&format!("{p}.ffn2"), config.dff, d, true)?,
                norm2: t.norm(&format!("{p}.norm2"), config.norm, d)?,
            });
        }
        let smolgen_gen_t = match config.attention.position {
            PositionEncoding::Smolgen => {
                let g = config.attention.smolgen_gen;
                Some(DenseW::new(
                    &t.take("smolgen_w", &[4096, g])?,
                    None,
                    g,
                    4096,
                ))
            }
            _ => None,
        };
        let dp = config.d_pol;
        let policy = PolicyW {
            embed: t.dense("policy.embed", d, dp, true)?,
            q: {
                // The logits' scale folded into the queries, as the attention's is.
                let scale = 1.0 / (dp as f32).sqrt();
                let (w, b) = t.linear("policy.q", dp, dp, true)?;
                let w: Vec<f32> = w.iter().map(|x| x * scale).collect();
                let b: Option<Vec<f32>> = b.map(|b| b.iter().map(|x| x * scale).collect());
                DenseW::new(&w, b.as_deref(), dp, dp)
            },
            k: t.dense("policy.k", dp, dp, true)?,
            promo: t.take("policy.promo.w", &[4, dp])?,
        };
        let (vc, vh) = (config.value_channels, config.value_hidden);
        let value = if config.outputs.winner {
            ValueW {
                embed: t.dense("value_winner.embed", d, vc, true)?,
                fc1: t.dense("value_winner.fc1", 64 * vc, vh, true)?,
                out: t.take("value_winner.out.w", &[3, vh])?,
                out_b: t.take("value_winner.out.b", &[3])?,
                winner: true,
            }
        } else if config.outputs.q {
            ValueW {
                embed: t.dense("value_q.embed", d, vc, true)?,
                fc1: t.dense("value_q.fc1", 64 * vc, vh, true)?,
                out: t.take("value_q.value.w", &[1, vh])?,
                out_b: t.take("value_q.value.b", &[1])?,
                winner: false,
            }
        } else {
            return Err(BackendError::Weights(
                "the net has neither a winner head nor a q head".into(),
            ));
        };
        if let Some(name) = t
            .by_name
            .keys()
            .find(|n| !UNSERVED_HEADS.iter().any(|p| n.starts_with(p)))
        {
            return Err(BackendError::Weights(format!(
                "tensor `{name}` is not in the served net"
            )));
        }
        Ok(NativeWeights {
            embed,
            gate_mul,
            gate_add,
            layers,
            smolgen_gen_t,
            policy,
            value,
        })
    }
}

/// The Shaw tables of attention layer `a`, laid out as [`ShawW`] says.
fn shaw(t: &mut Tensors, a: &str, h: usize, dh: usize, scale: f32) -> Result<ShawW, BackendError> {
    let rq = t.take(&format!("{a}.rpe_q"), &[h, BUCKETS, dh])?;
    let rk = t.take(&format!("{a}.rpe_k"), &[h, BUCKETS, dh])?;
    let rv = t.take(&format!("{a}.rpe_v"), &[h, BUCKETS, dh])?;
    let rb = t.take(
        &format!("{a}.{}", cfzero_network::model::attention::SHAW_BIAS),
        &[h, BUCKETS],
    )?;
    let mut rq_t = vec![0f32; h * dh * BUCKETS];
    let mut rk_t = vec![0f32; h * dh * BUCKETS];
    for hi in 0..h {
        for b in 0..BUCKETS {
            for c in 0..dh {
                rq_t[(hi * dh + c) * BUCKETS + b] = rq[(hi * BUCKETS + b) * dh + c];
                rk_t[(hi * dh + c) * BUCKETS + b] = rk[(hi * BUCKETS + b) * dh + c] * scale;
            }
        }
    }
    let mut bias = vec![0f32; h * 4096];
    for hi in 0..h {
        for i in 0..64 {
            for j in 0..64 {
                bias[hi * 4096 + i * 64 + j] = rb[hi * BUCKETS + bucket(i, j)] * scale;
            }
        }
    }
    Ok(ShawW {
        rq_t,
        rk_t,
        rv,
        bias,
        d_head: dh,
        #[cfg(target_arch = "x86_64")]
        pairs: None,
    })
}
