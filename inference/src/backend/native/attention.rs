//! One head of one position's attention, fused: the logits with their position term, the
//! softmax and the weighted values, all on `64 x 64` tiles that stay in the L1 cache.
//!
//! The Shaw terms are computed without gathering the tables to (query, key) pairs. For a
//! query square `i`, the buckets `bucket(i, j)` of the 64 key squares form an `8 x 8` window
//! of the `15 x 15` displacement grid: `bucket(i, j) = base(i) + 15 rank(j) + file(j)` with
//! `base(i) = 15 (7 - rank(i)) + (7 - file(i))`. So the eight keys of one rank read eight
//! consecutive buckets, and with the tables stored transposed (`[d_head, 225]`) and the keys
//! too (`[d_head, 64]`), one row of logits is, for each channel `t`, eight vectors of eight
//! keys: `q_i[t] (k[t] + rq[t][window]) + k[t] rk[t][window]`. The value-side term adds
//! `rv[bucket(i, j)]` to `v_j` under the same weights.
//!
//! This file computes in f32 on [`Lanes`]; the bf16 pass runs the same windows in bf16
//! products (`super::attention_bf16`, `super::dense_bf16::weighted_values`) and keeps only
//! the f32 logits of nets without Shaw tables from here.

use super::simd::Lanes;
use super::weights::ShawW;
use cfzero_network::model::shaw::BUCKETS;

/// Scratch of one head: the `[64, 64]` tile and the keys transposed.
#[derive(Debug, Clone)]
pub struct HeadScratch {
    /// Logits, then probabilities, `[64 (query), 64 (key)]`.
    logits: Vec<f32>,
    /// The head's keys transposed, `[d_head, 64]`.
    keys_t: Vec<f32>,
    /// The weights and values as bf16 pairs, for the bf16 pass.
    #[cfg(target_arch = "x86_64")]
    pairs: super::dense_bf16::ValuePairs,
    /// The queries and keys as bf16 pairs, for the bf16 pass's Shaw logits.
    #[cfg(target_arch = "x86_64")]
    logit_pairs: super::attention_bf16::LogitPairs,
}

impl HeadScratch {
    /// Scratch for heads of width `d_head`.
    pub fn new(d_head: usize) -> HeadScratch {
        HeadScratch {
            logits: vec![0.0; 4096],
            keys_t: vec![0.0; d_head * 64],
            #[cfg(target_arch = "x86_64")]
            pairs: Default::default(),
            #[cfg(target_arch = "x86_64")]
            logit_pairs: Default::default(),
        }
    }
}

/// The rows of one head of one position inside the fused q, k, v rows.
pub struct HeadInput<'a> {
    /// The position's 64 rows of q (scaled), k and v, `stride` apart.
    pub qkv: &'a [f32],
    /// The distance between rows (`3 d`).
    pub stride: usize,
    /// The head's first channel.
    pub offset: usize,
    /// The model width `d` (k starts at `d`, v at `2 d` within a row).
    pub d: usize,
    /// The head width.
    pub d_head: usize,
    /// Whether `A V` may run in bf16 products (set only where the CPU runs them).
    pub bf16: bool,
}

/// The first bucket of query square `i`'s window, `15 (7 - rank) + (7 - file)`.
#[inline(always)]
pub(super) fn window_base(i: usize) -> usize {
    15 * (7 - i / 8) + (7 - i % 8)
}

/// The span of a transposed table row that the windows of every query reach: `base` up to
/// `15 * 14 + 14`, plus the eight lanes of the last load.
const WINDOW_SPAN: usize = 15 * 7 + 8;

