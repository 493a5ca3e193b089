//! Checkpoints: a net's weights as safetensors with its config (JSON) in the file's metadata,
//! and the trainer's optimizer state in a second safetensors file. Files are written to a
//! temporary name and renamed, so a crash never leaves a half-written checkpoint; loading
//! validates every name and shape before copying anything, so a bad file never half-loads.
//! A net file must hold every tensor of its net, except the few added to the model since (see
//! [`may_be_missing`]), which load as zeros.

use cfzero_chess::HistoryFill;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use cfzero_fsutil::write_file_atomically;
use safetensors::{Dtype, SafeTensors, tensor::TensorView};
use tch::{Device, Kind, Tensor};

use crate::config::NetworkConfig;
use crate::model::Net;
use crate::model::attention::SHAW_BIAS;
use crate::optim::NAdam;

/// Metadata key holding the network config JSON.
pub const CONFIG_KEY: &str = "cfzero.network_config";
/// Metadata key naming the file's kind and version.
pub const FORMAT_KEY: &str = "cfzero.format";
/// Format of net files.
pub const NET_FORMAT: &str = "cfzero-net-1";
/// Format of optimizer-state files.
pub const OPTIMIZER_FORMAT: &str = "cfzero-optimizer-1";

/// Why a checkpoint could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The file system failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a valid checkpoint (truncated, corrupt, wrong kind).
    #[error("{path}: not a valid checkpoint: {msg}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        msg: String,
    },
    /// The file is valid but does not fit the net it is loaded into.
    #[error("{path}: does not match the network: {msg}")]
    Mismatch {
        /// The file.
        path: PathBuf,
        /// What differs.
        msg: String,
    },
}

fn corrupt(path: &Path, msg: impl ToString) -> CheckpointError {
    CheckpointError::Corrupt {
        path: path.to_owned(),
        msg: msg.to_string(),
    }
}

fn mismatch(path: &Path, msg: impl ToString) -> CheckpointError {
    CheckpointError::Mismatch {
        path: path.to_owned(),
        msg: msg.to_string(),
    }
}

