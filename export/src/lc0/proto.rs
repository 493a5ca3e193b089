//! The messages of Lc0's `net.proto` (package `pblczero`) that an attention-body net uses,
//! written out by hand with `prost` derives so that no `protoc` runs at build time. Field
//! numbers are Lc0's; messages and fields for other bodies (residual towers, ONNX, policy
//! encoders) are left out, and prost skips them when reading.

#![allow(missing_docs)] // Each field is named as in Lc0's `net.proto`; see its comments there.

/// `Net`: the whole file (gzip-compressed on disk).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Net {
    #[prost(fixed32, optional, tag = "1")]
    pub magic: Option<u32>,
    #[prost(string, optional, tag = "2")]
    pub license: Option<String>,
    #[prost(message, optional, tag = "3")]
    pub min_version: Option<EngineVersion>,
    #[prost(message, optional, tag = "4")]
    pub format: Option<Format>,
    #[prost(message, optional, tag = "5")]
    pub training_params: Option<TrainingParams>,
    #[prost(message, optional, tag = "10")]
    pub weights: Option<Weights>,
    /// Present in ONNX nets (written by `cfzero export --format lc0-onnx`, refused by import).
    #[prost(message, optional, tag = "11")]
    pub onnx_model: Option<OnnxModel>,
}

/// `OnnxModel`: a serialized ONNX graph and the names of its input and output tensors.
#[derive(Clone, PartialEq, prost::Message)]
pub struct OnnxModel {
    #[prost(bytes = "vec", optional, tag = "1")]
    pub model: Option<Vec<u8>>,
    /// `OnnxModel.DataType`: 1 = FLOAT, 10 = FLOAT16, 16 = BFLOAT16.
    #[prost(int32, optional, tag = "2")]
    pub data_type: Option<i32>,
    #[prost(string, optional, tag = "3")]
    pub input_planes: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub output_value: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub output_wdl: Option<String>,
    #[prost(string, optional, tag = "6")]
    pub output_policy: Option<String>,
    #[prost(string, optional, tag = "7")]
    pub output_mlh: Option<String>,
}

/// `EngineVersion`: the oldest Lc0 that can read the file.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EngineVersion {
    #[prost(uint32, optional, tag = "1")]
    pub major: Option<u32>,
    #[prost(uint32, optional, tag = "2")]
    pub minor: Option<u32>,
    #[prost(uint32, optional, tag = "3")]
    pub patch: Option<u32>,
}

/// `TrainingParams`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrainingParams {
    #[prost(uint32, optional, tag = "1")]
    pub training_steps: Option<u32>,
    #[prost(float, optional, tag = "2")]
    pub learning_rate: Option<f32>,
    #[prost(float, optional, tag = "3")]
    pub mse_loss: Option<f32>,
    #[prost(float, optional, tag = "4")]
    pub policy_loss: Option<f32>,
    #[prost(float, optional, tag = "5")]
    pub accuracy: Option<f32>,
    #[prost(string, optional, tag = "6")]
    pub lc0_params: Option<String>,
}

/// `Format`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Format {
    /// `Format.Encoding`: 1 = LINEAR16.
    #[prost(int32, optional, tag = "1")]
    pub weights_encoding: Option<i32>,
    #[prost(message, optional, tag = "2")]
    pub network_format: Option<NetworkFormat>,
}

/// `NetworkFormat`; the enums are kept as their numbers (see [`super::format`]).
#[derive(Clone, PartialEq, prost::Message)]
pub struct NetworkFormat {
    #[prost(int32, optional, tag = "1")]
    pub input: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    pub output: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub network: Option<i32>,
    #[prost(int32, optional, tag = "4")]
    pub policy: Option<i32>,
    #[prost(int32, optional, tag = "5")]
    pub value: Option<i32>,
    #[prost(int32, optional, tag = "6")]
    pub moves_left: Option<i32>,
    #[prost(int32, optional, tag = "7")]
    pub default_activation: Option<i32>,
    #[prost(int32, optional, tag = "8")]
    pub smolgen_activation: Option<i32>,
    #[prost(int32, optional, tag = "9")]
    pub ffn_activation: Option<i32>,
    #[prost(int32, optional, tag = "10")]
    pub input_embedding: Option<i32>,
}

