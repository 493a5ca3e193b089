//! Attention's Shaw terms and softmax for the bf16 pass on CPUs with AVX-512 BF16: the logits
//! `q_i . k_j + q_i . rq[b] + k_j . rk[b]` and the value-side term `sum_j a_ij rv[b]` (`b =
//! bucket(i, j)`) in bf16 products, and the softmax straight to the weights' bf16 pairs;
//! in f32 the three were nearly half of the tiny net's pass.
//!
//! Both keep [`super::attention`]'s windows: query `i`'s 64 buckets are eight runs of eight
//! consecutive ones, one per key rank. `vdpbf16ps` multiplies pairs, so the tables are packed
//! once per net ([`ShawPairs`]) with each pair where its instruction wants it:
//! - The logits reduce over channels, so `rq` and `rk` pair channels `2t` and `2t + 1` of a
//!   bucket, `[d_head / 2, 225]` per head; the keys are paired the same way per position,
//!   `[d_head / 2, 64]`. One 256-bit `vdpbf16ps` then gives eight keys of one rank two
//!   channels of `q . k` (query pair broadcast), of `q . rq` (the same broadcast against the
//!   window) or of `k . rk` (keys against the window lane by lane): three instructions where
//!   f32 spent two multiply-adds and an add per channel.
//! - The value-side term reduces over keys, so `rv` pairs bucket `b` with `b + 1` channel by
//!   channel, `[225, d_head]` per head: the weights' key pairs (files `2f` and `2f + 1` of a
//!   rank, already paired for `A V`) meet buckets `b` and `b + 1` of their window: sixteen
//!   channels of two keys an instruction, where an f32 FMA did eight channels of one key.
//!
//! The softmax ([`softmax_pairs`]) works on 512-bit rows and never stores the f32 weights:
//! `A V` (`super::dense_bf16::weighted_values`) and the value-side term read their pairs.
//!
//! Rounding `q`, `k` and the tables to bf16 moves a logit by about 2^-9 of the sum of its
//! terms' magnitudes, as in the dense products; the net's bound against libtorch's f32 is
//! `native_bf16_stays_within_its_bound_of_libtorch_f32`'s.

use std::arch::x86_64::*;

use super::attention::window_base;
use super::dense_bf16::{pair, round_row};
use super::weights::ShawW;
use cfzero_network::model::shaw::BUCKETS;

/// A layer's Shaw tables as bf16 pairs (see the module docs for the layouts).
#[derive(Debug, Clone, Default)]
pub struct ShawPairs {
    /// `pair(rq[b][2t], rq[b][2t + 1])` at `[head][t][b]`.
    rq: Vec<u32>,
    /// The same of the key-side table (scaled as [`ShawW::rk_t`]).
    rk: Vec<u32>,
    /// `pair(rv[b][c], rv[b + 1][c])` at `[head][b][c]`, a zero for `rv[225]`.
    rv: Vec<u32>,
    /// Channels per head.
    d_head: usize,
}

impl ShawPairs {
    /// Packs `w`'s tables.
    pub fn pack(w: &ShawW) -> ShawPairs {
        let d_head = w.d_head;
        let tp = d_head.div_ceil(2);
        let heads = w.rv.len() / (BUCKETS * d_head).max(1);
        let mut rq = vec![0; heads * tp * BUCKETS];
        let mut rk = vec![0; heads * tp * BUCKETS];
        let mut rv = vec![0; heads * BUCKETS * d_head];
        for h in 0..heads {
            for t in 0..tp {
                // The transposed tables' rows of channels 2t and 2t + 1 (a zero past an odd
                // width).
                let row = |table: &[f32], c: usize, b: usize| {
                    if c < d_head {
                        table[(h * d_head + c) * BUCKETS + b]
                    } else {
                        0.0
                    }
                };
                for b in 0..BUCKETS {
                    let at = (h * tp + t) * BUCKETS + b;
                    rq[at] = pair(row(&w.rq_t, 2 * t, b), row(&w.rq_t, 2 * t + 1, b));
                    rk[at] = pair(row(&w.rk_t, 2 * t, b), row(&w.rk_t, 2 * t + 1, b));
                }
            }
            let table = &w.rv[h * BUCKETS * d_head..(h + 1) * BUCKETS * d_head];
            for b in 0..BUCKETS {
                for c in 0..d_head {
                    let next = if b + 1 < BUCKETS {
                        table[(b + 1) * d_head + c]
                    } else {
                        0.0
                    };
                    rv[(h * BUCKETS + b) * d_head + c] = pair(table[b * d_head + c], next);
                }
            }
        }
        ShawPairs { rq, rk, rv, d_head }
    }
}

