//! Export of any cfzero net as an ONNX graph, for ONNX Runtime, TensorRT and Lc0's ONNX
//! backends (`onnx-cpu`, `onnx-cuda`, `onnx-trt`, `onnx-dml`).
//!
//! The graph takes Lc0's input, `/input/planes` `[batch, 112, 8, 8]` (plane `p`, square
//! `rank * 8 + file` from the side to move, the halfmove clock raw), and gives Lc0's outputs:
//! `/output/policy` (1858 logits), `/output/wdl` (probabilities; a net without a winner head
//! gives `/output/value`, its `q` head's tanh value) and `/output/mlh` (moves left in plies).
//! [`OnnxHeads::All`] adds every other head under `/output/...`. Standard operators of opset
//! [`OPSET`] only, so any runtime can run every architecture cfzero trains (Shaw, smolgen or
//! no position term; RMSNorm or LayerNorm). [`lc0_onnx_net`] wraps the graph in Lc0's net file.
//!
//! The protobuf messages are hand-written `prost` derives ([`proto`]), like Lc0's.

pub mod chessformer;
pub mod graph;
pub mod proto;

use std::io::Write;
use std::path::{Path, PathBuf};

use cfzero_fsutil::write_file_atomically;
use flate2::Compression;
use flate2::write::GzEncoder;
use prost::Message;

use crate::lc0::format as lc0_format;
use crate::lc0::proto as lc0_proto;
use cfzero_network::model::Net;
use graph::GraphBuilder;
use proto::{ModelProto, OperatorSetIdProto, StringStringEntryProto, data_type};

/// The ONNX operator set the graphs use (that of Lc0's converter by default; it has
/// `LayerNormalization`).
pub const OPSET: i64 = 17;

/// The ONNX IR version written (the one that goes with opset 17).
pub const IR_VERSION: i64 = 8;

/// The largest model a protobuf message can hold.
const PROTOBUF_LIMIT: usize = (1 << 31) - 1;

/// The tensor names of the graph; the first five are Lc0's converter's defaults.
pub mod names {
    /// Input planes `[batch, 112, 8, 8]`.
    pub const INPUT_PLANES: &str = "/input/planes";
    /// Policy logits `[batch, 1858]` (unmasked, Lc0's move index).
    pub const POLICY: &str = "/output/policy";
    /// W/D/L probabilities `[batch, 3]` from the side to move.
    pub const WDL: &str = "/output/wdl";
    /// The value in [-1, 1] `[batch, 1]`, for a net without a winner head.
    pub const VALUE: &str = "/output/value";
    /// Moves left in plies `[batch, 1]`.
    pub const MLH: &str = "/output/mlh";
    /// Soft-policy logits `[batch, 1858]` (all heads).
    pub const SOFT_POLICY: &str = "/output/soft_policy";
    /// The `q` head's tanh value `[batch, 1]` (all heads, with a winner head).
    pub const Q: &str = "/output/q";
    /// The `q` head's error estimate `[batch, 1]` (all heads).
    pub const Q_ERROR: &str = "/output/q_error";
    /// The `q` head's 32 bucket logits `[batch, 32]` (all heads).
    pub const Q_CATEGORICAL: &str = "/output/q_categorical";
    /// The `st` head's tanh value `[batch, 1]` (all heads).
    pub const ST: &str = "/output/st";
    /// The `st` head's error estimate `[batch, 1]` (all heads).
    pub const ST_ERROR: &str = "/output/st_error";
    /// The `st` head's 32 bucket logits `[batch, 32]` (all heads).
    pub const ST_CATEGORICAL: &str = "/output/st_categorical";
}

/// The float type of the graph: weights, input, activations and outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnnxPrecision {
    /// 32-bit floats.
    F32,
    /// IEEE half precision (runs on ONNX Runtime's CPU provider through its f32 kernels).
    F16,
    /// bfloat16 (GPU runtimes; ONNX Runtime's CPU provider has no bf16 kernels).
    Bf16,
}