/// The head's logits `[64, 64]` before their biases and softmax ([`softmax_rows`]): `q_i .
/// k_j` plus, with Shaw tables, `q_i . rq[b] + k_j . rk[b]` (`b = bucket(i, j)`; the
/// tables' bias is the triple's third, not read here). `queries` are the 64 rows `stride`
/// apart; `keys_t` is `[d_head, 64]`.
#[inline(always)]
fn logits<L: Lanes>(
    logits: &mut [f32],
    queries: &[f32],
    stride: usize,
    keys_t: &[f32],
    d_head: usize,
    tables: Option<(&[f32], &[f32], &[f32])>,
) {
    assert!(keys_t.len() >= d_head * 64 && logits.len() >= 4096);
    assert!(queries.len() >= 63 * stride + d_head);
    let query = |i: usize| &queries[i * stride..i * stride + d_head];
    match tables {
        Some((rq_t, rk_t, _)) => {
            // Every window starts at `t * BUCKETS + base` with `base <= window_base(0)`
            // and reaches `WINDOW_SPAN` values: checked once here rather than on every
            // channel (the per-channel checks were a fifth of the loop's instructions).
            let end = (d_head.max(1) - 1) * BUCKETS + window_base(0) + WINDOW_SPAN;
            assert!(rq_t.len() >= end && rk_t.len() >= end);
            for file in 0..8 {
                for rank in (0..8).step_by(2) {
                    let i = 8 * rank + file;
                    let (q0, q1) = (query(i), query(i + 8));
                    for ranks in (0..8).step_by(2) {
                        // SAFETY: the ranges were asserted above (see `shaw_pair`).
                        let (a0, a1) = unsafe {
                            shaw_pair::<L>(q0, q1, keys_t.as_ptr(), (rq_t, rk_t), i, ranks)
                        };
                        for u in 0..2 {
                            a0[u].store(&mut logits[i * 64 + 8 * (ranks + u)..]);
                            a1[u].store(&mut logits[(i + 8) * 64 + 8 * (ranks + u)..]);
                        }
                    }
                }
            }
        }
        None => {
            for i in 0..64 {
                let mut acc = [L::zero(); 8];
                for (t, &x) in query(i).iter().enumerate() {
                    let x = L::splat(x);
                    let k = &keys_t[t * 64..t * 64 + 64];
                    for (rank, a) in acc.iter_mut().enumerate() {
                        *a = a.mul_add(x, L::load(&k[rank * 8..]));
                    }
                }
                for (rank, a) in acc.iter().enumerate() {
                    a.store(&mut logits[i * 64 + rank * 8..]);
                }
            }
        }
    }
}

/// Each row of `logits` (`[64, 64]`) plus the Shaw tables' bias and the additive bias (both
/// `[64, 64]`, if any), through a softmax over its keys.
#[inline(always)]
fn softmax_rows<L: Lanes>(logits: &mut [f32], table_bias: Option<&[f32]>, bias: Option<&[f32]>) {
    for i in 0..64 {
        let row = &mut logits[i * 64..i * 64 + 64];
        let mut acc: [L; 8] = std::array::from_fn(|rank| L::load(&row[rank * 8..]));
        if let Some(table_bias) = table_bias {
            let b = &table_bias[i * 64..i * 64 + 64];
            for (rank, a) in acc.iter_mut().enumerate() {
                *a = a.add(L::load(&b[rank * 8..]));
            }
        }
        if let Some(b) = bias {
            let b = &b[i * 64..i * 64 + 64];
            for (rank, a) in acc.iter_mut().enumerate() {
                *a = a.add(L::load(&b[rank * 8..]));
            }
        }
        // Softmax over the row while it is in registers.
        let max = acc.iter().fold(acc[0], |m, &a| m.max(a)).max_lane();
        let max = L::splat(max);
        let mut total = L::zero();
        for a in acc.iter_mut() {
            *a = a.sub(max).exp();
            total = total.add(*a);
        }
        let inv = L::splat(1.0 / total.sum());
        for (rank, a) in acc.iter().enumerate() {
            a.mul(inv).store(&mut row[rank * 8..]);
        }
    }
}

