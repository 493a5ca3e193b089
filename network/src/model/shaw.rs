//! Shaw relative-position attention: learned tables indexed by the displacement between the
//! query square and the key square (15 x 15 buckets), gathered once per forward pass.

use std::sync::OnceLock;

use tch::{Device, Kind, Tensor};

use super::layers::pad_rows;

/// Number of displacement buckets: (delta rank, delta file) in -7..=7 each.
pub const BUCKETS: usize = 225;

/// The bucket of query square `i` and key square `j`: (rank_j - rank_i + 7) * 15 + (file_j - file_i + 7).
pub fn bucket(i: usize, j: usize) -> usize {
    let (ri, fi) = ((i / 8) as i64, (i % 8) as i64);
    let (rj, fj) = ((j / 8) as i64, (j % 8) as i64);
    ((rj - ri + 7) * 15 + (fj - fi + 7)) as usize
}

/// `bucket(i, j)` for all 64 x 64 pairs, query-major.
pub fn bucket_table() -> &'static [i64; 4096] {
    static TABLE: OnceLock<[i64; 4096]> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = [0i64; 4096];
        for (ij, slot) in t.iter_mut().enumerate() {
            *slot = bucket(ij / 64, ij % 64) as i64;
        }
        t
    })
}

/// The bucket table as an index tensor on `device`.
pub fn bucket_index(device: Device) -> Tensor {
    Tensor::from_slice(bucket_table().as_slice()).to_device(device)
}

/// Gathers a table `[H, 225, ...]` (a Shaw table `[H, 225, d_head]` or a bias table
/// `[H, 225]`) to `[H, 64, 64, ...]` (query, key).
pub fn gather(table: &Tensor, index: &Tensor) -> Tensor {
    let size = table.size();
    let shape: Vec<i64> = (size.iter().take(1).copied())
        .chain([64, 64])
        .chain(size.iter().skip(2).copied())
        .collect();
    table.index_select(1, index).view(shape.as_slice())
}

/// Largest batch for which [`attend_shaw`] uses the bucket form; larger batches use the gathered
/// form. Measured with `cfzero bench nn` on the tiny preset (2 CPU threads): the bucket form ran
/// 322 evaluations/s at batch 1 against 66 for the gathered form, 470 against 727 at batch 16 and
/// 283 against 814 at batch 256 (the earlier `einsum` form: 142, 568 and 781).
pub const BUCKET_FORM_MAX_BATCH: i64 = 4;

/// Shaw tables of one layer: query-side, key-side and value-side (`[H, 225, d_head]` each), and
/// the position-only logit bias (`[H, 225]`); gathered by [`gather`] to `[H, 64, 64, d_head]`
/// and `[H, 64, 64]`.
///
/// With `q_i`, `k_j`, `v_j` a head's query, key and value and `b = bucket(i, j)`, the logits are
/// `e_ij = (q_i . k_j + q_i . rq_b + k_j . rk_b + bias_b) / sqrt(d_head)` and the output is
/// `sum_j softmax_j(e_ij) (v_j + rv_b)`. This is Shaw et al.'s `(q_i + a^Q_ij)(k_j + a^K_ij)^T`
/// expanded, with the product `a^Q_ij . a^K_ij` of the two tables, a function of the bucket
/// alone, learned as a free scalar per (head, bucket) instead (which can express any such
/// product). The bias shares the other terms' `1 / sqrt(d_head)` because it stands for a dot
/// product of `d_head`-vectors like them. It is zero-initialised, so it changes nothing until
/// trained (and nets saved before it existed load with it at zero).
pub type ShawTables<'a> = (&'a Tensor, &'a Tensor, &'a Tensor, &'a Tensor);

/// Dot-product attention with an optional `[B, H, 64, 64]` bias added to the logits, for
/// queries `q` that already carry the `1/sqrt(d_head)` scale. `q`, `k`, `v`:
/// `[B, H, 64, d_head]`; returns `[B, H, 64, d_head]`.
///
/// libtorch's fused kernel (`scaled_dot_product_attention`) takes the bias as its additive
/// mask and never writes the logits out as a separate tensor.
pub fn attend(q: &Tensor, k: &Tensor, v: &Tensor, bias: Option<&Tensor>) -> Tensor {
    Tensor::scaled_dot_product_attention(q, k, v, bias, 0.0, false, 1.0, false)
}

