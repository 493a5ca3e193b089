//! Where each tensor of a cfzero net lives in Lc0's `Weights`, and how its values are
//! rearranged on the way. Export and import read the same table, so the two directions
//! cannot drift apart.

use super::format::PE_MAP_INPUTS;
use super::proto::{
    EncoderLayer, Ffn, Layer, Mha, PolicyHead, PolicyHeads, Smolgen, ValueHead, Weights,
};
use cfzero_network::config::{NetworkConfig, PositionEncoding};
use cfzero_network::encoding::{HALFMOVE_PLANE, HALFMOVE_SCALE, PLANES};

/// Finds a layer slot in `Weights` (creating empty parents on the way).
pub type Slot = for<'a> fn(&'a mut Weights) -> &'a mut Option<Layer>;

/// Finds a layer slot in one encoder layer.
pub type EncoderSlot = for<'a> fn(&'a mut EncoderLayer) -> &'a mut Option<Layer>;

/// Where a tensor lives in `Weights`.
#[derive(Clone, Copy)]
pub enum Access {
    /// Outside the encoder layers.
    Global(Slot),
    /// In encoder layer `.0`.
    Encoder(usize, EncoderSlot),
}

impl Access {
    /// The slot in `w`; missing parent messages and encoder layers are created empty.
    pub fn slot<'a>(&self, w: &'a mut Weights) -> &'a mut Option<Layer> {
        match *self {
            Access::Global(f) => f(w),
            Access::Encoder(i, f) => {
                if w.encoder.len() <= i {
                    w.encoder.resize_with(i + 1, Default::default);
                }
                f(&mut w.encoder[i])
            }
        }
    }
}

/// How values change between cfzero's tensor and Lc0's layer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Transform {
    /// The same row-major values.
    Same,
    /// cfzero's `[64 squares, d]` gate is Lc0's `[d channels, 64]`.
    Transpose,
    /// cfzero's embedding `[d, 112]` sees plane 109 as halfmove / 99, Lc0's `[d, 176]` the raw
    /// count followed by 64 positional features, whose weights are zero.
    Embedding,
    /// Lc0's values are cfzero's times this factor (moves left: plies, not units of 20).
    Scale(f32),
}

/// What cfzero holds for a slot.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// The variable of this name.
    Var(String),
    /// Nothing: Lc0 needs the layer, cfzero's net has no such parameter (Q/K/V biases of a
    /// net without `qkv_bias`), so zeros of this length are written.
    Zeros(usize),
}

/// One tensor's place in both formats.
pub struct Binding {
    /// cfzero's side.
    pub ours: Source,
    /// Lc0's name of the slot, for messages (e.g. `encoder[1].mha.smolgen.dense2_w`).
    pub lc0: String,
    /// The slot.
    pub access: Access,
    /// The rearrangement.
    pub transform: Transform,
}

fn mha(e: &mut EncoderLayer) -> &mut Mha {
    e.mha.get_or_insert_with(Default::default)
}

fn ffn(e: &mut EncoderLayer) -> &mut Ffn {
    e.ffn.get_or_insert_with(Default::default)
}

fn smolgen(e: &mut EncoderLayer) -> &mut Smolgen {
    mha(e).smolgen.get_or_insert_with(Default::default)
}

fn policy_heads(w: &mut Weights) -> &mut PolicyHeads {
    w.policy_heads.get_or_insert_with(Default::default)
}

fn vanilla(w: &mut Weights) -> &mut PolicyHead {
    policy_heads(w).vanilla.get_or_insert_with(Default::default)
}

fn winner(w: &mut Weights) -> &mut ValueHead {
    w.value_heads
        .get_or_insert_with(Default::default)
        .winner
        .get_or_insert_with(Default::default)
}

/// Factor of plies over cfzero's moves-left unit.
pub const PLIES_PER_MOVES_LEFT_UNIT: f32 = 20.0;

/// cfzero's variable, Lc0's field, the slot: the tensors of every net before the encoder.
const EMBEDDING: [(&str, &str, Slot, Transform); 4] = [
    (
        "embed.w",
        "ip_emb_w",
        |w| &mut w.ip_emb_w,
        Transform::Embedding,
    ),
    ("embed.b", "ip_emb_b", |w| &mut w.ip_emb_b, Transform::Same),
    (
        "embed.gate_mul",
        "ip_mult_gate",
        |w| &mut w.ip_mult_gate,
        Transform::Transpose,
    ),
    (
        "embed.gate_add",
        "ip_add_gate",
        |w| &mut w.ip_add_gate,
        Transform::Transpose,
    ),
];

