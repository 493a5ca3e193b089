//! Inference precision: the `inference_precision` setting (`auto`, `f32`, `bf16`) and the
//! check of whether the device computes bfloat16 natively.
//!
//! bf16 pays only where the hardware multiplies it natively: on a CPU with AVX-512 BF16
//! (oneDNN's bf16 kernels), and on CUDA GPUs. Elsewhere libtorch emulates it, which on an
//! AVX2 CPU was 50 to 200 times slower than f32 (torch 2.13, 512 to 2048 square products on
//! one thread), so a request for bf16 there falls back to f32 and says so.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use crate::model::Net;

/// Environment variable that overrides the CPU's bf16 check: `1` claims native support, `0`
/// denies it. For tests (to take either path on any machine) and for CPUs the check misjudges.
pub const CPU_BF16_OVERRIDE: &str = "CFZERO_CPU_BF16";

/// The precision a user asks inference to run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// bf16 where the device computes it natively, else f32.
    #[default]
    Auto,
    /// 32-bit floats throughout.
    F32,
    /// bfloat16 weights and activations (softmax and norms accumulate in f32 inside
    /// libtorch's kernels); f32 with a notice where the device lacks native bf16.
    Bf16,
}

/// A precision name that is none of `auto`, `f32`, `bf16`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown precision `{0}`: expected auto, f32 or bf16")]
pub struct UnknownPrecision(pub String);

impl FromStr for Precision {
    type Err = UnknownPrecision;

    fn from_str(s: &str) -> Result<Precision, UnknownPrecision> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Precision::Auto),
            "f32" | "float32" => Ok(Precision::F32),
            "bf16" | "bfloat16" => Ok(Precision::Bf16),
            _ => Err(UnknownPrecision(s.to_owned())),
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Precision::Auto => "auto",
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
        })
    }
}

/// Whether a device computes bf16 natively, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bf16Support {
    /// True when bf16 products run on native instructions.
    pub native: bool,
    /// What the check found, for the notice (e.g. "this CPU has avx512_bf16").
    pub reason: String,
}