/// The Shaw logits `q_i . (k_j + rq[b]) + k_j . rk[b]` (`b = bucket(i, j)`) of two queries
/// of one file, `i` and `i + 8` (the next rank), against the keys of ranks `ranks` and
/// `ranks + 1`: two vectors of eight keys each.
///
/// The pair shares its loads. Query `i + 8`'s window base is query `i`'s less one rank of
/// the grid (`15`), so its window for key rank `R` is query `i`'s for rank `R - 1`: the two
/// queries' four windows are three distinct loads per table, and each key vector serves
/// both (10 loads per channel for four vectors of logits, where one query at a time needs
/// 12.5). The two terms are summed apart (`q (k + rq)` and `k rk`), so that each of the
/// eight sums waits on one multiply-add a channel, not two, and all of them stay in
/// registers: with one sum for both terms the loop either waits on the chain or, with
/// more key ranks at a time, spills sums to the stack.
///
/// # Safety
/// `i`'s rank is at most 6; `keys` holds `64 q0.len()` values; the tables hold
/// `(q0.len() - 1) * BUCKETS + window_base(0) + WINDOW_SPAN`; `q1` is as long as `q0`.
#[inline(always)]
unsafe fn shaw_pair<L: Lanes>(
    q0: &[f32],
    q1: &[f32],
    keys: *const f32,
    (rq, rk): (&[f32], &[f32]),
    i: usize,
    ranks: usize,
) -> ([L; 2], [L; 2]) {
    // Window `w` (0..3) of the pair starts at `base1 + 15 (ranks + w)`, `base1` being query
    // `i + 8`'s base: it is query `i + 8`'s for key rank `ranks + w` and query `i`'s for
    // key rank `ranks + w - 1`.
    let base1 = window_base(i + 8);
    let (mut q_0, mut q_1) = ([L::zero(); 2], [L::zero(); 2]);
    let (mut k_0, mut k_1) = ([L::zero(); 2], [L::zero(); 2]);
    for (t, (&x0, &x1)) in q0.iter().zip(q1).enumerate() {
        let (x0, x1) = (L::splat(x0), L::splat(x1));
        let first = t * BUCKETS + base1 + 15 * ranks;
        // SAFETY: key row `t * 64 + 8 ranks + 8 u + 8 <= 64 (t + 1)`; windows from `first`
        // up to `t * BUCKETS + base1 + 15 (ranks + 2) + 8 <= t * BUCKETS + window_base(i)
        // + WINDOW_SPAN`, inside the caller's bounds.
        unsafe {
            let kv: [L; 2] =
                std::array::from_fn(|u| L::load_ptr(keys.add(t * 64 + 8 * (ranks + u))));
            for w in 0..3 {
                let rqv = L::load_ptr(rq.as_ptr().add(first + 15 * w));
                let rkv = L::load_ptr(rk.as_ptr().add(first + 15 * w));
                if w >= 1 {
                    let u = w - 1;
                    q_0[u] = q_0[u].mul_add(x0, kv[u].add(rqv));
                    k_0[u] = k_0[u].mul_add(kv[u], rkv);
                }
                if w <= 1 {
                    q_1[w] = q_1[w].mul_add(x1, kv[w].add(rqv));
                    k_1[w] = k_1[w].mul_add(kv[w], rkv);
                }
            }
        }
    }
    (
        std::array::from_fn(|u| q_0[u].add(k_0[u])),
        std::array::from_fn(|u| q_1[u].add(k_1[u])),
    )
}

/// One query's output `sum_j a_j (v_j + rv[bucket(i, j)])` (without `rv` when `rv` is none)
/// into `out` (`d_head` values), for weights `a` over the 64 keys.
#[inline(always)]
fn weighted_values<L: Lanes>(
    out: &mut [f32],
    a: &[f32],
    values: &[f32],
    stride: usize,
    rv: Option<&[f32]>,
    i: usize,
) {
    let dh = out.len();
    let base = window_base(i);
    if !dh.is_multiple_of(8) {
        out.fill(0.0);
        for (j, &w) in a.iter().enumerate() {
            let v = &values[j * stride..j * stride + dh];
            match rv {
                Some(rv) => {
                    let b = base + 15 * (j / 8) + j % 8;
                    for (o, (v, r)) in out.iter_mut().zip(v.iter().zip(&rv[b * dh..b * dh + dh])) {
                        *o += w * (v + r);
                    }
                }
                None => {
                    for (o, v) in out.iter_mut().zip(v) {
                        *o += w * v;
                    }
                }
            }
        }
        return;
    }
    match dh / 8 {
        1 => weighted_groups::<L, 1>(out, a, values, stride, rv, base),
        2 => weighted_groups::<L, 2>(out, a, values, stride, rv, base),
        4 => weighted_groups::<L, 4>(out, a, values, stride, rv, base),
        _ => {
            for c in (0..dh).step_by(8) {
                let sub = &mut out[c..c + 8];
                let rv_c = rv.map(|rv| (rv, c));
                weighted_group_at::<L>(sub, a, &values[c..], stride, rv_c, base, dh);
            }
        }
    }
}