/// `Weights.Layer`: one tensor, flattened row-major.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Layer {
    #[prost(float, optional, tag = "1")]
    pub min_val: Option<f32>,
    #[prost(float, optional, tag = "2")]
    pub max_val: Option<f32>,
    #[prost(bytes = "vec", optional, tag = "3")]
    pub params: Option<Vec<u8>>,
    /// `Layer.Encoding`: unset or 1 = LINEAR16, 2 = FLOAT16, 3 = BFLOAT16, 4 = FLOAT32.
    #[prost(int32, optional, tag = "4")]
    pub encoding: Option<i32>,
    #[prost(uint32, repeated, packed = "false", tag = "5")]
    pub dims: Vec<u32>,
}

/// `Weights.Smolgen`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Smolgen {
    #[prost(message, optional, tag = "1")]
    pub compress: Option<Layer>,
    #[prost(message, optional, tag = "2")]
    pub dense1_w: Option<Layer>,
    #[prost(message, optional, tag = "3")]
    pub dense1_b: Option<Layer>,
    #[prost(message, optional, tag = "4")]
    pub ln1_gammas: Option<Layer>,
    #[prost(message, optional, tag = "5")]
    pub ln1_betas: Option<Layer>,
    #[prost(message, optional, tag = "6")]
    pub dense2_w: Option<Layer>,
    #[prost(message, optional, tag = "7")]
    pub dense2_b: Option<Layer>,
    #[prost(message, optional, tag = "8")]
    pub ln2_gammas: Option<Layer>,
    #[prost(message, optional, tag = "9")]
    pub ln2_betas: Option<Layer>,
}

/// `Weights.MHA`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Mha {
    #[prost(message, optional, tag = "1")]
    pub q_w: Option<Layer>,
    #[prost(message, optional, tag = "2")]
    pub q_b: Option<Layer>,
    #[prost(message, optional, tag = "3")]
    pub k_w: Option<Layer>,
    #[prost(message, optional, tag = "4")]
    pub k_b: Option<Layer>,
    #[prost(message, optional, tag = "5")]
    pub v_w: Option<Layer>,
    #[prost(message, optional, tag = "6")]
    pub v_b: Option<Layer>,
    #[prost(message, optional, tag = "7")]
    pub dense_w: Option<Layer>,
    #[prost(message, optional, tag = "8")]
    pub dense_b: Option<Layer>,
    #[prost(message, optional, tag = "9")]
    pub smolgen: Option<Smolgen>,
    #[prost(message, optional, tag = "10")]
    pub rpe_q: Option<Layer>,
    #[prost(message, optional, tag = "11")]
    pub rpe_k: Option<Layer>,
    #[prost(message, optional, tag = "12")]
    pub rpe_v: Option<Layer>,
}

/// `Weights.FFN`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Ffn {
    #[prost(message, optional, tag = "1")]
    pub dense1_w: Option<Layer>,
    #[prost(message, optional, tag = "2")]
    pub dense1_b: Option<Layer>,
    #[prost(message, optional, tag = "3")]
    pub dense2_w: Option<Layer>,
    #[prost(message, optional, tag = "4")]
    pub dense2_b: Option<Layer>,
}

/// `Weights.EncoderLayer`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EncoderLayer {
    #[prost(message, optional, tag = "1")]
    pub mha: Option<Mha>,
    #[prost(message, optional, tag = "2")]
    pub ln1_gammas: Option<Layer>,
    #[prost(message, optional, tag = "3")]
    pub ln1_betas: Option<Layer>,
    #[prost(message, optional, tag = "4")]
    pub ffn: Option<Ffn>,
    #[prost(message, optional, tag = "5")]
    pub ln2_gammas: Option<Layer>,
    #[prost(message, optional, tag = "6")]
    pub ln2_betas: Option<Layer>,
}

/// `Weights.PolicyHead` (the attention-policy fields).
#[derive(Clone, PartialEq, prost::Message)]
pub struct PolicyHead {
    #[prost(message, optional, tag = "1")]
    pub ip_pol_w: Option<Layer>,
    #[prost(message, optional, tag = "2")]
    pub ip_pol_b: Option<Layer>,
    #[prost(message, optional, tag = "3")]
    pub ip2_pol_w: Option<Layer>,
    #[prost(message, optional, tag = "4")]
    pub ip2_pol_b: Option<Layer>,
    #[prost(message, optional, tag = "5")]
    pub ip3_pol_w: Option<Layer>,
    #[prost(message, optional, tag = "6")]
    pub ip3_pol_b: Option<Layer>,
    #[prost(message, optional, tag = "7")]
    pub ip4_pol_w: Option<Layer>,
    #[prost(message, repeated, tag = "8")]
    pub pol_encoder: Vec<EncoderLayer>,
    #[prost(uint32, optional, tag = "9")]
    pub pol_headcount: Option<u32>,
}

