//! The position-only term of Shaw attention (`rpe_bias`, one learned scalar per head and
//! displacement): what it adds to the logits, that nets saved without it load unchanged, and
//! that it trains.

mod net_support;

use cfzero_network::checkpoint::{
    CheckpointError, load_net, load_weights_into, may_be_missing, save_net,
};
use cfzero_network::model::attention::{AttentionContext, PositionTerm};
use cfzero_network::model::shaw::{BUCKETS, ShawForm, bucket, bucket_index};
use cfzero_network::{LossWeights, Net, loss};
use net_support::{preset, synthetic_batch};
use safetensors::SafeTensors;
use tch::{Device, Kind, Tensor};

/// The Shaw tables `(rq, rk, rv, rb)` of encoder layer `layer` of `net`.
fn tables(net: &Net, layer: usize) -> (&Tensor, &Tensor, &Tensor, &Tensor) {
    let PositionTerm::Shaw { rq, rk, rv, rb } = &net.model.layers[layer].attn.position else {
        panic!("the net uses Shaw attention")
    };
    (rq, rk, rv, rb)
}

/// A micro net seeded with `seed` whose Shaw tables, the bias included, are random.
fn micro_with_random_tables(seed: i64) -> Net {
    let _seeded = cfzero_network::seeded(seed);
    let net = Net::new(&preset("micro"), Device::Cpu).unwrap();
    let (rq, rk, rv, rb) = tables(&net, 0);
    tch::no_grad(|| {
        for t in [rq, rk, rv, rb] {
            t.shallow_clone().copy_(&(t.randn_like() * 0.5));
        }
    });
    net
}

fn values(t: &Tensor) -> Vec<f64> {
    Vec::<f64>::try_from(t.to_kind(Kind::Double).contiguous().view([-1])).unwrap()
}

/// Shaw attention of one layer written out pair by pair, before the output projection:
/// `e_ij = (q_i . k_j + q_i . rq_b + k_j . rk_b + bias_b) / sqrt(d_head)` with
/// `b = bucket(i, j)`, output `sum_j softmax_j(e_ij) (v_j + rv_b)`. Returns `[B, 64, d]` with
/// head `h` in channels `h*d_head..(h+1)*d_head`.
fn naive_attention(net: &Net, x: &Tensor) -> Tensor {
    let attn = &net.model.layers[0].attn;
    let (q, k, v) = attn.qkv(x);
    let (b, h, n, dh) = q.size4().unwrap();
    let (b, h, n, dh) = (b as usize, h as usize, n as usize, dh as usize);
    let (q, k, v) = (values(&q), values(&k), values(&v));
    let (rq, rk, rv, rb) = tables(net, 0);
    let (rq, rk, rv, rb) = (values(rq), values(rk), values(rv), values(rb));
    let at = |t: &[f64], bi: usize, hi: usize, i: usize| {
        let start = ((bi * h + hi) * n + i) * dh;
        t[start..start + dh].to_vec()
    };
    let table = |t: &[f64], hi: usize, bk: usize| {
        let start = (hi * BUCKETS + bk) * dh;
        t[start..start + dh].to_vec()
    };
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let mut out = vec![0.0; b * n * h * dh];
    for bi in 0..b {
        for hi in 0..h {
            for i in 0..n {
                let qi = at(&q, bi, hi, i);
                let logits: Vec<f64> = (0..n)
                    .map(|j| {
                        let (kj, bk) = (at(&k, bi, hi, j), bucket(i, j));
                        (dot(&qi, &kj)
                            + dot(&qi, &table(&rq, hi, bk))
                            + dot(&kj, &table(&rk, hi, bk))
                            + rb[hi * BUCKETS + bk])
                            / (dh as f64).sqrt()
                    })
                    .collect();
                let max = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = logits.iter().map(|e| (e - max).exp()).sum();
                for (j, e) in logits.iter().enumerate() {
                    let a = (e - max).exp() / sum;
                    let (vj, rvb) = (at(&v, bi, hi, j), table(&rv, hi, bucket(i, j)));
                    for d in 0..dh {
                        out[((bi * n + i) * h + hi) * dh + d] += a * (vj[d] + rvb[d]);
                    }
                }
            }
        }
    }
    Tensor::from_slice(&out)
        .view([b as i64, n as i64, (h * dh) as i64])
        .to_kind(Kind::Float)
}