/// [`weighted_values`] for heads of `8 G` channels (8, 16 or 32): `G` vectors a key, the
/// even and odd files of each rank summed apart (one sum would wait on each multiply-add's
/// latency). The two sums are separate locals, never one array indexed by the key's parity:
/// that form kept them in memory, and the store and reload on every key made this loop a
/// quarter of the tiny net's pass. The ranges the keys reach are checked once, before the
/// loop: checked slices and loads put two compares and branches beside every load, and
/// the loop ran at about 22 instructions a key where it needs eight.
#[inline(always)]
fn weighted_groups<L: Lanes, const G: usize>(
    out: &mut [f32],
    a: &[f32],
    values: &[f32],
    stride: usize,
    rv: Option<&[f32]>,
    base: usize,
) {
    const { assert!(G >= 1 && G <= 4) };
    let dh = 8 * G;
    assert!(a.len() >= 64 && out.len() >= dh && stride >= dh);
    assert!(values.len() >= 63 * stride + dh);
    let mut even = [L::zero(); G];
    let mut odd = [L::zero(); G];
    // One key: `acc += w (v + r)` over the groups (`r` the key's table row, if any).
    //
    // SAFETY (callers): `v` and `r`, where given, point at `dh` readable values.
    #[inline(always)]
    unsafe fn step<L: Lanes, const G: usize>(
        acc: &mut [L; G],
        w: f32,
        v: *const f32,
        r: Option<*const f32>,
    ) {
        let w = L::splat(w);
        for (g, acc) in acc.iter_mut().enumerate() {
            // SAFETY: `8 g + 8 <= dh`, inside the caller's promise.
            let mut x = unsafe { L::load_ptr(v.add(8 * g)) };
            if let Some(r) = r {
                x = x.add(unsafe { L::load_ptr(r.add(8 * g)) });
            }
            *acc = acc.mul_add(w, x);
        }
    }
    // Key `j`'s row; read only for `j <= 63`, inside `values` (asserted above).
    let v = |j: usize| values.as_ptr().wrapping_add(j * stride);
    // Two loops, with and without tables, so that neither tests for them on every key.
    match rv {
        Some(rv) => {
            // The last rank's rows end at `base + 15 * 7 + 8` rows.
            assert!(rv.len() >= (base + 15 * 7 + 8) * dh);
            for rank in 0..8 {
                // The rank's eight keys read eight consecutive table rows.
                let rows = rv[(base + 15 * rank) * dh..].as_ptr();
                for file in (0..8).step_by(2) {
                    let j = 8 * rank + file;
                    // SAFETY: key `j + 1 <= 63` starts at most `63 stride` into `values`
                    // and row `file + 1 <= 7` inside the rank's eight, both asserted above.
                    unsafe {
                        let r = rows.add(file * dh);
                        step::<L, G>(&mut even, a[j], v(j), Some(r));
                        step::<L, G>(&mut odd, a[j + 1], v(j + 1), Some(r.add(dh)));
                    }
                }
            }
        }
        None => {
            for j in (0..64).step_by(2) {
                // SAFETY: key `j + 1 <= 63`, asserted above.
                unsafe {
                    step::<L, G>(&mut even, a[j], v(j), None);
                    step::<L, G>(&mut odd, a[j + 1], v(j + 1), None);
                }
            }
        }
    }
    for g in 0..G {
        even[g].add(odd[g]).store(&mut out[8 * g..]);
    }
}

/// One 8-channel group of [`weighted_values`] for heads of other widths (`dh` channels, this
/// group's first at `c` of the table rows).
#[inline(always)]
fn weighted_group_at<L: Lanes>(
    out: &mut [f32],
    a: &[f32],
    values: &[f32],
    stride: usize,
    rv: Option<(&[f32], usize)>,
    base: usize,
    dh: usize,
) {
    let (mut even, mut odd) = (L::zero(), L::zero());
    for (j, &w) in a[..64].iter().enumerate() {
        let mut x = L::load(&values[j * stride..]);
        if let Some((rv, c)) = rv {
            let b = base + 15 * (j / 8) + j % 8;
            x = x.add(L::load(&rv[b * dh + c..]));
        }
        if j % 2 == 0 {
            even = even.mul_add(L::splat(w), x);
        } else {
            odd = odd.mul_add(L::splat(w), x);
        }
    }
    even.add(odd).store(out);
}