/// Encoder-layer tensors with the same values in both (names relative to the layer); the
/// Q/K/V biases are [`QKV_BIASES`].
const ENCODER: [(&str, &str, EncoderSlot); 13] = [
    ("attn.q.w", "mha.q_w", |e| &mut mha(e).q_w),
    ("attn.k.w", "mha.k_w", |e| &mut mha(e).k_w),
    ("attn.v.w", "mha.v_w", |e| &mut mha(e).v_w),
    ("attn.out.w", "mha.dense_w", |e| &mut mha(e).dense_w),
    ("attn.out.b", "mha.dense_b", |e| &mut mha(e).dense_b),
    ("norm1.gain", "ln1_gammas", |e| &mut e.ln1_gammas),
    ("norm1.bias", "ln1_betas", |e| &mut e.ln1_betas),
    ("ffn1.w", "ffn.dense1_w", |e| &mut ffn(e).dense1_w),
    ("ffn1.b", "ffn.dense1_b", |e| &mut ffn(e).dense1_b),
    ("ffn2.w", "ffn.dense2_w", |e| &mut ffn(e).dense2_w),
    ("ffn2.b", "ffn.dense2_b", |e| &mut ffn(e).dense2_b),
    ("norm2.gain", "ln2_gammas", |e| &mut e.ln2_gammas),
    ("norm2.bias", "ln2_betas", |e| &mut e.ln2_betas),
];

/// The Q/K/V biases: Lc0 always has them; cfzero only with `qkv_bias`.
const QKV_BIASES: [(&str, &str, EncoderSlot); 3] = [
    ("attn.q.b", "mha.q_b", |e| &mut mha(e).q_b),
    ("attn.k.b", "mha.k_b", |e| &mut mha(e).k_b),
    ("attn.v.b", "mha.v_b", |e| &mut mha(e).v_b),
];

/// Smolgen tensors of an encoder layer.
const SMOLGEN: [(&str, &str, EncoderSlot); 9] = [
    ("attn.smolgen.compress.w", "mha.smolgen.compress", |e| {
        &mut smolgen(e).compress
    }),
    ("attn.smolgen.dense1.w", "mha.smolgen.dense1_w", |e| {
        &mut smolgen(e).dense1_w
    }),
    ("attn.smolgen.dense1.b", "mha.smolgen.dense1_b", |e| {
        &mut smolgen(e).dense1_b
    }),
    ("attn.smolgen.ln1.gain", "mha.smolgen.ln1_gammas", |e| {
        &mut smolgen(e).ln1_gammas
    }),
    ("attn.smolgen.ln1.bias", "mha.smolgen.ln1_betas", |e| {
        &mut smolgen(e).ln1_betas
    }),
    ("attn.smolgen.dense2.w", "mha.smolgen.dense2_w", |e| {
        &mut smolgen(e).dense2_w
    }),
    ("attn.smolgen.dense2.b", "mha.smolgen.dense2_b", |e| {
        &mut smolgen(e).dense2_b
    }),
    ("attn.smolgen.ln2.gain", "mha.smolgen.ln2_gammas", |e| {
        &mut smolgen(e).ln2_gammas
    }),
    ("attn.smolgen.ln2.bias", "mha.smolgen.ln2_betas", |e| {
        &mut smolgen(e).ln2_betas
    }),
];

/// The vanilla attention policy and the winner value head.
const HEADS: [(&str, &str, Slot); 13] = [
    ("policy.embed.w", "policy_heads.ip_pol_w", |w| {
        &mut policy_heads(w).ip_pol_w
    }),
    ("policy.embed.b", "policy_heads.ip_pol_b", |w| {
        &mut policy_heads(w).ip_pol_b
    }),
    ("policy.q.w", "policy_heads.vanilla.ip2_pol_w", |w| {
        &mut vanilla(w).ip2_pol_w
    }),
    ("policy.q.b", "policy_heads.vanilla.ip2_pol_b", |w| {
        &mut vanilla(w).ip2_pol_b
    }),
    ("policy.k.w", "policy_heads.vanilla.ip3_pol_w", |w| {
        &mut vanilla(w).ip3_pol_w
    }),
    ("policy.k.b", "policy_heads.vanilla.ip3_pol_b", |w| {
        &mut vanilla(w).ip3_pol_b
    }),
    ("policy.promo.w", "policy_heads.vanilla.ip4_pol_w", |w| {
        &mut vanilla(w).ip4_pol_w
    }),
    ("value_winner.embed.w", "value_heads.winner.ip_val_w", |w| {
        &mut winner(w).ip_val_w
    }),
    ("value_winner.embed.b", "value_heads.winner.ip_val_b", |w| {
        &mut winner(w).ip_val_b
    }),
    ("value_winner.fc1.w", "value_heads.winner.ip1_val_w", |w| {
        &mut winner(w).ip1_val_w
    }),
    ("value_winner.fc1.b", "value_heads.winner.ip1_val_b", |w| {
        &mut winner(w).ip1_val_b
    }),
    ("value_winner.out.w", "value_heads.winner.ip2_val_w", |w| {
        &mut winner(w).ip2_val_w
    }),
    ("value_winner.out.b", "value_heads.winner.ip2_val_b", |w| {
        &mut winner(w).ip2_val_b
    }),
];