impl OnnxPrecision {
    /// The ONNX `TensorProto.DataType` of this precision.
    pub fn data_type(self) -> i32 {
        match self {
            OnnxPrecision::F32 => data_type::FLOAT,
            OnnxPrecision::F16 => data_type::FLOAT16,
            OnnxPrecision::Bf16 => data_type::BFLOAT16,
        }
    }

    /// `values` in this precision, little-endian, rounded to nearest even.
    pub fn encode(self, values: &[f32]) -> Vec<u8> {
        match self {
            OnnxPrecision::F32 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            OnnxPrecision::F16 => values
                .iter()
                .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
                .collect(),
            OnnxPrecision::Bf16 => values
                .iter()
                .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes())
                .collect(),
        }
    }

    /// Lc0's `OnnxModel.DataType` of this precision.
    fn lc0_data_type(self) -> i32 {
        match self {
            OnnxPrecision::F32 => 1,
            OnnxPrecision::F16 => 10,
            OnnxPrecision::Bf16 => 16,
        }
    }
}

/// Which heads become outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnnxHeads {
    /// What an engine reads: policy, WDL (or value) and moves left.
    Play,
    /// Every head of the net.
    All,
}

/// How to export.
#[derive(Clone, Copy, Debug)]
pub struct OnnxOptions {
    /// The float type of the graph.
    pub precision: OnnxPrecision,
    /// Which heads become outputs.
    pub heads: OnnxHeads,
}

/// The names of the outputs an engine reads (Lc0's `OnnxModel` fields).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputNames {
    /// Policy logits.
    pub policy: String,
    /// W/D/L probabilities, if the net has a winner head.
    pub wdl: Option<String>,
    /// The value, if the net has no winner head.
    pub value: Option<String>,
    /// Moves left in plies, if the net has that head.
    pub mlh: Option<String>,
}

/// An exported graph and what an engine needs to run it.
#[derive(Clone, Debug)]
pub struct OnnxExport {
    /// The model.
    pub model: ModelProto,
    /// The model serialized.
    pub bytes: Vec<u8>,
    /// Its output names.
    pub outputs: OutputNames,
    /// Its float type.
    pub precision: OnnxPrecision,
}

/// Why a net could not be exported.
#[derive(Debug, thiserror::Error)]
pub enum OnnxError {
    /// The net has no output an engine could use as its value.
    #[error("this net cannot be exported to ONNX: {0}")]
    NotExportable(String),
    /// A weight could not be read.
    #[error("reading a weight: {0}")]
    Tensor(String),
    /// Writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// The ONNX model of `net`.
pub fn export_onnx(net: &Net, options: OnnxOptions) -> Result<OnnxExport, OnnxError> {
    let cfg = &net.config;
    if !cfg.outputs.winner && !cfg.outputs.q {
        return Err(OnnxError::NotExportable(
            "it has neither a winner (WDL) nor a q value head, so an engine would get no value"
                .to_owned(),
        ));
    }
    let mut g = GraphBuilder::new("cfzero_chessformer", options.precision);
    let outputs = tch::no_grad(|| chessformer::build(&mut g, net, options.heads))?;
    let meta = |key: &str, value: String| StringStringEntryProto {
        key: Some(key.to_owned()),
        value: Some(value),
    };
    let model = ModelProto {
        ir_version: Some(IR_VERSION),
        producer_name: Some("cfzero".to_owned()),
        producer_version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        domain: None,
        model_version: None,
        doc_string: Some(
            "A cfzero Chessformer. Input: Lc0's 112 classical planes from the side to move, \
             halfmove clock raw. Outputs: policy logits in Lc0's 1858-move order, W/D/L \
             probabilities, moves left in plies."
                .to_owned(),
        ),
        graph: Some(g.finish()),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(OPSET),
        }],
        metadata_props: vec![
            meta("cfzero.network", cfg.to_json()),
            // The input convention a caller must follow for positions set up from a FEN.
            meta("cfzero.history_fill", cfg.history_fill.name().to_owned()),
        ],
    };
    let bytes = model.encode_to_vec();
    if bytes.len() > PROTOBUF_LIMIT {
        return Err(OnnxError::NotExportable(format!(
            "the graph is {} bytes, over protobuf's 2 GiB limit for one message",
            bytes.len()
        )));
    }
    Ok(OnnxExport {
        model,
        bytes,
        outputs,
        precision: options.precision,
    })
}

