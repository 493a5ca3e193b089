//! The Chessformer as an ONNX graph: the same operations as [`cfzero_network::model`], in standard
//! operators, with Lc0's input (`[B, 112, 8, 8]` planes, the halfmove clock raw) and outputs
//! (policy logits, WDL probabilities, moves left in plies).
//!
//! Scales the model applies to a layer's output are folded into that layer's weights: the
//! halfmove clock's 1/99 into the embedding, `1/sqrt(d_head)` into the queries (and the
//! key-side Shaw table and bias, as [`cfzero_network::model::shaw::fold_scale`]), the DeepNorm residual
//! scale alpha into the attention output and the second FFN layer, `1/sqrt(d_pol)` into the
//! policy queries, the knight promotion offset into the q, r and b rows, and the 20 plies of a
//! moves-left unit into the moves-left output.

use tch::{Kind, Tensor};

use super::graph::{Dim, GraphBuilder};
use super::{OnnxError, OnnxHeads, OutputNames, names};
use cfzero_network::config::{NetworkConfig, Norm, PositionEncoding};
use cfzero_network::encoding::attention_gather;
use cfzero_network::encoding::{
    ATTENTION_POLICY_SIZE, HALFMOVE_PLANE, HALFMOVE_SCALE, PLANES, POLICY_SIZE,
};
use cfzero_network::model::attention::{Attention, PositionTerm};
use cfzero_network::model::encoder::EncoderLayer;
use cfzero_network::model::layers::{Dense, NORM_EPS, NormLayer};
use cfzero_network::model::policy::PolicyHead;
use cfzero_network::model::shaw::{BUCKETS, bucket_table};
use cfzero_network::model::smolgen::{SMOLGEN_EPS, Smolgen};
use cfzero_network::model::value::{
    MovesLeftHead, ScalarValueHead, Trunk, VALUE_BUCKETS, WinnerHead,
};
use cfzero_network::model::{Chessformer, Net};

/// Plies of one unit of the moves-left head.
const PLIES_PER_MOVES_LEFT_UNIT: f32 = 20.0;

/// A tensor's values as f32, row-major.
fn values(t: &Tensor) -> Result<Vec<f32>, OnnxError> {
    Vec::<f32>::try_from(t.to_kind(Kind::Float).contiguous().flatten(0, -1))
        .map_err(|e| OnnxError::Tensor(e.to_string()))
}