/// `Weights.ValueHead` (the attention-body fields).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueHead {
    #[prost(message, optional, tag = "1")]
    pub ip_val_w: Option<Layer>,
    #[prost(message, optional, tag = "2")]
    pub ip_val_b: Option<Layer>,
    #[prost(message, optional, tag = "3")]
    pub ip1_val_w: Option<Layer>,
    #[prost(message, optional, tag = "4")]
    pub ip1_val_b: Option<Layer>,
    #[prost(message, optional, tag = "5")]
    pub ip2_val_w: Option<Layer>,
    #[prost(message, optional, tag = "6")]
    pub ip2_val_b: Option<Layer>,
}

/// `Weights.PolicyHeads`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PolicyHeads {
    #[prost(message, optional, tag = "1")]
    pub ip_pol_w: Option<Layer>,
    #[prost(message, optional, tag = "2")]
    pub ip_pol_b: Option<Layer>,
    #[prost(message, optional, tag = "3")]
    pub vanilla: Option<PolicyHead>,
    #[prost(message, optional, tag = "4")]
    pub optimistic_st: Option<PolicyHead>,
    #[prost(message, optional, tag = "5")]
    pub soft: Option<PolicyHead>,
    #[prost(message, optional, tag = "6")]
    pub opponent: Option<PolicyHead>,
}

/// `Weights.ValueHeads`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueHeads {
    #[prost(message, optional, tag = "1")]
    pub winner: Option<ValueHead>,
    #[prost(message, optional, tag = "2")]
    pub q: Option<ValueHead>,
    #[prost(message, optional, tag = "3")]
    pub st: Option<ValueHead>,
}

/// `Weights`: the fields of an attention body with multi-head format. Fields of residual
/// bodies are present only so that import can tell such a net apart and refuse it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Weights {
    /// Residual tower (never written; its presence means a convolutional net).
    #[prost(bytes = "vec", repeated, tag = "2")]
    pub residual: Vec<Vec<u8>>,
    #[prost(message, optional, tag = "37")]
    pub ip_emb_preproc_w: Option<Layer>,
    #[prost(message, optional, tag = "38")]
    pub ip_emb_preproc_b: Option<Layer>,
    #[prost(message, optional, tag = "25")]
    pub ip_emb_w: Option<Layer>,
    #[prost(message, optional, tag = "26")]
    pub ip_emb_b: Option<Layer>,
    #[prost(message, optional, tag = "39")]
    pub ip_emb_ln_gammas: Option<Layer>,
    #[prost(message, optional, tag = "40")]
    pub ip_emb_ln_betas: Option<Layer>,
    #[prost(message, optional, tag = "33")]
    pub ip_mult_gate: Option<Layer>,
    #[prost(message, optional, tag = "34")]
    pub ip_add_gate: Option<Layer>,
    #[prost(message, optional, tag = "41")]
    pub ip_emb_ffn: Option<Ffn>,
    #[prost(message, repeated, tag = "27")]
    pub encoder: Vec<EncoderLayer>,
    #[prost(uint32, optional, tag = "28")]
    pub headcount: Option<u32>,
    #[prost(message, repeated, tag = "21")]
    pub pol_encoder: Vec<EncoderLayer>,
    #[prost(message, optional, tag = "44")]
    pub value_heads: Option<ValueHeads>,
    #[prost(message, optional, tag = "45")]
    pub policy_heads: Option<PolicyHeads>,
    #[prost(message, optional, tag = "31")]
    pub ip_mov_w: Option<Layer>,
    #[prost(message, optional, tag = "32")]
    pub ip_mov_b: Option<Layer>,
    #[prost(message, optional, tag = "13")]
    pub ip1_mov_w: Option<Layer>,
    #[prost(message, optional, tag = "14")]
    pub ip1_mov_b: Option<Layer>,
    #[prost(message, optional, tag = "15")]
    pub ip2_mov_w: Option<Layer>,
    #[prost(message, optional, tag = "16")]
    pub ip2_mov_b: Option<Layer>,
    #[prost(message, optional, tag = "35")]
    pub smolgen_w: Option<Layer>,
    #[prost(message, optional, tag = "36")]
    pub smolgen_b: Option<Layer>,
}