/// Scratch of [`shaw_logits`]: one head's queries and keys as channel pairs.
#[derive(Debug, Clone, Default)]
pub struct LogitPairs {
    /// `[64 (query), d_head / 2]`.
    queries: Vec<u32>,
    /// `[d_head / 2, 64 (key)]`.
    keys: Vec<u32>,
    /// The keys' pairs as rounded, `[64 (key), d_head / 2]`, before the transposition.
    key_rows: Vec<u32>,
}

/// Head `head`'s logits before bias and softmax, `logits[i][j] = q_i . k_j + q_i . rq[b] +
/// k_j . rk[b]` (`b = bucket(i, j)`), in bf16 products. `queries` and `keys` are the head's
/// 64 rows `stride` apart (`d_head` channels, a multiple of 2).
///
/// Queries `i` and `i + 8` (one file, two ranks) go together, as in the f32 kernel: query
/// `i + 8`'s window for key rank `R` is query `i`'s for rank `R - 1`, so two key ranks of
/// the pair read three windows of each table, and each key vector serves both queries.
/// Each of the twelve sums (two queries, two key ranks, three terms) waits on one
/// instruction a channel pair.
///
/// # Safety
/// The CPU must run the bf16 products (`super::dense_bf16::supported`).
#[target_feature(enable = "avx2,fma,avx512f,avx512bf16,avx512vl")]
pub unsafe fn shaw_logits(
    logits: &mut [f32],
    (queries, keys, stride): (&[f32], &[f32], usize),
    d_head: usize,
    tables: &ShawPairs,
    head: usize,
    scratch: &mut LogitPairs,
) {
    assert_eq!(tables.d_head, d_head, "tables packed for this width");
    let tp = d_head / 2;
    assert!(d_head.is_multiple_of(2) && tp >= 1, "head width");
    assert!(logits.len() >= 4096, "logits");
    assert!(
        queries.len() >= 63 * stride + d_head && keys.len() >= 63 * stride + d_head,
        "rows"
    );
    let span = tp * BUCKETS;
    let (rq, rk) = (
        &tables.rq[head * span..(head + 1) * span],
        &tables.rk[head * span..(head + 1) * span],
    );
    scratch.queries.resize(64 * tp, 0);
    scratch.keys.resize(tp * 64, 0);
    for (i, out) in scratch.queries.chunks_exact_mut(tp).enumerate() {
        // SAFETY: the caller's promise of the CPU; `tp` pairs for `d_head` values.
        unsafe { round_row(&queries[i * stride..][..d_head], out) };
    }
    scratch.key_rows.resize(64 * tp, 0);
    for (j, out) in scratch.key_rows.chunks_exact_mut(tp).enumerate() {
        // SAFETY: as above.
        unsafe { round_row(&keys[j * stride..][..d_head], out) };
    }
    for (j, row) in scratch.key_rows.chunks_exact(tp).enumerate() {
        for (t, &p) in row.iter().enumerate() {
            scratch.keys[t * 64 + j] = p;
        }
    }
    // The windows of row `t` reach from `t * BUCKETS + window_base(63)` up to `t * BUCKETS +
    // window_base(0) + 15 * 7 + 8`, inside the head's `tp * BUCKETS` pairs of each table
    // (`window_base(0) + 15 * 7 + 8 <= BUCKETS`, `super::attention`'s test).
    let (qp, kp) = (scratch.queries.as_ptr(), scratch.keys.as_ptr());
    let (rqp, rkp) = (rq.as_ptr(), rk.as_ptr());
    for file in 0..8 {
        for rank in (0..8).step_by(2) {
            let i = 8 * rank + file;
            let base1 = window_base(i + 8);
            for ranks in (0..8).step_by(2) {
                let zero = _mm256_setzero_ps();
                // [query of the pair][key rank of the two]: q . k, q . rq, k . rk.
                let (mut qk, mut qr, mut kr) = ([[zero; 2]; 2], [[zero; 2]; 2], [[zero; 2]; 2]);
                for t in 0..tp {
                    // SAFETY: `i + 8 <= 63` and `t < tp` inside the query pairs; key ranks
                    // `ranks + 1 <= 7` inside row `t` of the key pairs; the windows as above.
                    unsafe {
                        let x = [
                            broadcast(*qp.add(i * tp + t)),
                            broadcast(*qp.add((i + 8) * tp + t)),
                        ];
                        let kv = [
                            load(kp.add(t * 64 + 8 * ranks)),
                            load(kp.add(t * 64 + 8 * (ranks + 1))),
                        ];
                        let first = t * BUCKETS + base1 + 15 * ranks;
                        for w in 0..3 {
                            let (rqv, rkv) =
                                (load(rqp.add(first + 15 * w)), load(rkp.add(first + 15 * w)));
                            // Window `w` is query `i + 8`'s for key rank `ranks + w` and
                            // query `i`'s for `ranks + w - 1`.
                            for (q, u) in [(0, w.wrapping_sub(1)), (1, w)] {
                                if u < 2 {
                                    qk[q][u] = _mm256_dpbf16_ps(qk[q][u], x[q], kv[u]);
                                    qr[q][u] = _mm256_dpbf16_ps(qr[q][u], x[q], rqv);
                                    kr[q][u] = _mm256_dpbf16_ps(kr[q][u], kv[u], rkv);
                                }
                            }
                        }
                    }
                }
                for (q, query) in [i, i + 8].into_iter().enumerate() {
                    for u in 0..2 {
                        let sum: __m256 =
                            _mm256_add_ps(_mm256_add_ps(qk[q][u], qr[q][u]), kr[q][u]);
                        let out = &mut logits[query * 64 + 8 * (ranks + u)..][..8];
                        // SAFETY: eight values, checked by the slice.
                        unsafe { _mm256_storeu_ps(out.as_mut_ptr(), sum) };
                    }
                }
            }
        }
    }
}