/// Folds the `1/sqrt(d_head)` logit scale into the query `q` and into the key-side table and
/// the bias of `tables` (see [`ShawTables`]): returns `(q_s, rk_s, rb_s)`, the scaled inputs
/// that [`attend_shaw`] and its forms take (`rq` and `rv` are unchanged). The forward pass
/// folds the scale into the weights once instead (`Attention::prepare`).
pub fn fold_scale(q: &Tensor, tables: ShawTables) -> (Tensor, Tensor, Tensor) {
    let dh = *q.size().last().expect("q has a last dimension");
    let s = 1.0 / (dh as f64).sqrt();
    (q * s, tables.1 * s, tables.3 * s)
}

/// Whether a batch of `batch` positions takes the bucket form under `form`.
pub fn uses_bucket_form(form: ShawForm, batch: i64) -> bool {
    match form {
        ShawForm::BySize => batch <= BUCKET_FORM_MAX_BATCH,
        ShawForm::Gathered => false,
        ShawForm::Buckets => true,
    }
}

/// Which of the two equal forms of Shaw attention a forward pass uses.
///
/// The forms round differently, so a position evaluated in a batch of one form and again in a
/// batch of the other gets slightly different outputs. Callers that need a position's output not
/// to depend on its batch (reproducible self-play) fix the form; see
/// `InferenceServer::spawn`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShawForm {
    /// The faster form for each batch: buckets up to [`BUCKET_FORM_MAX_BATCH`], else gathered.
    BySize,
    /// Always [`attend_shaw_gathered`].
    Gathered,
    /// Always [`attend_shaw_buckets`].
    Buckets,
}

impl ShawForm {
    /// The form that is fastest for batches of up to `max_batch` positions.
    pub fn for_max_batch(max_batch: usize) -> ShawForm {
        if max_batch as i64 <= BUCKET_FORM_MAX_BATCH {
            ShawForm::Buckets
        } else {
            ShawForm::Gathered
        }
    }
}

/// Attention with ungathered Shaw tables (`[H, 225, d_head]` each) in `form`, for scaled
/// inputs (the query `q` and the tables' `rk` and `rb` carry the `1/sqrt(d_head)` scale, see
/// [`fold_scale`]). `index` is [`bucket_index`].
pub fn attend_shaw(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    tables: ShawTables,
    index: &Tensor,
    form: ShawForm,
) -> Tensor {
    if uses_bucket_form(form, q.size()[0]) {
        attend_shaw_buckets(q, k, v, tables, index)
    } else {
        let (tq, tk, tv, tb) = tables;
        let g = |t: &Tensor| gather(t, index);
        attend_shaw_gathered(q, k, v, (&g(tq), &g(tk), &g(tv), &g(tb)))
    }
}

/// Shaw attention over tables gathered by [`gather`] (`[H, 64, 64, d_head]`, the bias
/// `[H, 64, 64]`), for scaled inputs (see [`attend_shaw`]).
///
/// Each Shaw term is one batched matrix product over the (head, square) pairs with the batch as
/// the rows (`einsum` picked kernels that were up to 1.5 times slower here on CPU).
pub fn attend_shaw_gathered(q: &Tensor, k: &Tensor, v: &Tensor, gathered: ShawTables) -> Tensor {
    let (b, h, n, dh) = q.size4().expect("q is [B, H, 64, d_head]");
    let (rq, rk, rv, rb) = gathered;
    // [B, H, 64, x] -> [H*64, rows, x]: one row block per (head, square), the batch padded to
    // at least MIN_ROWS rows (see there: small products round differently).
    let by_square = |t: &Tensor, x: i64| {
        pad_rows(
            &t.permute([1, 2, 0, 3])
                .reshape([h * n, b, x])
                .transpose(0, 1),
        )
        .transpose(0, 1)
    };
    // [H*64, rows, y] -> [H, 64, B, y]: the batch's rows back.
    let unpad = |t: Tensor, y: i64| t.narrow(1, 0, b).reshape([h, n, b, y]);
    // q_i . rq_ij, batched over (h, i): [H*64, B, d] x [H*64, d, 64(j)].
    let rq_t = rq.reshape([h * n, n, dh]).transpose(1, 2);
    let qr = unpad(by_square(q, dh).bmm(&rq_t), n).permute([2, 0, 1, 3]);
    // k_j . rk_ij, batched over (h, j): [H*64, B, d] x [H*64, d, 64(i)].
    let rk_t = rk.permute([0, 2, 3, 1]).reshape([h * n, dh, n]);
    let kr = unpad(by_square(k, dh).bmm(&rk_t), n).permute([2, 0, 3, 1]);
    // The bias [H, 64, 64] broadcasts over the batch, added last as in the bucket form. The
    // terms are added in place: the logits are the largest tensors of the pass.
    let mut logits = q.matmul(&k.transpose(-2, -1));
    logits += qr;
    logits += kr;
    logits += rb;
    let a = logits.softmax(-1, logits.kind());
    // sum_j a_ij rv_ij, batched over (h, i): [H*64, B, 64(j)] x [H*64, 64(j), d].
    let ar = unpad(by_square(&a, n).bmm(&rv.reshape([h * n, n, dh])), dh).permute([2, 0, 1, 3]);
    let mut out = a.matmul(v);
    out += ar;
    out
}