/// Writes the graph of `net` into `g`: input, body, the heads `heads` asks for, outputs.
pub fn build(g: &mut GraphBuilder, net: &Net, heads: OnnxHeads) -> Result<OutputNames, OnnxError> {
    let cfg = &net.config;
    let m = &net.model;
    let input = g.input(
        names::INPUT_PLANES,
        &[
            Dim::Batch,
            Dim::Fixed(PLANES as i64),
            Dim::Fixed(8),
            Dim::Fixed(8),
        ],
    );
    // [B, 112, 8, 8] -> [B, 112, 64] -> tokens [B, 64, 112]: square s of plane p is bit s of
    // Lc0's plane mask (a1 = 0), the token order of the model.
    let planes = g.reshape("/body/planes", &input, &[0, PLANES as i64, 64]);
    let tokens = g.transpose("/body/tokens", &planes, &[0, 2, 1]);
    let mut x = embedding(g, m, cfg, &tokens)?;
    // The (query, key) -> displacement bucket index of Shaw tables, shared by every layer.
    let index = (cfg.attention.position == PositionEncoding::Shaw).then(|| {
        g.ints(
            "/body/shaw_bucket_index",
            bucket_table().as_slice(),
            &[64, 64],
        )
    });
    let generator = match &m.smolgen_w {
        // [4096, gen] -> [gen, 4096], shared by every layer.
        Some(w) => {
            let gen_size = w.size()[1];
            Some(g.weight(
                "/body/smolgen_w",
                &values(&w.transpose(0, 1))?,
                &[gen_size, 4096],
            ))
        }
        None => None,
    };
    let body = Body {
        cfg,
        alpha: (2.0 * cfg.layers as f64).powf(-0.25) as f32,
        index: index.as_deref(),
        generator: generator.as_deref(),
    };
    for (i, layer) in m.layers.iter().enumerate() {
        x = encoder_layer(g, &format!("/body/encoder{i}"), layer, &body, &x)?;
    }

    let gather = attention_gather()
        .iter()
        .map(|&i| i as i64)
        .collect::<Vec<_>>();
    let gather = g.ints("/policy/gather", &gather, &[POLICY_SIZE as i64]);
    let batch_policy = [Dim::Batch, Dim::Fixed(POLICY_SIZE as i64)];
    let p = policy(g, "/policy", &m.policy, cfg.d_pol, &x, &gather)?;
    g.output(&p, names::POLICY, &batch_policy);
    let mut out = OutputNames {
        policy: names::POLICY.to_owned(),
        wdl: None,
        value: None,
        mlh: None,
    };
    let all = heads == OnnxHeads::All;
    if let Some(w) = &m.winner {
        let wdl = winner(g, "/value", w, &x)?;
        g.output(&wdl, names::WDL, &[Dim::Batch, Dim::Fixed(3)]);
        out.wdl = Some(names::WDL.to_owned());
    }
    if let Some(q) = &m.q
        && (all || m.winner.is_none())
    {
        let [value, error, categorical] = scalar_value(g, "/q", q, &x)?;
        let name = if m.winner.is_none() {
            names::VALUE
        } else {
            names::Q
        };
        g.output(&value, name, &[Dim::Batch, Dim::Fixed(1)]);
        out.value = (m.winner.is_none()).then(|| name.to_owned());
        if all {
            g.output(&error, names::Q_ERROR, &[Dim::Batch, Dim::Fixed(1)]);
            let buckets = [Dim::Batch, Dim::Fixed(VALUE_BUCKETS as i64)];
            g.output(&categorical, names::Q_CATEGORICAL, &buckets);
        }
    }
    if let Some(ml) = &m.moves_left {
        let mlh = moves_left(g, "/mlh", ml, &x)?;
        g.output(&mlh, names::MLH, &[Dim::Batch, Dim::Fixed(1)]);
        out.mlh = Some(names::MLH.to_owned());
    }
    if all {
        if let Some(sp) = &m.soft_policy {
            let p = policy(g, "/soft_policy", sp, cfg.d_pol, &x, &gather)?;
            g.output(&p, names::SOFT_POLICY, &batch_policy);
        }
        if let Some(st) = &m.st {
            let [value, error, categorical] = scalar_value(g, "/st", st, &x)?;
            g.output(&value, names::ST, &[Dim::Batch, Dim::Fixed(1)]);
            g.output(&error, names::ST_ERROR, &[Dim::Batch, Dim::Fixed(1)]);
            let buckets = [Dim::Batch, Dim::Fixed(VALUE_BUCKETS as i64)];
            g.output(&categorical, names::ST_CATEGORICAL, &buckets);
        }
    }
    Ok(out)
}

/// A dense layer of the model, its output scaled by `scale`.
fn dense(
    g: &mut GraphBuilder,
    name: &str,
    layer: &Dense,
    x: &str,
    scale: f32,
) -> Result<String, OnnxError> {
    let (out, inp) = layer
        .w
        .size2()
        .map_err(|e| OnnxError::Tensor(e.to_string()))?;
    let w = values(&layer.w)?;
    let b = layer.b.as_ref().map(values).transpose()?;
    Ok(g.dense(name, x, &w, (out, inp), b.as_deref(), scale))
}