/// Eight copies of one pair.
#[inline]
#[target_feature(enable = "avx2,fma,avx512f,avx512bf16,avx512vl")]
fn broadcast(x: u32) -> __m256bh {
    // SAFETY: a pair of bf16 is the same 32 bits as one `u32`.
    unsafe { std::mem::transmute::<__m256i, __m256bh>(_mm256_set1_epi32(x as i32)) }
}

/// Eight pairs from `p`.
///
/// # Safety
/// `p` points at eight readable pairs.
#[inline]
#[target_feature(enable = "avx2,fma,avx512f,avx512bf16,avx512vl")]
unsafe fn load(p: *const u32) -> __m256bh {
    // SAFETY: the caller's promise; a pair of bf16 is the same 32 bits as one `u32`.
    unsafe { std::mem::transmute::<__m256i, __m256bh>(_mm256_loadu_si256(p as *const __m256i)) }
}

/// Adds each query's value-side Shaw term `sum_j a_ij rv[bucket(i, j)]` to its output
/// `out[i * ldo..][..d_head]` (where `A V` already is), for head `head` in bf16 products.
/// `weights` are the head's attention weights as pairs of keys, 32 a query (as
/// `super::dense_bf16::ValuePairs` holds them); `d_head` is a multiple of 16 up to 64.
///
/// # Safety
/// The CPU must run the bf16 products (`super::dense_bf16::supported`).
#[target_feature(enable = "avx2,fma,avx512f,avx512bf16,avx512vl")]
pub unsafe fn add_shaw_values(
    out: &mut [f32],
    ldo: usize,
    weights: &[u32],
    tables: &ShawPairs,
    head: usize,
    d_head: usize,
) {
    assert_eq!(tables.d_head, d_head, "tables packed for this width");
    let span = BUCKETS * d_head;
    let rv = &tables.rv[head * span..(head + 1) * span];
    // SAFETY: the caller's promise of the CPU.
    unsafe {
        match d_head {
            16 => shaw_values::<1>(out, ldo, weights, rv),
            32 => shaw_values::<2>(out, ldo, weights, rv),
            48 => shaw_values::<3>(out, ldo, weights, rv),
            64 => shaw_values::<4>(out, ldo, weights, rv),
            _ => panic!("head width {d_head} is not 16, 32, 48 or 64"),
        }
    }
}