/// Shaw attention against the ungathered tables: products with all 225 buckets, then picked per
/// (query, key) pair. About 3.5 times the arithmetic of [`attend_shaw_gathered`], but in a few
/// large products, which wins when the batch holds only a few positions. Scaled inputs (see
/// [`attend_shaw`]).
pub fn attend_shaw_buckets(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    tables: ShawTables,
    index: &Tensor,
) -> Tensor {
    let (b, h, n, _) = q.size4().expect("q is [B, H, 64, d_head]");
    let (tq, tk, tv, tb) = tables;
    let idx = index.view([1, 1, n, n]).expand([b, h, n, n], false);
    // [B, H, 64(i), 225] picked at bucket(i, j) along the bucket dimension.
    let qr = q.matmul(&tq.transpose(-2, -1)).gather(3, &idx, false);
    // [B, H, 225, 64(j)] picked at bucket(i, j) along the bucket dimension.
    let kr = tk.matmul(&k.transpose(-2, -1)).gather(2, &idx, false);
    // The bias [H, 64, 64] broadcasts over the batch, added last as in the gathered form.
    let mut logits = q.matmul(&k.transpose(-2, -1));
    logits += qr;
    logits += kr;
    logits += gather(tb, index);
    let a = logits.softmax(-1, logits.kind());
    // For a fixed query, j -> bucket(i, j) is one-to-one, so the scatter loses nothing.
    let spread = Tensor::zeros([b, h, n, BUCKETS as i64], (a.kind(), a.device()));
    a.matmul(v) + spread.scatter(3, &idx, &a).matmul(tv)
}

/// Slow reference of [`attend_shaw`], one (query, key) pair at a time straight
/// from the ungathered tables (see [`ShawTables`]), scaling the logits itself: it takes the
/// unscaled `q` and tables, where [`attend_shaw`] takes them through [`fold_scale`]. For
/// tests only.
pub fn attend_reference(q: &Tensor, k: &Tensor, v: &Tensor, tables: ShawTables) -> Tensor {
    let (b, h, n, dh) = q.size4().expect("q is [B, H, 64, d_head]");
    let to_vec = |t: &Tensor| -> Vec<f64> {
        Vec::<f64>::try_from(t.to_kind(Kind::Double).contiguous().view([-1])).expect("float tensor")
    };
    let (qv, kv, vv) = (to_vec(q), to_vec(k), to_vec(v));
    let (rq, rk, rv) = (to_vec(tables.0), to_vec(tables.1), to_vec(tables.2));
    let rb = to_vec(tables.3);
    let (h, n, dh, b) = (h as usize, n as usize, dh as usize, b as usize);
    let at =
        |x: &[f64], bi: usize, hi: usize, i: usize, d: usize| x[((bi * h + hi) * n + i) * dh + d];
    let rt = |x: &[f64], hi: usize, bucket: usize, d: usize| x[(hi * BUCKETS + bucket) * dh + d];
    let mut out = vec![0f64; b * h * n * dh];
    for bi in 0..b {
        for hi in 0..h {
            for i in 0..n {
                let mut e = vec![0f64; n];
                for (j, ej) in e.iter_mut().enumerate() {
                    let bk = bucket(i, j);
                    let mut s = 0.0;
                    for d in 0..dh {
                        s += at(&qv, bi, hi, i, d) * at(&kv, bi, hi, j, d)
                            + at(&qv, bi, hi, i, d) * rt(&rq, hi, bk, d)
                            + at(&kv, bi, hi, j, d) * rt(&rk, hi, bk, d);
                    }
                    *ej = (s + rb[hi * BUCKETS + bk]) / (dh as f64).sqrt();
                }
                let max = e.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = e.iter().map(|x| (x - max).exp()).sum();
                for (j, ej) in e.iter().enumerate() {
                    let a = (ej - max).exp() / sum;
                    let bk = bucket(i, j);
                    for d in 0..dh {
                        out[((bi * h + hi) * n + i) * dh + d] +=
                            a * (at(&vv, bi, hi, j, d) + rt(&rv, hi, bk, d));
                    }
                }
            }
        }
    }
    Tensor::from_slice(&out)
        .view([b as i64, h as i64, n as i64, dh as i64])
        .to_kind(Kind::Float)
}
