//! The Chessformer as a native Rust forward pass on the CPU: the matrix products against
//! weights packed once ([`dense`]), everything between them fused per block of positions
//! (docs/ARCHITECTURE.md, "Backends", says why this engine and what it measured).
//!
//! A batch runs in blocks of up to [`NativeBackend::block`] positions (their `64 x block`
//! token rows stay in the L2 cache between the products): the embedding, each encoder layer
//! (the fused q, k, v product; attention one (position, head) at a time in
//! [`attention::attend_head`]; the output product with residual and norm in one pass; the
//! FFN with bias and Mish in one pass, then residual and norm), and the play heads. Weights
//! are laid out once per net ([`weights::NativeWeights`]) and every buffer is sized once for
//! a full block, so a forward pass allocates nothing. It computes in f32, or with its dense
//! products in bf16 on CPUs with AVX-512 BF16 ([`NativeBackend::bf16`], `dense_bf16`).
//!
//! The pass is compiled twice, for AVX2 with FMA and for the baseline of the target (the
//! kernels in [`simd::Avx2`] or [`simd::Portable`] lanes), and picks the first at
//! run time where the CPU has it.

mod attention;
#[cfg(target_arch = "x86_64")]
mod attention_bf16;
mod dense;
#[cfg(target_arch = "x86_64")]
mod dense_bf16;
mod heads;
mod kernels;
mod simd;
mod weights;

use attention::{HeadInput, HeadScratch, attend_head};
use dense::{DenseW, dense};
use kernels::{Act, layer_norm_row, residual_norm};
use simd::Lanes;
use weights::{NativeWeights, PositionW};

use super::{
    Backend, BackendError, BackendOutputs, Capabilities, ChoiceError, NamedWeights, check_fit,
    check_inputs,
};
use crate::INPUT_FLOATS;
use cfzero_network::config::NetworkConfig;
use cfzero_network::encoding::{PLANES, POLICY_SIZE};
use cfzero_network::model::Net;
use cfzero_network::model::layers::NORM_EPS;
use cfzero_network::model::smolgen::SMOLGEN_EPS;
use tch::Kind;

/// The backend's name in logs, configs and `--backend`.
pub const NATIVE_NAME: &str = "native";

/// Bytes of fused q, k, v rows a block may take: blocks are sized to keep their activations
/// in a core's L2 cache.
const BLOCK_QKV_BYTES: usize = 1 << 20;

/// Most positions in a block.
const MAX_BLOCK: usize = 8;

/// Buffers of one block, sized once.
#[derive(Debug, Clone)]
struct Scratch {
    /// Tokens `[rows, d]`.
    x: Vec<f32>,
    /// Fused q, k, v `[rows, 3d]`.
    qkv: Vec<f32>,
    /// Attention output `[rows, d]`.
    z: Vec<f32>,
    /// Output of a product before its residual sum, `[rows, d]`.
    y: Vec<f32>,
    /// FFN hidden `[rows, dff]`.
    hidden: Vec<f32>,
    /// Policy embedding, queries and keys, `[rows, d_pol]` each.
    pol_e: Vec<f32>,
    pol_q: Vec<f32>,
    pol_k: Vec<f32>,
    /// One position's keys packed as a layer's weights, and its from-to logits `[64, 64]`.
    pol_keys: DenseW,
    pol_c: Vec<f32>,
    /// Value embedding `[rows, c]` and features `[block, hidden]`.
    val_e: Vec<f32>,
    val_h: Vec<f32>,
    /// Smolgen: compressed squares `[rows, compress]`, hidden `[block, hidden]`, generator
    /// inputs `[block, heads * gen]`, the biases `[block, heads, 4096]`.
    sg_c: Vec<f32>,
    sg_h: Vec<f32>,
    sg_g: Vec<f32>,
    sg_bias: Vec<f32>,
    /// One head's tiles.
    head: HeadScratch,
}

/// The native CPU backend (see the module docs).
#[derive(Debug, Clone)]
pub struct NativeBackend {
    config: NetworkConfig,
    /// Every tensor of the net with its shape (those of heads the pass does not compute
    /// too): a reload must bring exactly these, as libtorch's does.
    shapes: Vec<(String, Vec<i64>)>,
    weights: NativeWeights,
    block: usize,
    max_batch: usize,
    scratch: Scratch,
    avx2: bool,
    /// Products in bf16 ([`NativeBackend::bf16`]).
    bf16: bool,
}

