//! Multi-head self-attention over the 64 square tokens, with its position term.

use tch::{Tensor, nn};

use super::layers::Dense;
use super::shaw;
use super::smolgen::Smolgen;
use crate::config::{NetworkConfig, PositionEncoding};

/// Name of the Shaw bias table of an attention layer (`encoder.<i>.attn.rpe_bias`). Nets saved
/// before it existed lack it; they load with it at zero, its initial value (see
/// [`crate::checkpoint`]).
pub const SHAW_BIAS: &str = "rpe_bias";

/// The position term of one attention layer.
#[derive(Debug)]
pub enum PositionTerm {
    /// Shaw tables `rpe_q`, `rpe_k`, `rpe_v`, each `[H, 225, d_head]`, and the logit bias
    /// `rpe_bias` `[H, 225]`, all zero-initialised (their roles: [`shaw::ShawTables`]).
    Shaw {
        /// Query-side table.
        rq: Tensor,
        /// Key-side table.
        rk: Tensor,
        /// Value-side table.
        rv: Tensor,
        /// Position-only logit bias per head and displacement bucket.
        rb: Tensor,
    },
    /// Smolgen bias.
    Smolgen(Smolgen),
    /// None.
    None,
}

/// One multi-head attention block. Head `h` uses channels `h*d_head..(h+1)*d_head` (contiguous, as Lc0).
#[derive(Debug)]
pub struct Attention {
    /// Query projection (bias only with `qkv_bias`).
    pub q: Dense,
    /// Key projection.
    pub k: Dense,
    /// Value projection (DeepNorm gain beta).
    pub v: Dense,
    /// Output projection with bias (DeepNorm gain beta).
    pub out: Dense,
    /// Position term.
    pub position: PositionTerm,
    /// Weights kept in the form a forward pass uses, by an inference server (see
    /// [`Attention::prepare`]); `None` derives them from the variables in every pass.
    pub prepared: Option<PassWeights>,
    heads: i64,
}

/// One attention layer's weights in the form a forward pass uses: the q, k and v projections
/// as one `[3d, d]` product whose query rows carry the `1/sqrt(d_head)` logit scale, and the
/// Shaw tables with that scale folded into the key-side table and the bias (see
/// [`shaw::fold_scale`]), gathered to (query, key) pairs when the gathered form may run.
///
/// Training derives them from the variables in every pass, so gradients reach the variables;
/// an inference server keeps them ([`Attention::prepare`]), which saves a copy of the weights,
/// the gathers of the tables and a pass over the logits in every forward pass.
#[derive(Debug)]
pub struct PassWeights {
    /// Fused projection `[3d, d]` (queries scaled), with bias if the layer has one.
    qkv: Dense,
    /// Shaw tables `(rq, rk_s, rv, rb_s)` and their gathered forms.
    shaw: Option<ShawPass>,
}

/// The Shaw part of [`PassWeights`].
#[derive(Debug)]
struct ShawPass {
    /// `[H, 225, d_head]` x 3 and `[H, 225]`, scale folded.
    tables: [Tensor; 4],
    /// The same gathered to `[H, 64, 64, d_head]` x 3 and `[H, 64, 64]`.
    gathered: Option<[Tensor; 4]>,
}

/// Per-forward-pass context shared by all layers: Shaw bucket index and the smolgen generator.
pub struct AttentionContext<'a> {
    /// Bucket index `[4096]` for Shaw tables.
    pub bucket_index: &'a Tensor,
    /// Global smolgen generator `[4096, gen]`, if the net uses smolgen.
    pub smolgen_w: Option<&'a Tensor>,
    /// The form of Shaw attention.
    pub shaw_form: shaw::ShawForm,
}

impl Attention {
    /// Variables under `path`: `q`, `k`, `v`, `out`, and `rpe_q/rpe_k/rpe_v/rpe_bias` or
    /// `smolgen`.
    pub fn new(path: &nn::Path, cfg: &NetworkConfig, beta: f64) -> Attention {
        let d = cfg.d_model;
        let (h, dh) = (cfg.heads as i64, cfg.d_head() as i64);
        let position = match cfg.attention.position {
            PositionEncoding::Shaw => {
                let table = |name: &str| {
                    path.var(name, &[h, shaw::BUCKETS as i64, dh], nn::Init::Const(0.0))
                };
                PositionTerm::Shaw {
                    rq: table("rpe_q"),
                    rk: table("rpe_k"),
                    rv: table("rpe_v"),
                    // Zero, so that a new net's and an old file's attention are unchanged by it.
                    rb: path.var(SHAW_BIAS, &[h, shaw::BUCKETS as i64], nn::Init::Const(0.0)),
                }
            }
            PositionEncoding::Smolgen => PositionTerm::Smolgen(Smolgen::new(
                &(path / "smolgen"),
                &cfg.attention,
                d,
                cfg.heads,
            )),
            PositionEncoding::None => PositionTerm::None,
        };
        Attention {
            q: Dense::new(path / "q", d, d, cfg.qkv_bias, 1.0),
            k: Dense::new(path / "k", d, d, cfg.qkv_bias, 1.0),
            v: Dense::new(path / "v", d, d, cfg.qkv_bias, beta),
            out: Dense::new(path / "out", d, d, true, beta),
            position,
            prepared: None,
            heads: h,
        }
    }

