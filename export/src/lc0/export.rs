//! cfzero net -> Lc0 file.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use cfzero_fsutil::write_file_atomically;
use flate2::Compression;
use flate2::write::GzEncoder;
use prost::Message;
use tch::Tensor;

use super::bindings::{Source, bindings};
use super::layer::{LayerEncoding, encode};
use super::proto::{EngineVersion, Format, Net as NetFile, Weights};
use super::{Lc0Error, format};
use cfzero_network::config::{NetworkConfig, Norm, PositionEncoding};
use cfzero_network::model::Net;

/// The preset to point users at when their net does not export.
const EXPORTABLE_PRESET: &str =
    "configs/lc0-bt-tiny.toml (norm = \"layer\", position = \"smolgen\")";

/// Checks that Lc0 can run a net of shape `cfg`; the error says what stands in the way and
/// which shape exports.
pub fn check_exportable(cfg: &NetworkConfig) -> Result<(), Lc0Error> {
    let refuse = |why: &str| {
        Err(Lc0Error::NotExportable(format!(
            "{why}; export it with --format lc0-onnx for Lc0's ONNX backends, or train a net like {EXPORTABLE_PRESET} for Lc0's own"
        )))
    };
    if cfg.norm != Norm::Layer {
        return refuse("it uses RMSNorm and Lc0 has only LayerNorm (norm = \"layer\")");
    }
    if cfg.attention.position == PositionEncoding::Shaw {
        return refuse(
            "it uses Shaw relative-position attention, which Lc0 refuses (\"RPE weights file not supported\")",
        );
    }
    if !cfg.outputs.winner {
        return refuse("it has no winner (WDL) value head, the value Lc0 reads");
    }
    Ok(())
}

/// The Lc0 file of `net`, uncompressed. Lc0 reads the vanilla policy, the winner value
/// head and moves left; the soft policy and the q and st heads are left out.
pub fn export_net(net: &Net, encoding: LayerEncoding) -> Result<NetFile, Lc0Error> {
    let cfg = &net.config;
    check_exportable(cfg)?;
    let vars: HashMap<String, Tensor> = net.vs.variables();
    let mut weights = Weights {
        headcount: Some(cfg.heads as u32),
        ..Weights::default()
    };
    for binding in bindings(cfg) {
        let values = match &binding.ours {
            Source::Zeros(n) => vec![0.0; *n],
            Source::Var(name) => {
                let t = vars.get(name).ok_or_else(|| {
                    Lc0Error::NotExportable(format!("the net has no variable `{name}`"))
                })?;
                let shape: Vec<usize> = t.size().iter().map(|&s| s as usize).collect();
                let flat = Vec::<f32>::try_from(t.flatten(0, -1).to_kind(tch::Kind::Float))
                    .map_err(|e| Lc0Error::NotExportable(format!("`{name}`: {e}")))?;
                binding.transform.to_lc0(&flat, &shape)
            }
        };
        *binding.access.slot(&mut weights) = Some(encode(&values, encoding));
    }
    let minor = match encoding {
        // Per-layer FLOAT32 arrived in Lc0 0.33; LINEAR16 multi-head bodies read from 0.30.
        LayerEncoding::Float32 => 33,
        LayerEncoding::Linear16 => 30,
    };
    Ok(NetFile {
        magic: Some(format::MAGIC),
        license: None,
        min_version: Some(EngineVersion {
            major: Some(0),
            minor: Some(minor),
            patch: Some(0),
        }),
        format: Some(Format {
            weights_encoding: Some(format::FORMAT_LINEAR16),
            network_format: Some(format::written(cfg.outputs.moves_left)),
        }),
        training_params: None,
        weights: Some(weights),
        onnx_model: None,
    })
}

/// Exports `net` to `path` (gzip-compressed, written atomically).
pub fn write_lc0_file(net: &Net, path: &Path, encoding: LayerEncoding) -> Result<(), Lc0Error> {
    let file = export_net(net, encoding)?;
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    let io = |source| Lc0Error::Io {
        path: path.to_owned(),
        source,
    };
    gz.write_all(&file.encode_to_vec()).map_err(io)?;
    let bytes = gz.finish().map_err(io)?;
    write_file_atomically(path, &bytes).map_err(io)
}