/// `mish(x W^T + b) * gate_mul + gate_add`, with plane 109's 1/99 folded into its column.
fn embedding(
    g: &mut GraphBuilder,
    m: &Chessformer,
    cfg: &NetworkConfig,
    tokens: &str,
) -> Result<String, OnnxError> {
    let e = &m.embed;
    let mut w = values(&e.dense.w)?;
    for row in w.chunks_mut(PLANES) {
        row[HALFMOVE_PLANE] /= HALFMOVE_SCALE;
    }
    let b = e.dense.b.as_ref().map(values).transpose()?;
    let d = cfg.d_model as i64;
    let y = g.dense(
        "/body/embed",
        tokens,
        &w,
        (d, PLANES as i64),
        b.as_deref(),
        1.0,
    );
    let y = g.mish("/body/embed/mish", &y);
    let mul = g.weight("/body/embed/gate_mul", &values(&e.gate_mul)?, &[64, d]);
    let add = g.weight("/body/embed/gate_add", &values(&e.gate_add)?, &[64, d]);
    let y = g.mul("/body/embed/gated", &y, &mul);
    Ok(g.add("/body/embed/out", &y, &add))
}

/// A norm of the encoder (RMSNorm or LayerNorm, epsilon [`NORM_EPS`]).
fn norm(
    g: &mut GraphBuilder,
    name: &str,
    n: &NormLayer,
    kind: Norm,
    x: &str,
) -> Result<String, OnnxError> {
    let gain = values(&n.gain)?;
    Ok(match (kind, &n.bias) {
        (Norm::Layer, Some(bias)) => g.layer_norm(name, x, &gain, &values(bias)?, NORM_EPS as f32),
        _ => g.rms_norm(name, x, &gain, NORM_EPS as f32),
    })
}

/// What every encoder layer of the graph shares: the config, the residual scale `alpha`,
/// and the graph's Shaw bucket index and smolgen generator, if the net has them.
struct Body<'a> {
    cfg: &'a NetworkConfig,
    alpha: f32,
    index: Option<&'a str>,
    generator: Option<&'a str>,
}

/// `x = Norm(x + alpha MHA(x)); x = Norm(x + alpha FFN(x))`.
fn encoder_layer(
    g: &mut GraphBuilder,
    name: &str,
    layer: &EncoderLayer,
    body: &Body,
    x: &str,
) -> Result<String, OnnxError> {
    let (cfg, alpha) = (body.cfg, body.alpha);
    let a = attention(g, &format!("{name}/mha"), &layer.attn, body, x)?;
    let sum = g.add(&format!("{name}/mha/residual"), x, &a);
    let x = norm(g, &format!("{name}/ln1"), &layer.norm1, cfg.norm, &sum)?;
    let f = dense(g, &format!("{name}/ffn/dense1"), &layer.ffn1, &x, 1.0)?;
    let f = g.mish(&format!("{name}/ffn/mish"), &f);
    let f = dense(g, &format!("{name}/ffn/dense2"), &layer.ffn2, &f, alpha)?;
    let sum = g.add(&format!("{name}/ffn/residual"), &x, &f);
    norm(g, &format!("{name}/ln2"), &layer.norm2, cfg.norm, &sum)
}