/// [`write_file_atomically`] with the error as a [`CheckpointError`].
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    write_file_atomically(path, bytes).map_err(|source| CheckpointError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Serialises named float tensors (stored as little-endian f32) with `metadata`.
fn serialize(
    path: &Path,
    tensors: &[(String, Tensor)],
    metadata: HashMap<String, String>,
) -> Result<Vec<u8>, CheckpointError> {
    let data: Vec<(String, Vec<usize>, Vec<u8>)> = tensors
        .iter()
        .map(|(name, t)| {
            let t = t.to_device(Device::Cpu).to_kind(Kind::Float).contiguous();
            let shape: Vec<usize> = t.size().iter().map(|&s| s as usize).collect();
            let values =
                Vec::<f32>::try_from(t.view([-1])).expect("float tensor converts to Vec<f32>");
            let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            (name.clone(), shape, bytes)
        })
        .collect();
    let views = data
        .iter()
        .map(|(name, shape, bytes)| {
            TensorView::new(Dtype::F32, shape.clone(), bytes)
                .map(|v| (name.clone(), v))
                .map_err(|e| corrupt(path, e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    safetensors::serialize(views, Some(metadata)).map_err(|e| corrupt(path, e))
}

/// A checkpoint file read into memory and parsed.
struct Parsed {
    metadata: HashMap<String, String>,
    tensors: HashMap<String, (Vec<i64>, Vec<f32>)>,
}

/// Checks that a file's metadata names it as `format`.
fn check_format(
    path: &Path,
    metadata: &HashMap<String, String>,
    format: &str,
) -> Result<(), CheckpointError> {
    match metadata.get(FORMAT_KEY) {
        Some(f) if f == format => Ok(()),
        Some(f) => Err(corrupt(
            path,
            format!("it is a `{f}` file, expected `{format}`"),
        )),
        None => Err(corrupt(
            path,
            format!("no `{FORMAT_KEY}` metadata (not written by cfzero)"),
        )),
    }
}

fn parse(path: &Path, bytes: &[u8], format: &str) -> Result<Parsed, CheckpointError> {
    let (_, meta) = SafeTensors::read_metadata(bytes).map_err(|e| corrupt(path, e))?;
    let metadata = meta.metadata().clone().unwrap_or_default();
    check_format(path, &metadata, format)?;
    let st = SafeTensors::deserialize(bytes).map_err(|e| corrupt(path, e))?;
    let mut tensors = HashMap::new();
    for (name, view) in st.iter() {
        if view.dtype() != Dtype::F32 {
            return Err(corrupt(
                path,
                format!("tensor `{name}` is {:?}, expected F32", view.dtype()),
            ));
        }
        let values = view
            .data()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let shape = view.shape().iter().map(|&s| s as i64).collect();
        tensors.insert(name.to_owned(), (shape, values));
    }
    Ok(Parsed { metadata, tensors })
}

fn read(path: &Path, format: &str) -> Result<Parsed, CheckpointError> {
    let bytes = std::fs::read(path).map_err(|source| CheckpointError::Io {
        path: path.to_owned(),
        source,
    })?;
    parse(path, &bytes, format)
}

/// Whether a net file may lack tensor `name`: a tensor added to the model after files were
/// first written, whose initial value is zero and leaves the net's function unchanged (so an
/// older file loads as the same net). Only the Shaw bias tables `encoder.<i>.attn.rpe_bias`.
pub fn may_be_missing(name: &str) -> bool {
    let parts: Vec<&str> = name.split('.').collect();
    matches!(
        parts.as_slice(),
        ["encoder", i, "attn", t]
            if !i.is_empty() && i.bytes().all(|c| c.is_ascii_digit()) && *t == SHAW_BIAS
    )
}

/// Checks that `parsed` has exactly the names and shapes of `targets` (except that names for
/// which `optional` holds may be missing), then copies all of them, setting missing ones to zero.
fn copy_checked(
    path: &Path,
    parsed: &Parsed,
    targets: &[(String, Tensor)],
    optional: impl Fn(&str) -> bool,
) -> Result<(), CheckpointError> {
    for (name, t) in targets {
        let Some((shape, _)) = parsed.tensors.get(name) else {
            if optional(name) {
                continue;
            }
            return Err(mismatch(path, format!("tensor `{name}` is missing")));
        };
        if *shape != t.size() {
            return Err(mismatch(
                path,
                format!(
                    "tensor `{name}` has shape {shape:?}, expected {:?}",
                    t.size()
                ),
            ));
        }
    }
    let known: std::collections::HashSet<&str> = targets.iter().map(|(n, _)| n.as_str()).collect();
    let mut extra: Vec<&str> = parsed
        .tensors
        .keys()
        .map(String::as_str)
        .filter(|n| !known.contains(n))
        .collect();
    if !extra.is_empty() {
        extra.sort_unstable();
        return Err(mismatch(path, format!("unexpected tensors {extra:?}")));
    }
    tch::no_grad(|| {
        for (name, t) in targets {
            match parsed.tensors.get(name) {
                Some((shape, values)) => {
                    let src = Tensor::from_slice(values)
                        .view(shape.as_slice())
                        .to_device(t.device())
                        .to_kind(t.kind());
                    t.shallow_clone().copy_(&src);
                }
                // Checked above: an optional tensor, which the file predates.
                None => {
                    let _ = t.shallow_clone().zero_();
                }
            }
        }
    });
    Ok(())
}

fn sorted_vars(net: &Net) -> Vec<(String, Tensor)> {
    let mut vars: Vec<(String, Tensor)> = net.vs.variables().into_iter().collect();
    vars.sort_by(|a, b| a.0.cmp(&b.0));
    vars
}

/// Saves `net` (weights and config) to `path` atomically.
pub fn save_net(net: &Net, path: &Path) -> Result<(), CheckpointError> {
    save_net_with(net, path, &[])
}

/// Saves `net` with extra metadata entries (`cfzero.` keys of the caller's, e.g. the
/// training step at which it was published).
pub fn save_net_with(
    net: &Net,
    path: &Path,
    extra: &[(&str, String)],
) -> Result<(), CheckpointError> {
    let mut metadata = HashMap::from([
        (FORMAT_KEY.to_owned(), NET_FORMAT.to_owned()),
        (CONFIG_KEY.to_owned(), net.config.to_json()),
    ]);
    metadata.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
    let bytes = serialize(path, &sorted_vars(net), metadata)?;
    write_atomic(path, &bytes)
}

/// The metadata entry `key` of the net file at `path` (`None` if it has none). Reads the
/// file's header alone, not its tensors: a run's minutes and steps are read from every net.
pub fn read_net_metadata(path: &Path, key: &str) -> Result<Option<String>, CheckpointError> {
    let mut metadata = read_header_metadata(path)?;
    check_format(path, &metadata, NET_FORMAT)?;
    Ok(metadata.remove(key))
}

/// The largest header a checkpoint may have: the bound the safetensors crate sets.
const MAX_HEADER_BYTES: u64 = 100_000_000;

/// The metadata of a safetensors file, from its header: a little-endian length, then that
/// many bytes of JSON whose `__metadata__` object holds the strings.
fn read_header_metadata(path: &Path) -> Result<HashMap<String, String>, CheckpointError> {
    use std::io::Read;
    #[derive(serde::Deserialize)]
    struct Header {
        #[serde(rename = "__metadata__", default)]
        metadata: Option<HashMap<String, String>>,
    }
    let io = |source| CheckpointError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    let mut len = [0u8; 8];
    file.read_exact(&mut len)
        .map_err(|_| corrupt(path, "shorter than a safetensors header"))?;
    let n = u64::from_le_bytes(len);
    if n > MAX_HEADER_BYTES || n > size - 8 {
        return Err(corrupt(
            path,
            format!("a header of {n} bytes in a file of {size}"),
        ));
    }
    let mut header = vec![0; n as usize];
    file.read_exact(&mut header).map_err(io)?;
    let header: Header = serde_json::from_slice(&header).map_err(|e| corrupt(path, e))?;
    Ok(header.metadata.unwrap_or_default())
}

/// Reads only the network config stored in a net file.
pub fn read_net_config(path: &Path) -> Result<NetworkConfig, CheckpointError> {
    config_of(path, &read(path, NET_FORMAT)?)
}

fn config_of(path: &Path, parsed: &Parsed) -> Result<NetworkConfig, CheckpointError> {
    let json = parsed
        .metadata
        .get(CONFIG_KEY)
        .ok_or_else(|| corrupt(path, format!("no `{CONFIG_KEY}` metadata")))?;
    let mut config: NetworkConfig = serde_json::from_str(json)
        .map_err(|e| corrupt(path, format!("bad network config: {e}")))?;
    // Nets written before the key existed were trained with no history fill.
    if !json.contains("\"history_fill\"") {
        config.history_fill = HistoryFill::No;
    }
    config.validate().map_err(|e| corrupt(path, e))?;
    Ok(config)
}

/// Checks, before a net is built from a file's config, that the net would not be much
/// larger than the weights the file holds: the config is only metadata, and one that claims
/// a far larger net must not make the loader allocate it. Memory then stays proportional to
/// the file; the exact names and shapes are checked against the built net, with messages
/// that name the tensor.
fn check_size(path: &Path, parsed: &Parsed, config: &NetworkConfig) -> Result<(), CheckpointError> {
    let needed = crate::flops::parameter_count(config);
    // The optional Shaw logit-bias tables ([`may_be_missing`]): [heads, BUCKETS] a layer.
    let optional = match config.attention.position {
        crate::config::PositionEncoding::Shaw => {
            (config.layers * config.heads * crate::model::shaw::BUCKETS) as u64
        }
        _ => 0,
    };
    let stored: u64 = parsed
        .tensors
        .values()
        .map(|(_, values)| values.len() as u64)
        .sum();
    if needed > 2 * stored + optional {
        return Err(mismatch(
            path,
            format!("it holds {stored} weights, but its config describes a net of {needed}"),
        ));
    }
    Ok(())
}

/// Loads a net file into a new [`Net`] on `device`, built from the config stored in the file.
pub fn load_net(path: &Path, device: Device) -> Result<Net, CheckpointError> {
    let parsed = read(path, NET_FORMAT)?;
    let config = config_of(path, &parsed)?;
    check_size(path, &parsed, &config)?;
    let net = Net::new(&config, device).map_err(|e| corrupt(path, e))?;
    copy_checked(path, &parsed, &sorted_vars(&net), may_be_missing)?;
    Ok(net)
}

/// Loads a net file's weights into `net`, whose config must equal the file's.
pub fn load_weights_into(net: &mut Net, path: &Path) -> Result<(), CheckpointError> {
    let parsed = read(path, NET_FORMAT)?;
    let config = config_of(path, &parsed)?;
    if config != net.config {
        return Err(mismatch(
            path,
            format!(
                "its config is {} but the net's is {}",
                config.to_json(),
                net.config.to_json()
            ),
        ));
    }
    copy_checked(path, &parsed, &sorted_vars(net), may_be_missing)
}

/// Saves the optimizer's moments and step, plus the caller's `extra` JSON (e.g. the training
/// step and RNG state), so that training resumes exactly.
pub fn save_optimizer(opt: &NAdam, extra_json: &str, path: &Path) -> Result<(), CheckpointError> {
    let mut named = Vec::new();
    for (i, (m, v)) in opt.m.iter().zip(&opt.v).enumerate() {
        named.push((format!("m.{i:05}"), m.shallow_clone()));
        named.push((format!("v.{i:05}"), v.shallow_clone()));
    }
    let state = serde_json::json!({ "step": opt.step, "moment_steps": opt.moment_steps, "mu_product": opt.mu_product, "config": opt.config });
    let metadata = HashMap::from([
        (FORMAT_KEY.to_owned(), OPTIMIZER_FORMAT.to_owned()),
        ("cfzero.optimizer".to_owned(), state.to_string()),
        ("cfzero.extra".to_owned(), extra_json.to_owned()),
    ]);
    let bytes = serialize(path, &named, metadata)?;
    write_atomic(path, &bytes)
}

/// Loads optimizer state saved by [`save_optimizer`] into `opt` (built over the same
/// parameters) and returns the `extra` JSON.
pub fn load_optimizer(opt: &mut NAdam, path: &Path) -> Result<String, CheckpointError> {
    let parsed = read(path, OPTIMIZER_FORMAT)?;
    let state_json = parsed
        .metadata
        .get("cfzero.optimizer")
        .ok_or_else(|| corrupt(path, "no optimizer metadata"))?;
    let state: serde_json::Value =
        serde_json::from_str(state_json).map_err(|e| corrupt(path, e))?;
    let step = state["step"]
        .as_u64()
        .ok_or_else(|| corrupt(path, "no step"))?;
    let mu_product = state["mu_product"]
        .as_f64()
        .ok_or_else(|| corrupt(path, "no mu_product"))?;
    let mut targets = Vec::new();
    for (i, (m, v)) in opt.m.iter().zip(&opt.v).enumerate() {
        targets.push((format!("m.{i:05}"), m.shallow_clone()));
        targets.push((format!("v.{i:05}"), v.shallow_clone()));
    }
    copy_checked(path, &parsed, &targets, |_| false)?;
    opt.step = step;
    // Files before `moment_steps` existed: the moments have been accumulating since step 0.
    opt.moment_steps = state["moment_steps"].as_u64().unwrap_or(step);
    opt.mu_product = mu_product;
    Ok(parsed
        .metadata
        .get("cfzero.extra")
        .cloned()
        .unwrap_or_default())
}