/// The moves-left head; its output layer also converts units of 20 plies to plies.
const MOVES_LEFT: [(&str, &str, Slot, Transform); 6] = [
    (
        "moves_left.embed.w",
        "ip_mov_w",
        |w| &mut w.ip_mov_w,
        Transform::Same,
    ),
    (
        "moves_left.embed.b",
        "ip_mov_b",
        |w| &mut w.ip_mov_b,
        Transform::Same,
    ),
    (
        "moves_left.fc1.w",
        "ip1_mov_w",
        |w| &mut w.ip1_mov_w,
        Transform::Same,
    ),
    (
        "moves_left.fc1.b",
        "ip1_mov_b",
        |w| &mut w.ip1_mov_b,
        Transform::Same,
    ),
    (
        "moves_left.out.w",
        "ip2_mov_w",
        |w| &mut w.ip2_mov_w,
        Transform::Scale(PLIES_PER_MOVES_LEFT_UNIT),
    ),
    (
        "moves_left.out.b",
        "ip2_mov_b",
        |w| &mut w.ip2_mov_b,
        Transform::Scale(PLIES_PER_MOVES_LEFT_UNIT),
    ),
];

/// The table for a net of shape `cfg`. Only Lc0-compatible shapes reach here (LayerNorm,
/// smolgen or no position term, a winner head); the heads Lc0 has no use for (soft policy,
/// q, st) have no entry and are not exported.
pub fn bindings(cfg: &NetworkConfig) -> Vec<Binding> {
    let var = |name: String| Source::Var(name);
    let global = |(ours, lc0, slot, transform): (&str, &str, Slot, Transform)| Binding {
        ours: var(ours.to_owned()),
        lc0: lc0.to_owned(),
        access: Access::Global(slot),
        transform,
    };
    let mut out: Vec<Binding> = EMBEDDING.into_iter().map(global).collect();
    let smolgen = cfg.attention.position == PositionEncoding::Smolgen;
    for i in 0..cfg.layers {
        let layer = |ours: Source, lc0: &str, slot: EncoderSlot| Binding {
            ours,
            lc0: format!("encoder[{i}].{lc0}"),
            access: Access::Encoder(i, slot),
            transform: Transform::Same,
        };
        let mut tensors = ENCODER.to_vec();
        if smolgen {
            tensors.extend(SMOLGEN);
        }
        for (ours, lc0, slot) in tensors {
            out.push(layer(var(format!("encoder.{i}.{ours}")), lc0, slot));
        }
        for (ours, lc0, slot) in QKV_BIASES {
            let source = if cfg.qkv_bias {
                var(format!("encoder.{i}.{ours}"))
            } else {
                Source::Zeros(cfg.d_model)
            };
            out.push(layer(source, lc0, slot));
        }
    }
    if smolgen {
        out.push(global((
            "smolgen_w",
            "smolgen_w",
            |w| &mut w.smolgen_w,
            Transform::Same,
        )));
    }
    out.extend(
        HEADS
            .into_iter()
            .map(|(ours, lc0, slot)| global((ours, lc0, slot, Transform::Same))),
    );
    if cfg.outputs.moves_left {
        out.extend(MOVES_LEFT.into_iter().map(global));
    }
    out
}

impl Transform {
    /// Lc0's values of cfzero's `ours`, whose shape is `shape`.
    pub fn to_lc0(self, ours: &[f32], shape: &[usize]) -> Vec<f32> {
        match self {
            Transform::Same => ours.to_vec(),
            Transform::Scale(f) => ours.iter().map(|v| v * f).collect(),
            Transform::Transpose => transpose(ours, shape[0], shape[1]),
            Transform::Embedding => {
                let mut out = vec![0.0; shape[0] * PE_MAP_INPUTS];
                for (row, chunk) in ours.chunks_exact(PLANES).enumerate() {
                    let dst = &mut out[row * PE_MAP_INPUTS..row * PE_MAP_INPUTS + PLANES];
                    dst.copy_from_slice(chunk);
                    dst[HALFMOVE_PLANE] /= HALFMOVE_SCALE;
                }
                out
            }
        }
    }

    /// cfzero's values (shape `shape`) of Lc0's `lc0`; `None` if the lengths do not fit.
    /// An embedding's positional columns must be zero (checked by the caller, which can
    /// say why).
    pub fn from_lc0(self, lc0: &[f32], shape: &[usize]) -> Option<Vec<f32>> {
        let n: usize = shape.iter().product();
        match self {
            Transform::Same if lc0.len() == n => Some(lc0.to_vec()),
            Transform::Scale(f) if lc0.len() == n => Some(lc0.iter().map(|v| v / f).collect()),
            Transform::Transpose if lc0.len() == n => Some(transpose(lc0, shape[1], shape[0])),
            Transform::Embedding => {
                let rows = shape[0];
                if rows == 0 || !lc0.len().is_multiple_of(rows) || lc0.len() / rows < PLANES {
                    return None;
                }
                let width = lc0.len() / rows;
                let mut out = Vec::with_capacity(n);
                for row in lc0.chunks_exact(width) {
                    let start = out.len();
                    out.extend_from_slice(&row[..PLANES]);
                    out[start + HALFMOVE_PLANE] *= HALFMOVE_SCALE;
                }
                Some(out)
            }
            _ => None,
        }
    }
}

/// `[rows, cols]` row-major to `[cols, rows]` row-major.
fn transpose(values: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0; values.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = values[r * cols + c];
        }
    }
    out
}