impl NativeBackend {
    /// Lays out `weights` (a `Net`'s variables, as [`super::TchBackend::weights_of`] gives
    /// them) of a net with `config`, for batches of up to `max_batch` (larger ones still run).
    pub fn new(
        config: &NetworkConfig,
        weights: &NamedWeights,
        max_batch: usize,
    ) -> Result<NativeBackend, BackendError> {
        let nw = NativeWeights::new(config, weights)?;
        let d = config.d_model;
        let block = (BLOCK_QKV_BYTES / (64 * 3 * d * 4)).clamp(1, MAX_BLOCK);
        let rows = block * 64;
        let s = &config.attention;
        let smolgen = nw.smolgen_gen_t.is_some();
        let sg = |n: usize| if smolgen { n } else { 0 };
        let scratch = Scratch {
            x: vec![0.0; rows * d],
            qkv: vec![0.0; rows * 3 * d],
            z: vec![0.0; rows * d],
            y: vec![0.0; rows * d],
            hidden: vec![0.0; rows * config.dff],
            pol_e: vec![0.0; rows * config.d_pol],
            pol_q: vec![0.0; rows * config.d_pol],
            pol_k: vec![0.0; rows * config.d_pol],
            pol_keys: DenseW::zeros(config.d_pol, 64),
            pol_c: vec![0.0; 4096],
            val_e: vec![0.0; rows * config.value_channels],
            val_h: vec![0.0; block * config.value_hidden],
            sg_c: vec![0.0; sg(rows * s.smolgen_compress)],
            sg_h: vec![0.0; sg(block * s.smolgen_hidden)],
            sg_g: vec![0.0; sg(block * config.heads * s.smolgen_gen)],
            sg_bias: vec![0.0; sg(block * config.heads * 4096)],
            head: HeadScratch::new(config.d_head()),
        };
        let mut shapes: Vec<(String, Vec<i64>)> = weights
            .tensors
            .iter()
            .map(|(name, shape, _)| (name.clone(), shape.clone()))
            .collect();
        shapes.sort();
        Ok(NativeBackend {
            config: config.clone(),
            shapes,
            weights: nw,
            block,
            max_batch,
            scratch,
            avx2: has_avx2_fma(),
            bf16: false,
        })
    }

    /// The same backend with its dense products in bf16 (`dense_bf16`: weights and product
    /// inputs rounded to bf16, sums in f32; so is attention, its Shaw logits, softmax
    /// weights and `A V` (`attention_bf16`), while norms and the policy's query-key products
    /// stay f32), or why not: only a CPU with AVX-512 BF16 ([`bf16_supported`]) runs them.
    pub fn bf16(mut self) -> Result<NativeBackend, BackendError> {
        // The layers pack their bf16 pairs only where the CPU runs them (`DenseW::use_bf16`
        // checks, and the products rely on it), so their answer is the CPU's.
        if !self.weights.use_bf16() {
            return Err(ChoiceError::NativePrecision("bf16".into()).into());
        }
        self.bf16 = true;
        Ok(self)
    }

    /// The backend for `net`'s current weights, computing in `kind` (f32, or bf16 products
    /// where the CPU runs them).
    pub fn from_net(
        net: &Net,
        kind: Kind,
        max_batch: usize,
    ) -> Result<NativeBackend, BackendError> {
        let weights = super::TchBackend::weights_of(net)?;
        let backend = NativeBackend::new(&net.config, &weights, max_batch)?;
        match kind {
            Kind::Float => Ok(backend),
            Kind::BFloat16 => backend.bf16(),
            other => Err(
                ChoiceError::NativePrecision(cfzero_network::precision::kind_name(other)).into(),
            ),
        }
    }

    /// The same backend on the portable lanes (plain arrays) even where the CPU has AVX2:
    /// so that tests on an x86 machine check the variant other CPUs run, and to rule the
    /// SIMD variant in or out when hunting a difference.
    pub fn portable(mut self) -> NativeBackend {
        self.avx2 = false;
        self
    }

    /// Positions per block.
    pub fn block(&self) -> usize {
        self.block
    }