#[test]
fn the_bias_adds_its_gathered_table_to_the_logits_in_both_forms() {
    let net = micro_with_random_tables(21);
    let attn = &net.model.layers[0].attn;
    let idx = bucket_index(Device::Cpu);
    let x = Tensor::randn([2, 64, 16], (Kind::Float, Device::Cpu));
    let naive = tch::no_grad(|| attn.out.forward(&naive_attention(&net, &x)));
    for form in [ShawForm::Buckets, ShawForm::Gathered] {
        let ctx = AttentionContext {
            bucket_index: &idx,
            smolgen_w: None,
            shaw_form: form,
        };
        let model = tch::no_grad(|| attn.forward(&x, &ctx));
        let diff = (model - &naive).abs().max().double_value(&[]);
        assert!(
            diff < 1e-5,
            "{form:?}: differs from the naive loop by {diff}"
        );
    }

    // The bias moves each logit by exactly bias[h, bucket(i, j)] / sqrt(d_head): the log
    // probabilities with and without it differ by that plus a constant per query (the softmax's
    // normaliser), which centring each row removes.
    let ctx = AttentionContext {
        bucket_index: &idx,
        smolgen_w: None,
        shaw_form: ShawForm::Gathered,
    };
    let rb = tables(&net, 0).3;
    let with = tch::no_grad(|| attn.probabilities(&x, &ctx)).to_kind(Kind::Double);
    let saved = rb.copy();
    tch::no_grad(|| {
        let _ = rb.shallow_clone().zero_();
    });
    let without = tch::no_grad(|| attn.probabilities(&x, &ctx)).to_kind(Kind::Double);
    tch::no_grad(|| rb.shallow_clone().copy_(&saved));
    let centred = |t: Tensor| &t - t.mean_dim([3i64].as_slice(), true, Kind::Double);
    let shift = centred(with.log() - without.log());
    let d_head = 8.0; // micro: d_model 16, 2 heads
    let gathered = saved
        .to_kind(Kind::Double)
        .index_select(1, &idx)
        .view([1, 2, 64, 64])
        / f64::sqrt(d_head);
    let diff = (shift - centred(gathered)).abs().max().double_value(&[]);
    assert!(diff < 1e-5, "logit shift differs from the table by {diff}");
}

/// The file at `path` without the tensors named in `drop`.
fn without_tensors(path: &std::path::Path, drop: &[&str]) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let (_, meta) = SafeTensors::read_metadata(&bytes).unwrap();
    let kept: Vec<_> = st
        .tensors()
        .into_iter()
        .filter(|(name, _)| !drop.contains(&name.as_str()))
        .collect();
    assert_eq!(
        kept.len() + drop.len(),
        st.len(),
        "every dropped tensor existed"
    );
    safetensors::serialize(kept, Some(meta.metadata().clone().unwrap())).unwrap()
}