impl Bf16Support {
    /// The check for `device`: CUDA devices are taken as native (every GPU libtorch 2.13
    /// supports multiplies bf16 on its tensor cores or emulates it at f32 speed); a CPU is
    /// native with AVX-512 BF16 (which every CPU with AMX also has), unless [`CPU_BF16_OVERRIDE`] says otherwise.
    pub fn detect(device: Device) -> Bf16Support {
        if device.is_cuda() {
            return Bf16Support {
                native: true,
                reason: "the device is a CUDA GPU".into(),
            };
        }
        match std::env::var(CPU_BF16_OVERRIDE).as_deref() {
            Ok("1") => Bf16Support {
                native: true,
                reason: format!("{CPU_BF16_OVERRIDE}=1 claims native bf16"),
            },
            Ok("0") => Bf16Support {
                native: false,
                reason: format!("{CPU_BF16_OVERRIDE}=0 denies native bf16"),
            },
            _ => cpu_bf16(),
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn cpu_bf16() -> Bf16Support {
    if std::arch::is_x86_feature_detected!("avx512bf16") {
        Bf16Support {
            native: true,
            reason: "this CPU has avx512_bf16".into(),
        }
    } else {
        Bf16Support {
            native: false,
            reason: "this CPU lacks avx512_bf16".into(),
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn cpu_bf16() -> Bf16Support {
    Bf16Support {
        native: false,
        reason: "bf16 is only used on x86-64 CPUs with avx512_bf16".into(),
    }
}

/// The precision inference runs in, resolved from a [`Precision`] request for a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPrecision {
    /// The tensor kind of the served net's weights and activations.
    pub kind: Kind,
    /// One line for the user: which path runs and why.
    pub notice: String,
    /// True when a bf16 request fell back to f32.
    pub fell_back: bool,
}

/// Resolves `request` against `support` (see [`Bf16Support::detect`]).
pub fn resolve(request: Precision, support: &Bf16Support) -> ResolvedPrecision {
    let reason = &support.reason;
    let (kind, fell_back, why) = match (request, support.native) {
        (Precision::F32, _) => (Kind::Float, false, "f32 requested".to_owned()),
        (Precision::Auto, native) => (
            if native { Kind::BFloat16 } else { Kind::Float },
            false,
            format!("auto: {reason}"),
        ),
        (Precision::Bf16, true) => (Kind::BFloat16, false, format!("bf16 requested; {reason}")),
        (Precision::Bf16, false) => (
            Kind::Float,
            true,
            format!("bf16 requested, but {reason}: falling back"),
        ),
    };
    ResolvedPrecision {
        kind,
        notice: format!("inference precision: {} ({why})", kind_name(kind)),
        fell_back,
    }
}

/// "f32", "bf16" or "f16" for a float kind (the kind's debug name otherwise).
pub fn kind_name(kind: Kind) -> String {
    match kind {
        Kind::Float => "f32".into(),
        Kind::BFloat16 => "bf16".into(),
        Kind::Half => "f16".into(),
        other => format!("{other:?}"),
    }
}

/// How far a net in a lower precision strays from the same net in f32 on some positions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PrecisionError {
    /// Positions compared.
    pub positions: usize,
    /// Mean over positions of KL(f32 policy || other policy), over the legal moves, in nats.
    pub mean_policy_kl: f64,
    /// Largest such KL divergence.
    pub max_policy_kl: f64,
    /// Mean absolute difference of the values (W - L, in -1..1).
    pub mean_value_difference: f64,
    /// Largest absolute value difference.
    pub max_value_difference: f64,
}

/// Evaluates inputs `[N, 64, 112]` with `reference` and `other` (the heads a search reads) and
/// compares them: the policies as softmaxes over each position's legal moves `legal[i]`
/// (policy indices), and the values. `None` if a net has no value head or `legal` does not
/// have one entry per position.
pub fn compare_nets(
    reference: &Net,
    other: &Net,
    inputs: &Tensor,
    legal: &[Vec<usize>],
) -> Option<PrecisionError> {
    let n = positions(inputs, legal)?;
    let (p, v) = net_outputs(reference, inputs)?;
    let (q, w) = net_outputs(other, inputs)?;
    compare(n, (p, v), (q, w), legal)
}

/// [`compare_nets`] for outputs computed elsewhere (a backend's, e.g. the native pass in
/// bf16 against libtorch's f32): `policy` `[N, 1858]` logits and `values` `[N]` of the same
/// inputs, compared with `reference`'s.
pub fn compare_outputs(
    reference: &Net,
    inputs: &Tensor,
    legal: &[Vec<usize>],
    policy: Tensor,
    values: Tensor,
) -> Option<PrecisionError> {
    let n = positions(inputs, legal)?;
    let expected = net_outputs(reference, inputs)?;
    compare(n, expected, (policy, values), legal)
}

/// The number of positions of `inputs`, where `legal` has one entry for each.
fn positions(inputs: &Tensor, legal: &[Vec<usize>]) -> Option<usize> {
    let n = inputs.size().first().copied()? as usize;
    (legal.len() == n && n > 0).then_some(n)
}

/// A net's policy logits `[N, 1858]` and values `[N]` on `inputs`, on the CPU in f32.
fn net_outputs(net: &Net, inputs: &Tensor) -> Option<(Tensor, Tensor)> {
    tch::no_grad(|| {
        let out = net.forward_play(inputs);
        let (_, values) = out.play_values()?;
        let policy = out.policy.to_device(Device::Cpu).to_kind(Kind::Float);
        Some((policy, values.to_device(Device::Cpu).to_kind(Kind::Float)))
    })
}

/// The comparison of [`compare_nets`] on two sets of outputs of `n` positions.
fn compare(
    n: usize,
    (p, v): (Tensor, Tensor),
    (q, w): (Tensor, Tensor),
    legal: &[Vec<usize>],
) -> Option<PrecisionError> {
    let mask = crate::mask::legal_mask_from_indices(legal, Device::Cpu);
    let log_softmax =
        |policy: &Tensor| crate::mask::mask_illegal(policy, &mask).log_softmax(-1, Kind::Float);
    let (log_p, log_q) = (log_softmax(&p), log_softmax(&q));
    // Illegal moves are -inf on both sides: p log(p/q) is 0 * nan there, so sum over legal only.
    let terms = (log_p.exp() * (&log_p - &log_q)).where_self(&mask, &Tensor::zeros_like(&log_p));
    let kl = Vec::<f64>::try_from(terms.sum_dim_intlist(-1, false, Kind::Double)).ok()?;
    let dv = Vec::<f64>::try_from((v - w).abs().to_kind(Kind::Double)).ok()?;
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
    let max = |x: &[f64]| x.iter().cloned().fold(0.0, f64::max);
    Some(PrecisionError {
        positions: n,
        mean_policy_kl: mean(&kl),
        max_policy_kl: max(&kl),
        mean_value_difference: mean(&dv),
        max_value_difference: max(&dv),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn support(native: bool) -> Bf16Support {
        Bf16Support {
            native,
            reason: if native { "native" } else { "no bf16 here" }.into(),
        }
    }

    #[test]
    fn bf16_without_native_support_falls_back_to_f32_with_a_notice() {
        let r = resolve(Precision::Bf16, &support(false));
        assert_eq!(r.kind, Kind::Float);
        assert!(r.fell_back);
        assert!(r.notice.contains("falling back"), "{}", r.notice);
        assert!(r.notice.contains("no bf16 here"), "{}", r.notice);
    }

    #[test]
    fn auto_takes_bf16_only_where_it_is_native() {
        assert_eq!(
            resolve(Precision::Auto, &support(true)).kind,
            Kind::BFloat16
        );
        let r = resolve(Precision::Auto, &support(false));
        assert_eq!(r.kind, Kind::Float);
        assert!(!r.fell_back);
        assert_eq!(resolve(Precision::F32, &support(true)).kind, Kind::Float);
        assert_eq!(
            resolve(Precision::Bf16, &support(true)).kind,
            Kind::BFloat16
        );
    }
}