/// One head of one position's attention: writes the head's `d_head` output channels of each
/// of the 64 rows of `z` (`z[r * z_stride + offset + c]`). `shaw` is the layer's tables (this
/// is head `head`), `bias` an additive `[64, 64]` logit bias (smolgen's), if any.
#[inline(always)]
pub fn attend_head<L: Lanes>(
    input: &HeadInput,
    head: usize,
    shaw: Option<&ShawW>,
    bias: Option<&[f32]>,
    scratch: &mut HeadScratch,
    z: &mut [f32],
    z_stride: usize,
) {
    let (d, dh, stride, off) = (input.d, input.d_head, input.stride, input.offset);
    let bf16 = input.bf16;
    let qkv = input.qkv;
    let keys = &qkv[d + off..];
    let span = dh * BUCKETS;
    let tables = shaw.map(|s| {
        (
            &s.rq_t[head * span..(head + 1) * span],
            &s.rk_t[head * span..(head + 1) * span],
            &s.bias[head * 4096..(head + 1) * 4096],
        )
    });
    let values = &qkv[2 * d + off..];
    let table_bias = tables.map(|(_, _, b)| b);
    #[cfg(target_arch = "x86_64")]
    if bf16 && dh.is_multiple_of(16) && dh <= 64 && shaw.is_none_or(|s| s.pairs.is_some()) {
        // The bf16 pass: the Shaw logits in bf16 products (the tables' pairs were packed with
        // the layers, `NativeWeights::use_bf16`), the softmax straight to the weights' pairs,
        // `A V` and the value-side Shaw term in bf16 products.
        let pairs = shaw.and_then(|s| s.pairs.as_ref());
        // SAFETY: `bf16` is set only where the CPU runs the bf16 products (the layers were
        // packed for them, `NativeBackend::bf16`).
        unsafe {
            match pairs {
                Some(pairs) => super::attention_bf16::shaw_logits(
                    &mut scratch.logits,
                    (&qkv[off..], keys, stride),
                    dh,
                    pairs,
                    head,
                    &mut scratch.logit_pairs,
                ),
                None => f32_logits::<L>(scratch, (&qkv[off..], keys, stride), dh, None),
            }
            super::attention_bf16::softmax_pairs(
                &scratch.logits,
                table_bias,
                bias,
                scratch.pairs.weights_mut(),
            );
            super::dense_bf16::weighted_values(
                &mut z[off..],
                z_stride,
                values,
                stride,
                dh,
                &mut scratch.pairs,
            );
            if let Some(pairs) = pairs {
                super::attention_bf16::add_shaw_values(
                    &mut z[off..],
                    z_stride,
                    scratch.pairs.weights(),
                    pairs,
                    head,
                    dh,
                );
            }
        }
        return;
    }
    f32_logits::<L>(scratch, (&qkv[off..], keys, stride), dh, tables);
    softmax_rows::<L>(&mut scratch.logits, table_bias, bias);
    let rv = shaw.map(|s| &s.rv[head * span..(head + 1) * span]);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bf16;
    for i in 0..64 {
        let out = &mut z[i * z_stride + off..i * z_stride + off + dh];
        weighted_values::<L>(
            out,
            &scratch.logits[i * 64..i * 64 + 64],
            values,
            stride,
            rv,
            i,
        );
    }
}

/// [`logits`] into the scratch's tile from the head's 64 query and key rows (`stride` apart,
/// `dh` channels), the keys transposed first.
#[inline(always)]
fn f32_logits<L: Lanes>(
    scratch: &mut HeadScratch,
    (queries, keys, stride): (&[f32], &[f32], usize),
    dh: usize,
    tables: Option<(&[f32], &[f32], &[f32])>,
) {
    transpose_keys::<L>(&mut scratch.keys_t, keys, stride, dh);
    logits::<L>(
        &mut scratch.logits,
        queries,
        stride,
        &scratch.keys_t,
        dh,
        tables,
    );
}

/// The head's keys (64 rows `stride` apart, `dh` channels) transposed into `keys_t`
/// (`[dh, 64]`), for the f32 logits.
#[inline(always)]
fn transpose_keys<L: Lanes>(keys_t: &mut [f32], keys: &[f32], stride: usize, dh: usize) {
    if dh.is_multiple_of(8) {
        // 8 x 8 blocks through registers.
        for j in (0..64).step_by(8) {
            for t in (0..dh).step_by(8) {
                let rows: [L; 8] = std::array::from_fn(|u| L::load(&keys[(j + u) * stride + t..]));
                for (u, row) in L::transpose8(rows).into_iter().enumerate() {
                    row.store(&mut keys_t[(t + u) * 64 + j..]);
                }
            }
        }
    } else {
        for j in 0..64 {
            for t in 0..dh {
                keys_t[t * 64 + j] = keys[j * stride + t];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfzero_network::model::shaw::bucket;

    #[test]
    fn window_bases_give_every_bucket() {
        for i in 0..64 {
            for j in 0..64 {
                assert_eq!(window_base(i) + 15 * (j / 8) + j % 8, bucket(i, j));
            }
            assert!(window_base(i) + WINDOW_SPAN <= BUCKETS);
        }
    }
}