/// Lc0's net file (uncompressed) holding `export`: format `NETWORK_ONNX`, the graph and the
/// names of its input and outputs, as Lc0's `leela2onnx` writes them.
pub fn lc0_onnx_net(export: &OnnxExport) -> lc0_proto::Net {
    let o = &export.outputs;
    let (output, value) = match o.wdl {
        Some(_) => (lc0_format::OUTPUT_WDL, lc0_format::VALUE_WDL),
        None => (lc0_format::OUTPUT_CLASSICAL, lc0_format::VALUE_CLASSICAL),
    };
    lc0_proto::Net {
        magic: Some(lc0_format::MAGIC),
        license: None,
        // Lc0's converter writes 0.28, the first version with ONNX backends.
        min_version: Some(lc0_proto::EngineVersion {
            major: Some(0),
            minor: Some(28),
            patch: Some(0),
        }),
        format: Some(lc0_proto::Format {
            weights_encoding: None,
            network_format: Some(lc0_proto::NetworkFormat {
                input: Some(lc0_format::INPUT_CLASSICAL_112_PLANE),
                output: Some(output),
                network: Some(lc0_format::NETWORK_ONNX),
                // The graph gathers its policy into the 1858 classical moves itself.
                policy: Some(lc0_format::POLICY_CLASSICAL),
                value: Some(value),
                moves_left: Some(if o.mlh.is_some() {
                    lc0_format::MOVES_LEFT_V1
                } else {
                    lc0_format::MOVES_LEFT_NONE
                }),
                ..lc0_proto::NetworkFormat::default()
            }),
        }),
        training_params: None,
        weights: None,
        onnx_model: Some(lc0_proto::OnnxModel {
            model: Some(export.bytes.clone()),
            data_type: Some(export.precision.lc0_data_type()),
            input_planes: Some(names::INPUT_PLANES.to_owned()),
            output_value: o.value.clone(),
            output_wdl: o.wdl.clone(),
            output_policy: Some(o.policy.clone()),
            output_mlh: o.mlh.clone(),
        }),
    }
}

/// Writes `bytes` to `path` atomically, gzip-compressed if `gzip`.
fn write(path: &Path, bytes: &[u8], gzip: bool) -> Result<(), OnnxError> {
    let io = |source| OnnxError::Io {
        path: path.to_owned(),
        source,
    };
    if gzip {
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(bytes).map_err(io)?;
        write_file_atomically(path, &gz.finish().map_err(io)?).map_err(io)
    } else {
        write_file_atomically(path, bytes).map_err(io)
    }
}

/// Exports `net` as a plain ONNX model file at `path`.
pub fn write_onnx_file(
    net: &Net,
    path: &Path,
    options: OnnxOptions,
) -> Result<OnnxExport, OnnxError> {
    let export = export_onnx(net, options)?;
    write(path, &export.bytes, false)?;
    Ok(export)
}

/// Exports `net` as Lc0's net file with an ONNX graph (`.pb.gz`) at `path`.
pub fn write_lc0_onnx_file(
    net: &Net,
    path: &Path,
    options: OnnxOptions,
) -> Result<OnnxExport, OnnxError> {
    let export = export_onnx(net, options)?;
    write(path, &lc0_onnx_net(&export).encode_to_vec(), true)?;
    Ok(export)
}