/// Multi-head attention with its position term; its output is scaled by `alpha`.
fn attention(
    g: &mut GraphBuilder,
    name: &str,
    attn: &Attention,
    body: &Body,
    x: &str,
) -> Result<String, OnnxError> {
    let Body {
        cfg,
        alpha,
        index,
        generator,
    } = *body;
    let (h, d) = (cfg.heads as i64, cfg.d_model as i64);
    let dh = d / h;
    let scale = 1.0 / (dh as f32).sqrt();
    // [B, 64, d] -> [B, H, 64, d_head], head h on channels h*d_head.. (contiguous).
    let mut heads = |tag: &str, layer: &Dense, s: f32| -> Result<String, OnnxError> {
        let y = dense(g, &format!("{name}/{tag}"), layer, x, s)?;
        let y = g.reshape(&format!("{name}/{tag}/split"), &y, &[0, 64, h, dh]);
        Ok(g.transpose(&format!("{name}/{tag}/heads"), &y, &[0, 2, 1, 3]))
    };
    let q = heads("q", &attn.q, scale)?;
    let k = heads("k", &attn.k, 1.0)?;
    let v = heads("v", &attn.v, 1.0)?;
    let kt = g.transpose(&format!("{name}/k_t"), &k, &[0, 1, 3, 2]);
    let mut logits = g.matmul(&format!("{name}/qk"), &q, &kt);
    let mut rv_gathered = None;
    match &attn.position {
        PositionTerm::Shaw { rq, rk, rv, rb } => {
            let index = index.ok_or_else(|| {
                OnnxError::Tensor("a Shaw layer in a net configured without Shaw".to_owned())
            })?;
            // Tables [H, 225, d_head] gathered to (query i, key j) pairs by the bucket index:
            // [H, 64, 64, d_head]. The gathers of constants fold when a runtime loads the graph.
            let mut table =
                |tag: &str, t: &Tensor, s: f32, dims: &[i64]| -> Result<String, OnnxError> {
                    let w = g.weight(
                        &format!("{name}/shaw/{tag}"),
                        &values(&(t * f64::from(s)))?,
                        dims,
                    );
                    Ok(g.gather(&format!("{name}/shaw/{tag}/pairs"), &w, index, 1))
                };
            let buckets = BUCKETS as i64;
            let rq = table("rq", rq, 1.0, &[h, buckets, dh])?;
            let rk = table("rk", rk, scale, &[h, buckets, dh])?;
            let rv = table("rv", rv, 1.0, &[h, buckets, dh])?;
            let rb = table("rb", rb, scale, &[h, buckets])?;
            // q_i . rq_ij: [H, i, B, d] x [H, i, d, j] -> [H, i, B, j] -> [B, H, i, j].
            let qt = g.transpose(&format!("{name}/shaw/q_by_square"), &q, &[1, 2, 0, 3]);
            let rqt = g.transpose(&format!("{name}/shaw/rq_t"), &rq, &[0, 1, 3, 2]);
            let qr = g.matmul(&format!("{name}/shaw/q_rq"), &qt, &rqt);
            let qr = g.transpose(&format!("{name}/shaw/q_rq_t"), &qr, &[2, 0, 1, 3]);
            // k_j . rk_ij: [H, j, B, d] x [H, j, d, i] -> [H, j, B, i] -> [B, H, i, j].
            let kt = g.transpose(&format!("{name}/shaw/k_by_square"), &k, &[1, 2, 0, 3]);
            let rkt = g.transpose(&format!("{name}/shaw/rk_t"), &rk, &[0, 2, 3, 1]);
            let kr = g.matmul(&format!("{name}/shaw/k_rk"), &kt, &rkt);
            let kr = g.transpose(&format!("{name}/shaw/k_rk_t"), &kr, &[2, 0, 3, 1]);
            logits = g.add(&format!("{name}/shaw/logits_q"), &logits, &qr);
            logits = g.add(&format!("{name}/shaw/logits_k"), &logits, &kr);
            logits = g.add(&format!("{name}/shaw/logits_bias"), &logits, &rb);
            rv_gathered = Some(rv);
        }
        PositionTerm::Smolgen(s) => {
            let generator = generator.ok_or_else(|| {
                OnnxError::Tensor("a smolgen layer in a net without smolgen_w".to_owned())
            })?;
            let bias = smolgen(g, &format!("{name}/smolgen"), s, cfg, x, generator)?;
            logits = g.add(&format!("{name}/smolgen/logits"), &logits, &bias);
        }
        PositionTerm::None => {}
    }
    let a = g.softmax(&format!("{name}/softmax"), &logits);
    let mut z = g.matmul(&format!("{name}/av"), &a, &v);
    if let Some(rv) = rv_gathered {
        // sum_j a_ij rv_ij: [H, i, B, j] x [H, i, j, d] -> [H, i, B, d] -> [B, H, i, d].
        let at = g.transpose(&format!("{name}/shaw/a_by_square"), &a, &[1, 2, 0, 3]);
        let ar = g.matmul(&format!("{name}/shaw/a_rv"), &at, &rv);
        let ar = g.transpose(&format!("{name}/shaw/a_rv_t"), &ar, &[2, 0, 1, 3]);
        z = g.add(&format!("{name}/shaw/out"), &z, &ar);
    }
    let z = g.transpose(&format!("{name}/merge"), &z, &[0, 2, 1, 3]);
    let z = g.reshape(&format!("{name}/merged"), &z, &[0, 64, d]);
    dense(g, &format!("{name}/out"), &attn.out, &z, alpha)
}