    /// The layer's [`PassWeights`]; the gathered Shaw tables only with `gathered`.
    fn pass_weights(&self, index: &Tensor, gathered: bool) -> PassWeights {
        let d_head = self.q.w.size()[0] / self.heads;
        let scale = 1.0 / (d_head as f64).sqrt();
        let w = Tensor::cat(
            &[
                &self.q.w * scale,
                self.k.w.shallow_clone(),
                self.v.w.shallow_clone(),
            ],
            0,
        );
        let b = match (&self.q.b, &self.k.b, &self.v.b) {
            (Some(q), Some(k), Some(v)) => Some(Tensor::cat(
                &[q * scale, k.shallow_clone(), v.shallow_clone()],
                0,
            )),
            _ => None,
        };
        let shaw = match &self.position {
            PositionTerm::Shaw { rq, rk, rv, rb } => {
                let (rk, rb) = (rk * scale, rb * scale);
                let tables = [rq.shallow_clone(), rk, rv.shallow_clone(), rb];
                let gathered = gathered.then(|| tables.each_ref().map(|t| shaw::gather(t, index)));
                Some(ShawPass { tables, gathered })
            }
            _ => None,
        };
        PassWeights {
            qkv: Dense { w, b },
            shaw,
        }
    }

    /// Keeps the layer's [`PassWeights`] (built without gradients) for the forward passes to
    /// come, with the gathered tables unless `form` always takes the bucket form. The kept
    /// weights do not follow later changes of the variables: call it again after every
    /// change (an inference server does, after each publish), and never on a net that trains.
    pub fn prepare(&mut self, index: &Tensor, form: shaw::ShawForm) {
        let weights = tch::no_grad(|| self.pass_weights(index, form != shaw::ShawForm::Buckets));
        self.prepared = Some(weights);
    }

    /// Splits `[B, 64, d]` into heads `[B, H, 64, d_head]`.
    fn split(&self, x: &Tensor) -> Tensor {
        let (b, n, d) = x.size3().expect("tokens are [B, 64, d]");
        x.view([b, n, self.heads, d / self.heads])
            .permute([0, 2, 1, 3])
    }

    /// Queries, keys and values of `x`, split into heads.
    pub fn qkv(&self, x: &Tensor) -> (Tensor, Tensor, Tensor) {
        (
            self.split(&self.q.forward(x)),
            self.split(&self.k.forward(x)),
            self.split(&self.v.forward(x)),
        )
    }

    /// The attention probabilities `[B, H, 64 (query), 64 (key)]` of tokens `x`: what each
    /// query square reads from each key square, for inspection (the forward pass computes
    /// them inside its fused forms).
    pub fn probabilities(&self, x: &Tensor, ctx: &AttentionContext) -> Tensor {
        let (q, k, _) = self.qkv(x);
        let (b, h, n, dh) = q.size4().expect("q is [B, H, 64, d_head]");
        let mut logits = q.matmul(&k.transpose(-2, -1));
        if let PositionTerm::Shaw { rq, rk, rb, .. } = &self.position {
            let idx = ctx
                .bucket_index
                .view([1, 1, n, n])
                .expand([b, h, n, n], false);
            logits = logits
                + q.matmul(&rq.transpose(-2, -1)).gather(3, &idx, false)
                + rk.matmul(&k.transpose(-2, -1)).gather(2, &idx, false)
                + shaw::gather(rb, ctx.bucket_index);
        }
        let mut logits = logits * (1.0 / (dh as f64).sqrt());
        if let PositionTerm::Smolgen(s) = &self.position {
            let generator = ctx.smolgen_w.expect("a smolgen net has smolgen_w");
            logits += s.forward(x, generator);
        }
        logits.softmax(-1, logits.kind())
    }

    /// Attention output `[B, 64, d]` (after the output projection) for tokens `x` `[B, 64, d]`.
    pub fn forward(&self, x: &Tensor, ctx: &AttentionContext) -> Tensor {
        let (b, n, d) = x.size3().expect("tokens are [B, 64, d]");
        let buckets = shaw::uses_bucket_form(ctx.shaw_form, b);
        let derived;
        let w = match &self.prepared {
            Some(w) => w,
            None => {
                derived = self.pass_weights(ctx.bucket_index, !buckets);
                &derived
            }
        };
        // One product for q, k and v: [B, 64, 3, H, d_head] -> three [B, H, 64, d_head].
        let qkv = w
            .qkv
            .forward(x)
            .view([b, n, 3, self.heads, d / self.heads])
            .permute([2, 0, 3, 1, 4]);
        let (q, k, v) = (qkv.get(0), qkv.get(1), qkv.get(2));
        let z = match (&self.position, &w.shaw) {
            (PositionTerm::Shaw { .. }, Some(s)) => {
                let [rq, rk, rv, rb] = &s.tables;
                match (&s.gathered, buckets) {
                    (Some([gq, gk, gv, gb]), false) => {
                        shaw::attend_shaw_gathered(&q, &k, &v, (gq, gk, gv, gb))
                    }
                    _ => shaw::attend_shaw(
                        &q,
                        &k,
                        &v,
                        (rq, rk, rv, rb),
                        ctx.bucket_index,
                        if buckets {
                            shaw::ShawForm::Buckets
                        } else {
                            shaw::ShawForm::Gathered
                        },
                    ),
                }
            }
            (PositionTerm::Smolgen(s), _) => {
                let generator = ctx.smolgen_w.expect("a smolgen net has smolgen_w");
                shaw::attend(&q, &k, &v, Some(&s.forward(x, generator)))
            }
            _ => shaw::attend(&q, &k, &v, None),
        };
        self.out
            .forward(&z.permute([0, 2, 1, 3]).reshape([b, n, d]))
    }
}