/// [`add_shaw_values`] for `P` groups of 16 channels. Query `i`'s key pair `m` (files `2f`
/// and `2f + 1` of rank `R`, `m = 4R + f`) meets the table's pair at bucket
/// `window_base(i) + 15 R + 2 f`; the four file pairs of a rank are summed apart, so each
/// sum waits on one instruction every four.
#[inline]
#[target_feature(enable = "avx2,fma,avx512f,avx512bf16,avx512vl")]
unsafe fn shaw_values<const P: usize>(out: &mut [f32], ldo: usize, weights: &[u32], rv: &[u32]) {
    let dh = 16 * P;
    assert!(weights.len() >= 64 * 32, "weights");
    assert!(out.len() >= 63 * ldo + dh, "outputs");
    // The furthest bucket read is `window_base(0) + 15 * 7 + 6`, whose `dh` pairs end inside
    // the table (`window_base(0) + 15 * 7 + 8 <= BUCKETS`).
    assert!(rv.len() >= (window_base(0) + 15 * 7 + 7) * dh, "table");
    let (wp, rp) = (weights.as_ptr(), rv.as_ptr());
    for i in 0..64 {
        let base = window_base(i);
        let mut acc: [[__m512; P]; 4] = [[_mm512_setzero_ps(); P]; 4];
        for rank in 0..8 {
            for (f, sums) in acc.iter_mut().enumerate() {
                let b = base + 15 * rank + 2 * f;
                // SAFETY: pair `4 rank + f < 32` of query `i < 64`; bucket `b`'s `dh` pairs
                // inside the table (asserted above); a pair of bf16 is one `u32`.
                unsafe {
                    let x = std::mem::transmute::<__m512i, __m512bh>(_mm512_set1_epi32(
                        *wp.add(i * 32 + 4 * rank + f) as i32,
                    ));
                    for (p, sum) in sums.iter_mut().enumerate() {
                        let r = std::mem::transmute::<__m512i, __m512bh>(_mm512_loadu_si512(
                            rp.add(b * dh + 16 * p) as *const __m512i,
                        ));
                        *sum = _mm512_dpbf16_ps(*sum, x, r);
                    }
                }
            }
        }
        for p in 0..P {
            let o = &mut out[i * ldo + 16 * p..][..16];
            let sum = _mm512_add_ps(
                _mm512_add_ps(acc[0][p], acc[1][p]),
                _mm512_add_ps(acc[2][p], acc[3][p]),
            );
            // SAFETY: sixteen values, checked by the slice.
            unsafe {
                _mm512_storeu_ps(
                    o.as_mut_ptr(),
                    _mm512_add_ps(_mm512_loadu_ps(o.as_ptr()), sum),
                )
            };
        }
    }
}

/// The softmax's `e^x` for `x <= 0`, to the precision of the bf16 weights it feeds: `x =
/// n ln 2 + r` with `|r| <= ln 2 / 2`, `e^r` by its Taylor polynomial of degree 4 (relative
/// error below `r^5 / 120`, 4.2e-5, a ninetieth of bf16's rounding, up to 2^-8 of a value) and `2^n` by
/// `vscalefps`, which needs no integer exponent arithmetic and flushes far-negative `n` to
/// zero.
#[inline]
#[target_feature(enable = "avx2,fma,avx512f,avx512bf16,avx512vl")]
fn exp_for_weights(x: __m512) -> __m512 {
    use super::kernels::exp_constants as c;
    let x = _mm512_max_ps(x, _mm512_set1_ps(c::LOW));
    let n = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
        _mm512_mul_ps(x, _mm512_set1_ps(c::LOG2E)),
    );
    let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(c::LN2_HI), x);
    let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(c::LN2_LO), r);
    let mut p = _mm512_set1_ps(1.0 / 24.0);
    for k in [1.0 / 6.0, 0.5, 1.0, 1.0] {
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(k));
    }
    _mm512_scalef_ps(p, n)
}