/// Smolgen's attention bias `[B, H, 64, 64]` of the layer input `x`.
fn smolgen(
    g: &mut GraphBuilder,
    name: &str,
    s: &Smolgen,
    cfg: &NetworkConfig,
    x: &str,
    generator: &str,
) -> Result<String, OnnxError> {
    let a = &cfg.attention;
    let c = dense(g, &format!("{name}/compress"), &s.compress, x, 1.0)?;
    // Square-major flattening, index compress * square + channel, as the model.
    let c = g.reshape(
        &format!("{name}/flat"),
        &c,
        &[0, 64 * a.smolgen_compress as i64],
    );
    // dense -> swish -> LayerNorm (epsilon SMOLGEN_EPS), twice.
    let mut h = c;
    for (tag, layer, (gain, bias)) in [("1", &s.dense1, &s.ln1), ("2", &s.dense2, &s.ln2)] {
        let y = dense(g, &format!("{name}/dense{tag}"), layer, &h, 1.0)?;
        let y = g.swish(&format!("{name}/dense{tag}/swish"), &y);
        h = g.layer_norm(
            &format!("{name}/ln{tag}"),
            &y,
            &values(gain)?,
            &values(bias)?,
            SMOLGEN_EPS as f32,
        );
    }
    let h = g.reshape(
        &format!("{name}/per_head"),
        &h,
        &[0, cfg.heads as i64, a.smolgen_gen as i64],
    );
    let bias = g.matmul(&format!("{name}/generate"), &h, generator);
    Ok(g.reshape(&format!("{name}/bias"), &bias, &[0, 0, 64, 64]))
}

/// The 1858 policy logits of the attention policy head (see [`PolicyHead`]).
fn policy(
    g: &mut GraphBuilder,
    name: &str,
    head: &PolicyHead,
    d_pol: usize,
    x: &str,
    gather: &str,
) -> Result<String, OnnxError> {
    let e = dense(g, &format!("{name}/embed"), &head.embed, x, 1.0)?;
    let e = g.mish(&format!("{name}/embed/mish"), &e);
    let qp = dense(
        g,
        &format!("{name}/q"),
        &head.q,
        &e,
        1.0 / (d_pol as f32).sqrt(),
    )?;
    let kp = dense(g, &format!("{name}/k"), &head.k, &e, 1.0)?;
    let kt = g.transpose(&format!("{name}/k_t"), &kp, &[0, 2, 1]);
    let c = g.matmul(&format!("{name}/from_to"), &qp, &kt);
    let flat = g.reshape(&format!("{name}/from_to_flat"), &c, &[0, 4096]);
    // Offsets [B, 8 to-files, 3 pieces] from the keys of rank 8, the knight row folded into
    // the q, r and b rows.
    let promo = values(&head.promo.w)?;
    let dp = d_pol;
    let folded: Vec<f32> = (0..3)
        .flat_map(|piece| (0..dp).map(move |c| (piece, c)))
        .map(|(piece, c)| promo[piece * dp + c] + promo[3 * dp + c])
        .collect();
    let keys8 = g.slice(&format!("{name}/rank8_keys"), &kp, &[1], &[56], &[64]);
    let offsets = g.dense(
        &format!("{name}/promo"),
        &keys8,
        &folded,
        (3, dp as i64),
        None,
        1.0,
    );
    let offsets = g.reshape(&format!("{name}/promo_b"), &offsets, &[0, 1, 8, 3]);
    // Pawn moves from rank 7 to rank 8: [B, from_file, to_file] + offsets -> [B, 8, 8, 3].
    let base = g.slice(
        &format!("{name}/rank7_to_rank8"),
        &c,
        &[1, 2],
        &[48, 56],
        &[56, 64],
    );
    let base = g.reshape(&format!("{name}/rank7_to_rank8_b"), &base, &[0, 8, 8, 1]);
    let promotions = g.add(&format!("{name}/promotions"), &base, &offsets);
    let promotions = g.reshape(&format!("{name}/promotions_flat"), &promotions, &[0, 192]);
    let all = g.concat(
        &format!("{name}/attention_logits"),
        &[&flat, &promotions],
        1,
    );
    debug_assert_eq!(4096 + 192, ATTENTION_POLICY_SIZE);
    Ok(g.gather(&format!("{name}/logits"), &all, gather, 1))
}