#[test]
fn a_net_saved_without_the_bias_loads_with_it_at_zero_and_evaluates_the_same() {
    let dir = tempfile::tempdir().unwrap();
    // A two-layer Shaw net with trained-looking (random) tables but no bias, as before it existed.
    let mut cfg = preset("micro");
    cfg.layers = 2;
    let _seeded = cfzero_network::seeded(4);
    let old = Net::new(&cfg, Device::Cpu).unwrap();
    for layer in 0..2 {
        let (rq, rk, rv, rb) = tables(&old, layer);
        tch::no_grad(|| {
            for t in [rq, rk, rv] {
                t.shallow_clone().copy_(&(t.randn_like() * 0.5));
            }
        });
        assert_eq!(rb.abs().max().double_value(&[]), 0.0, "zero-initialised");
    }
    let path = dir.path().join("net.safetensors");
    save_net(&old, &path).unwrap();
    let biases = ["encoder.0.attn.rpe_bias", "encoder.1.attn.rpe_bias"];
    let stripped = dir.path().join("old.safetensors");
    std::fs::write(&stripped, without_tensors(&path, &biases)).unwrap();

    let inputs = Tensor::rand([5, 64, 112], (Kind::Float, Device::Cpu));
    let policy = |net: &Net| tch::no_grad(|| net.forward(&inputs).policy);
    let loaded = load_net(&stripped, Device::Cpu).unwrap();
    for layer in 0..2 {
        let rb = tables(&loaded, layer).3;
        assert_eq!(rb.size(), [2, BUCKETS as i64]);
        assert_eq!(rb.abs().max().double_value(&[]), 0.0);
    }
    assert!(policy(&loaded).equal(&policy(&old)));
    let wdl = |net: &Net| tch::no_grad(|| net.forward(&inputs).wdl.unwrap());
    assert!(wdl(&loaded).equal(&wdl(&old)));

    // Loading into a net whose bias is not zero sets it to zero too.
    let mut other = Net::new(&cfg, Device::Cpu).unwrap();
    tch::no_grad(|| {
        let rb = tables(&other, 1).3;
        rb.shallow_clone().copy_(&(rb.randn_like()));
    });
    load_weights_into(&mut other, &stripped).unwrap();
    assert_eq!(tables(&other, 1).3.abs().max().double_value(&[]), 0.0);
    assert!(policy(&other).equal(&policy(&old)));

    // Any other missing tensor is still an error, and nothing is loaded.
    for name in ["encoder.0.attn.rpe_q", "encoder.1.norm1.gain", "embed.w"] {
        let broken = dir.path().join("broken.safetensors");
        std::fs::write(&broken, without_tensors(&path, &[name])).unwrap();
        let err = load_net(&broken, Device::Cpu).unwrap_err();
        assert!(
            matches!(err, CheckpointError::Mismatch { ref msg, .. } if msg.contains(name)),
            "{name}: {err}"
        );
        let mut target = Net::new(&cfg, Device::Cpu).unwrap();
        let before = policy(&target);
        assert!(load_weights_into(&mut target, &broken).is_err());
        assert!(policy(&target).equal(&before), "{name}: nothing loaded");
    }
}

#[test]
fn only_the_shaw_bias_tables_may_be_missing() {
    assert!(may_be_missing("encoder.0.attn.rpe_bias"));
    assert!(may_be_missing("encoder.17.attn.rpe_bias"));
    for name in [
        "encoder.0.attn.rpe_q",
        "encoder.x.attn.rpe_bias",
        "encoder..attn.rpe_bias",
        "rpe_bias",
        "policy.attn.rpe_bias",
        "encoder.0.attn.rpe_bias.w",
        "embed.gate_add",
    ] {
        assert!(!may_be_missing(name), "{name}");
    }
}

#[test]
fn the_bias_gets_a_gradient_and_trains() {
    let _seeded = cfzero_network::seeded(6);
    let net = Net::new(&preset("micro"), Device::Cpu).unwrap();
    let rb = tables(&net, 0).3;
    assert!(rb.requires_grad());
    assert!(
        net.vs
            .trainable_variables()
            .iter()
            .any(|t| t.data_ptr() == rb.data_ptr()),
        "the bias is among the trainable variables"
    );
    let batch = synthetic_batch(4, 10, 2);
    let terms = loss(&net.forward(&batch.inputs), &batch, &LossWeights::default());
    terms.total.backward();
    let grad = rb.grad();
    assert!(grad.defined());
    assert_eq!(grad.size(), [2, BUCKETS as i64]);
    assert!(
        grad.abs().max().double_value(&[]) > 0.0,
        "a non-zero gradient"
    );
    // Every bucket that some (query, key) pair uses gets a gradient from it; all 225 are used.
    let touched = grad.abs().gt(0.0).sum(Kind::Int64).int64_value(&[]);
    assert!(touched > 200, "{touched} of 450 entries have a gradient");
}