/// The head's attention weights as bf16 pairs of keys (`out[i * 32 + m] = pair(a_i,2m,
/// a_i,2m+1)`, what [`super::dense_bf16::weighted_values`] reads): the softmax over keys of
/// each row of `logits` (`[64, 64]`) plus the Shaw tables' bias and the additive bias (both
/// `[64, 64]`, if any). A row is four 512-bit vectors from load to pairs; the f32 weights
/// are never stored.
///
/// # Safety
/// The CPU must run the bf16 products (`super::dense_bf16::supported`).
#[target_feature(enable = "avx2,fma,avx512f,avx512bf16,avx512vl")]
pub unsafe fn softmax_pairs(
    logits: &[f32],
    table_bias: Option<&[f32]>,
    bias: Option<&[f32]>,
    out: &mut [u32],
) {
    assert!(logits.len() >= 4096 && out.len() >= 64 * 32, "rows");
    assert!(table_bias.is_none_or(|b| b.len() >= 4096), "table bias");
    assert!(bias.is_none_or(|b| b.len() >= 4096), "bias");
    for i in 0..64 {
        let row = i * 64;
        // SAFETY: sixteen values at `row + 16 k <= 4080` of each `[64, 64]`, asserted above;
        // 32 pairs written at `32 i`, inside `out`.
        unsafe {
            let mut v: [__m512; 4] =
                std::array::from_fn(|k| _mm512_loadu_ps(logits.as_ptr().add(row + 16 * k)));
            for b in [table_bias, bias].into_iter().flatten() {
                for (k, v) in v.iter_mut().enumerate() {
                    *v = _mm512_add_ps(*v, _mm512_loadu_ps(b.as_ptr().add(row + 16 * k)));
                }
            }
            let max = _mm512_set1_ps(_mm512_reduce_max_ps(_mm512_max_ps(
                _mm512_max_ps(v[0], v[1]),
                _mm512_max_ps(v[2], v[3]),
            )));
            let e: [__m512; 4] = std::array::from_fn(|k| exp_for_weights(_mm512_sub_ps(v[k], max)));
            let total = _mm512_reduce_add_ps(_mm512_add_ps(
                _mm512_add_ps(e[0], e[1]),
                _mm512_add_ps(e[2], e[3]),
            ));
            let inv = _mm512_set1_ps(1.0 / total);
            for half in 0..2 {
                let (lo, hi) = (
                    _mm512_mul_ps(e[2 * half], inv),
                    _mm512_mul_ps(e[2 * half + 1], inv),
                );
                // 32 weights in order are 16 pairs of keys, the lower key in the low half.
                let pairs = std::mem::transmute::<__m512bh, __m512i>(_mm512_cvtne2ps_pbh(hi, lo));
                _mm512_storeu_si512(
                    out.as_mut_ptr().add(32 * i + 16 * half) as *mut __m512i,
                    pairs,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::dense_bf16::supported;
    use super::*;
    use cfzero_network::model::shaw::bucket;

    /// `x` rounded to bf16, as f64.
    fn round(x: f32) -> f64 {
        half::bf16::from_f32(x).to_f64()
    }

    /// Values in about [-1.5, 1.5] from a seed, none repeating within a table.
    fn values(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| (((i * 7919 + seed * 104_729) % 1013) as f32 - 506.0) / 337.0)
            .collect()
    }

    /// Tables of `heads` heads of `dh` channels, laid out as the loader lays them.
    fn tables(heads: usize, dh: usize) -> ShawW {
        ShawW {
            rq_t: values(heads * dh * BUCKETS, 1),
            rk_t: values(heads * dh * BUCKETS, 2),
            rv: values(heads * BUCKETS * dh, 3),
            bias: values(heads * 4096, 4),
            d_head: dh,
            pairs: None,
        }
    }

    #[test]
    fn shaw_logits_match_the_rounded_sums() {
        if !supported() {
            eprintln!("skipped: this CPU lacks AVX-512 BF16");
            return;
        }
        let mut scratch = LogitPairs::default();
        for dh in [2, 16, 32, 48] {
            let (heads, stride) = (2, dh + 3);
            let w = tables(heads, dh);
            let pairs = ShawPairs::pack(&w);
            let (q, k) = (values(64 * stride, 5), values(64 * stride, 6));
            for head in 0..heads {
                let mut logits = vec![f32::NAN; 4096];
                // SAFETY: checked above.
                unsafe {
                    shaw_logits(
                        &mut logits,
                        (&q, &k, stride),
                        dh,
                        &pairs,
                        head,
                        &mut scratch,
                    )
                };
                for i in 0..64 {
                    for j in 0..64 {
                        let b = bucket(i, j);
                        let terms = (0..dh).flat_map(|c| {
                            let (qc, kc) = (round(q[i * stride + c]), round(k[j * stride + c]));
                            let t = (head * dh + c) * BUCKETS + b;
                            [qc * kc, qc * round(w.rq_t[t]), kc * round(w.rk_t[t])]
                        });
                        let scale: f64 = terms.clone().map(f64::abs).sum::<f64>() + 1.0;
                        let (want, got) = (terms.sum::<f64>(), logits[i * 64 + j] as f64);
                        assert!(
                            (got - want).abs() <= 1e-6 * scale,
                            "{dh} head {head}: ({i}, {j}) {got} {want}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn shaw_values_add_the_rounded_sums() {
        if !supported() {
            eprintln!("skipped: this CPU lacks AVX-512 BF16");
            return;
        }
        for dh in [16, 32, 48, 64] {
            let (heads, ldo) = (2, dh + 5);
            let w = tables(heads, dh);
            let pairs = ShawPairs::pack(&w);
            // Weight pairs of keys (2m, 2m + 1), low half first, as the softmax writes them.
            let a: Vec<f32> = values(4096, 7).iter().map(|x| x.abs() / 64.0).collect();
            let weights: Vec<u32> = a
                .chunks_exact(2)
                .map(|two| super::super::dense_bf16::pair(two[0], two[1]))
                .collect();
            let before = values(64 * ldo, 8);
            for head in 0..heads {
                let mut out = before.clone();
                // SAFETY: checked above.
                unsafe { add_shaw_values(&mut out, ldo, &weights, &pairs, head, dh) };
                for i in 0..64 {
                    for c in 0..dh {
                        let terms = (0..64).map(|j| {
                            let b = bucket(i, j);
                            round(a[i * 64 + j]) * round(w.rv[(head * BUCKETS + b) * dh + c])
                        });
                        let scale: f64 = terms.clone().map(f64::abs).sum::<f64>() + 1.0;
                        let want = before[i * ldo + c] as f64 + terms.sum::<f64>();
                        let got = out[i * ldo + c] as f64;
                        assert!(
                            (got - want).abs() <= 1e-6 * scale,
                            "{dh} head {head}: ({i}, {c}) {got} {want}"
                        );
                    }
                    // Nothing written between a query's channels and the next query's.
                    let gap = i * ldo + dh..(i * ldo + ldo).min(64 * ldo);
                    assert_eq!(out[gap.clone()], before[gap]);
                }
            }
        }
    }

    #[test]
    fn softmax_pairs_are_the_rounded_softmax() {
        if !supported() {
            eprintln!("skipped: this CPU lacks AVX-512 BF16");
            return;
        }
        // Logits up to about 12 apart, so some weights are tiny; both biases.
        let logits: Vec<f32> = values(4096, 9).iter().map(|x| 4.0 * x).collect();
        let (table_bias, bias) = (values(4096, 10), values(4096, 11));
        for (tb, b) in [
            (None, None),
            (Some(&table_bias), None),
            (Some(&table_bias), Some(&bias)),
        ] {
            let mut out = vec![0u32; 64 * 32];
            // SAFETY: checked above.
            unsafe { softmax_pairs(&logits, tb.map(|v| &v[..]), b.map(|v| &v[..]), &mut out) };
            for i in 0..64 {
                let x: Vec<f64> = (0..64)
                    .map(|j| {
                        let at = i * 64 + j;
                        logits[at] as f64
                            + tb.map_or(0.0, |v| v[at] as f64)
                            + b.map_or(0.0, |v| v[at] as f64)
                    })
                    .collect();
                let max = x.iter().cloned().fold(f64::MIN, f64::max);
                let total: f64 = x.iter().map(|v| (v - max).exp()).sum();
                for j in 0..64 {
                    let want = (x[j] - max).exp() / total;
                    let bits = (out[i * 32 + j / 2] >> (16 * (j % 2))) as u16;
                    let got = half::bf16::from_bits(bits).to_f64();
                    // bf16's rounding (up to 2^-8 of the weight) and a little for the
                    // polynomial and the sum's f32.
                    assert!(
                        (got - want).abs() <= want * (1.0 / 256.0 + 1e-4) + 1e-30,
                        "({i}, {j}) {got} {want}"
                    );
                }
            }
        }
    }
}