/// The shared start of every value-like head: `[B, hidden]` features.
fn trunk(g: &mut GraphBuilder, name: &str, t: &Trunk, x: &str) -> Result<String, OnnxError> {
    let channels = t.embed.w.size()[0];
    let y = dense(g, &format!("{name}/embed"), &t.embed, x, 1.0)?;
    let y = g.mish(&format!("{name}/embed/mish"), &y);
    let y = g.reshape(&format!("{name}/flat"), &y, &[0, 64 * channels]);
    let y = dense(g, &format!("{name}/fc1"), &t.fc1, &y, 1.0)?;
    Ok(g.mish(&format!("{name}/fc1/mish"), &y))
}

/// W/D/L probabilities (a softmax of the winner head's logits, as Lc0's ONNX backends read).
fn winner(g: &mut GraphBuilder, name: &str, w: &WinnerHead, x: &str) -> Result<String, OnnxError> {
    let h = trunk(g, name, &w.trunk, x)?;
    let logits = dense(g, &format!("{name}/out"), &w.out, &h, 1.0)?;
    Ok(g.softmax(&format!("{name}/softmax"), &logits))
}

/// A `q` or `st` head: the tanh value `[B, 1]`, the sigmoid error `[B, 1]` and the bucket
/// logits `[B, 32]`.
fn scalar_value(
    g: &mut GraphBuilder,
    name: &str,
    v: &ScalarValueHead,
    x: &str,
) -> Result<[String; 3], OnnxError> {
    let h = trunk(g, name, &v.trunk, x)?;
    let value = dense(g, &format!("{name}/value"), &v.value, &h, 1.0)?;
    let value = g.unary("Tanh", &format!("{name}/tanh"), &value);
    let error = dense(g, &format!("{name}/error"), &v.error, &h, 1.0)?;
    let error = g.unary("Sigmoid", &format!("{name}/sigmoid"), &error);
    let categorical = dense(g, &format!("{name}/categorical"), &v.categorical, &h, 1.0)?;
    Ok([value, error, categorical])
}

/// Moves left `[B, 1]` in plies.
fn moves_left(
    g: &mut GraphBuilder,
    name: &str,
    ml: &MovesLeftHead,
    x: &str,
) -> Result<String, OnnxError> {
    let h = trunk(g, name, &ml.trunk, x)?;
    let y = dense(
        g,
        &format!("{name}/out"),
        &ml.out,
        &h,
        PLIES_PER_MOVES_LEFT_UNIT,
    )?;
    Ok(g.unary("Relu", &format!("{name}/relu"), &y))
}
