//! Shaw relative-position attention: learned tables indexed by the displacement between the
//! query square and the key square (15 x 15 buckets), gathered once per forward pass.

use std::sync::OnceLock;

use tch::{Device, Kind, Tensor};

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

/// Gathers a table `[H, 225, d_head]` to `[H, 64, 64, d_head]` (query, key).
pub fn gather(table: &Tensor, index: &Tensor) -> Tensor {
    let (h, _, dh) = table.size3().expect("Shaw table is [H, 225, d_head]");
    table.index_select(1, index).view([h, 64, 64, dh])
}

/// Attention of one layer with Shaw tables, fast form (einsums over gathered tables).
///
/// `q`, `k`, `v`: `[B, H, 64, d_head]`; `rq`, `rk`, `rv`: gathered `[H, 64, 64, d_head]`;
/// `bias`: an optional extra `[B, H, 64, 64]` added after scaling. Returns `[B, H, 64, d_head]`.
pub fn attend(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    tables: Option<(&Tensor, &Tensor, &Tensor)>,
    bias: Option<&Tensor>,
) -> Tensor {
    let dh = *q.size().last().expect("q has a last dimension");
    let scale = 1.0 / (dh as f64).sqrt();
    let mut logits = q.matmul(&k.transpose(-2, -1));
    if let Some((rq, rk, _)) = tables {
        logits = logits
            + Tensor::einsum("bhid,hijd->bhij", &[q, rq], None::<&[i64]>)
            + Tensor::einsum("bhjd,hijd->bhij", &[k, rk], None::<&[i64]>);
    }
    let logits = match bias {
        Some(bias) => logits * scale + bias,
        None => logits * scale,
    };
    let a = logits.softmax(-1, Kind::Float);
    let z = a.matmul(v);
    match tables {
        Some((_, _, rv)) => z + Tensor::einsum("bhij,hijd->bhid", &[&a, rv], None::<&[i64]>),
        None => z,
    }
}

/// Slow reference of [`attend`] with Shaw tables, one (query, key) pair at a time straight
/// from the ungathered `[H, 225, d_head]` tables. For tests only.
pub fn attend_reference(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    tables: (&Tensor, &Tensor, &Tensor),
) -> Tensor {
    let (b, h, n, dh) = q.size4().expect("q is [B, H, 64, d_head]");
    let to_vec = |t: &Tensor| -> Vec<f64> {
        Vec::<f64>::try_from(t.to_kind(Kind::Double).contiguous().view([-1])).expect("float tensor")
    };
    let (qv, kv, vv) = (to_vec(q), to_vec(k), to_vec(v));
    let (rq, rk, rv) = (to_vec(tables.0), to_vec(tables.1), to_vec(tables.2));
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
                    *ej = s / (dh as f64).sqrt();
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