    /// Runs one block of `nb` positions (`inputs` `nb * INPUT_FLOATS`), writing their heads.
    #[inline(always)]
    fn run_block<L: Lanes>(
        &mut self,
        inputs: &[f32],
        nb: usize,
        policy: &mut [f32],
        wdl: &mut [f32],
        values: &mut [f32],
    ) {
        let cfg = &self.config;
        let w = &self.weights;
        let s = &mut self.scratch;
        let (d, dff, h, dh) = (cfg.d_model, cfg.dff, cfg.heads, cfg.d_head());
        let rows = nb * 64;
        let alpha = (2.0 * cfg.layers as f32).powf(-0.25);
        let eps = NORM_EPS as f32;

        // Embedding: mish(x W + b) * gate_mul + gate_add, the gates per square.
        let x = &mut s.x[..rows * d];
        dense::<L>(x, (inputs, PLANES), &w.embed, rows, Act::Mish);
        for (r, row) in x.chunks_exact_mut(d).enumerate() {
            let sq = r % 64;
            let (gm, ga) = (&w.gate_mul[sq * d..][..d], &w.gate_add[sq * d..][..d]);
            let mut c = 0;
            while c + 8 <= d {
                L::load(&row[c..])
                    .mul(L::load(&gm[c..]))
                    .add(L::load(&ga[c..]))
                    .store(&mut row[c..]);
                c += 8;
            }
            for k in c..d {
                row[k] = row[k] * gm[k] + ga[k];
            }
        }

        for layer in &w.layers {
            let qkv = &mut s.qkv[..rows * 3 * d];
            dense::<L>(qkv, (x, d), &layer.qkv, rows, Act::Identity);
            if let PositionW::Smolgen(sg) = &layer.position {
                let a = &cfg.attention;
                let (comp, hid, gen_size) = (a.smolgen_compress, a.smolgen_hidden, a.smolgen_gen);
                let c = &mut s.sg_c[..rows * comp];
                dense::<L>(c, (x, d), &sg.compress, rows, Act::Identity);
                let hh = &mut s.sg_h[..nb * hid];
                dense::<L>(hh, (c, 64 * comp), &sg.dense1, nb, Act::Silu);
                for row in hh.chunks_exact_mut(hid) {
                    layer_norm_row(row, &sg.ln1.0, &sg.ln1.1, SMOLGEN_EPS as f32);
                }
                let g = &mut s.sg_g[..nb * h * gen_size];
                dense::<L>(g, (hh, hid), &sg.dense2, nb, Act::Silu);
                for row in g.chunks_exact_mut(h * gen_size) {
                    layer_norm_row(row, &sg.ln2.0, &sg.ln2.1, SMOLGEN_EPS as f32);
                }
                // Every head of every position of the block through the generator in one
                // product, which reads the generator once a block.
                if let Some(gen_t) = &w.smolgen_gen_t {
                    let bias = &mut s.sg_bias[..nb * h * 4096];
                    dense::<L>(bias, (g, gen_size), gen_t, nb * h, Act::Identity);
                }
            }
            let bias = matches!(layer.position, PositionW::Smolgen(_));
            for p in 0..nb {
                let shaw = match &layer.position {
                    PositionW::Shaw(t) => Some(t),
                    _ => None,
                };
                let z = &mut s.z[p * 64 * d..(p + 1) * 64 * d];
                for head in 0..h {
                    let input = HeadInput {
                        qkv: &s.qkv[p * 64 * 3 * d..(p + 1) * 64 * 3 * d],
                        stride: 3 * d,
                        offset: head * dh,
                        d,
                        d_head: dh,
                        bf16: self.bf16,
                    };
                    let at = (p * h + head) * 4096;
                    let b = bias.then(|| &s.sg_bias[at..at + 4096]);
                    attend_head::<L>(&input, head, shaw, b, &mut s.head, z, d);
                }
            }
            let y = &mut s.y[..rows * d];
            dense::<L>(y, (&s.z[..rows * d], d), &layer.out, rows, Act::Identity);
            residual_norm(x, y, d, alpha, &layer.norm1, eps);
            let hidden = &mut s.hidden[..rows * dff];
            dense::<L>(hidden, (x, d), &layer.ffn1, rows, Act::Mish);
            dense::<L>(y, (hidden, dff), &layer.ffn2, rows, Act::Identity);
            residual_norm(x, y, d, alpha, &layer.norm2, eps);
        }

        // Policy: mish(x We + b), then queries and keys.
        let pw = &w.policy;
        let dp = cfg.d_pol;
        let e = &mut s.pol_e[..rows * dp];
        dense::<L>(e, (x, d), &pw.embed, rows, Act::Mish);
        let (pq, pk) = (&mut s.pol_q[..rows * dp], &mut s.pol_k[..rows * dp]);
        dense::<L>(pq, (e, dp), &pw.q, rows, Act::Identity);
        dense::<L>(pk, (e, dp), &pw.k, rows, Act::Identity);
        for p in 0..nb {
            let (q, k) = (&pq[p * 64 * dp..][..64 * dp], &pk[p * 64 * dp..][..64 * dp]);
            s.pol_keys.set_output_major(k);
            dense::<L>(&mut s.pol_c, (q, dp), &s.pol_keys, 64, Act::Identity);
            heads::policy_logits(
                &s.pol_c,
                k,
                pw,
                &mut policy[p * POLICY_SIZE..(p + 1) * POLICY_SIZE],
            );
        }

        // Value: mish(x We + b) per square, flattened square-major, then fc1 and Mish.
        let vw = &w.value;
        let (vc, vh) = (cfg.value_channels, cfg.value_hidden);
        let ve = &mut s.val_e[..rows * vc];
        dense::<L>(ve, (x, d), &vw.embed, rows, Act::Mish);
        let hv = &mut s.val_h[..nb * vh];
        dense::<L>(hv, (ve, 64 * vc), &vw.fc1, nb, Act::Mish);
        for p in 0..nb {
            heads::value_outputs(
                &hv[p * vh..(p + 1) * vh],
                vw,
                &mut wdl[p * 3..(p + 1) * 3],
                &mut values[p],
            );
        }
    }

    /// The whole batch, block by block.
    #[inline(always)]
    fn run<L: Lanes>(&mut self, inputs: &[f32], n: usize, out: &mut BackendOutputs) {
        let mut start = 0;
        while start < n {
            let nb = self.block.min(n - start);
            let end = start + nb;
            self.run_block::<L>(
                &inputs[start * INPUT_FLOATS..end * INPUT_FLOATS],
                nb,
                &mut out.policy[start * POLICY_SIZE..end * POLICY_SIZE],
                &mut out.wdl[start * 3..end * 3],
                &mut out.values[start..end],
            );
            start = end;
        }
    }

    /// [`NativeBackend::run`] compiled for AVX2 with FMA.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA ([`has_avx2_fma`]).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn run_avx2(&mut self, inputs: &[f32], n: usize, out: &mut BackendOutputs) {
        self.run::<simd::Avx2>(inputs, n, out)
    }
}

/// Whether this CPU runs the native pass with bf16 products (AVX-512 BF16 beside AVX2 and
/// FMA); [`cfzero_network::precision::CPU_BF16_OVERRIDE`] does not change it, since a claim the CPU
/// cannot keep would run instructions it does not have.
pub fn bf16_supported() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        dense_bf16::supported()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this CPU runs the AVX2 variant of the pass.
fn has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

impl Backend for NativeBackend {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            name: NATIVE_NAME,
            device: "cpu".into(),
            precision: if self.bf16 { "bf16" } else { "f32" }.into(),
            max_batch: self.max_batch,
            history_fill: self.config.history_fill,
        }
    }

    fn forward(
        &mut self,
        inputs: &[f32],
        n: usize,
        out: &mut BackendOutputs,
    ) -> Result<(), BackendError> {
        check_inputs(inputs, n)?;
        out.reset(n);
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: `avx2` is set only where the CPU has AVX2 and FMA.
            unsafe { self.run_avx2(inputs, n, out) };
            return Ok(());
        }
        self.run::<simd::Portable>(inputs, n, out);
        Ok(())
    }

    fn reload(&mut self, weights: &NamedWeights) -> Result<(), BackendError> {
        let served = |name: &str| {
            let at = self.shapes.binary_search_by(|(n, _)| n.as_str().cmp(name));
            at.ok().map(|at| self.shapes[at].1.clone())
        };
        check_fit(weights, served, self.shapes.len())?;
        let mut laid_out = NativeWeights::new(&self.config, weights)?;
        if self.bf16 {
            laid_out.use_bf16();
        }
        self.weights = laid_out;
        Ok(())
    }
}
