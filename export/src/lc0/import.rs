//! Lc0 file -> cfzero net, for attention bodies cfzero evaluates exactly as Lc0 does.

use cfzero_chess::HistoryFill;
use std::path::Path;

use prost::Message;
use tch::{Device, Tensor};

use super::Lc0Error;
use super::bindings::{Source, Transform, bindings};
use super::bounds::{MAX_DECOMPRESSED, check_repeated_fields, gunzip_bounded};
use super::format::{self, MOVES_LEFT_V1, PE_MAP_INPUTS};
use super::layer::{LayerError, decode, value_count};
use super::proto::{Layer, Net as NetFile, Weights};
use cfzero_network::config::{AttentionConfig, HeadsConfig, NetworkConfig, Norm, PositionEncoding};
use cfzero_network::encoding::PLANES;
use cfzero_network::model::Net;

/// Reads and imports the Lc0 net at `path` onto `device`.
pub fn read_lc0_file(path: &Path, device: Device) -> Result<Net, Lc0Error> {
    let name = path.display().to_string();
    let io = |source| Lc0Error::Io {
        path: path.to_owned(),
        source,
    };
    let compressed = std::fs::read(path).map_err(io)?;
    let corrupt = |reason: String| Lc0Error::Corrupt {
        path: name.clone(),
        reason,
    };
    // Bounded before anything is built from the file (see `bounds`).
    let bytes = gunzip_bounded(&compressed, MAX_DECOMPRESSED).map_err(|f| corrupt(f.0))?;
    check_repeated_fields(&bytes).map_err(|f| corrupt(f.0))?;
    let file = NetFile::decode(bytes.as_slice()).map_err(|e| Lc0Error::Corrupt {
        path: name.clone(),
        reason: format!("not a pblczero.Net protobuf ({e})"),
    })?;
    import_net(&file, &name, device)
}

/// Imports a decoded Lc0 net; `name` names it in errors.
pub fn import_net(file: &NetFile, name: &str, device: Device) -> Result<Net, Lc0Error> {
    let unsupported = |reason: String| Lc0Error::Unsupported {
        path: name.to_owned(),
        reason,
    };
    let corrupt = |reason: String| Lc0Error::Corrupt {
        path: name.to_owned(),
        reason,
    };
    if file.magic != Some(format::MAGIC) {
        return Err(corrupt(format!(
            "magic is {:#x}, expected {:#x}",
            file.magic.unwrap_or(0),
            format::MAGIC
        )));
    }
    let Some(weights) = &file.weights else {
        return Err(unsupported(if file.onnx_model.is_some() {
            "an ONNX net (only protobuf weights import)".into()
        } else {
            "the file has no weights".into()
        }));
    };
    let net_format = file
        .format
        .as_ref()
        .and_then(|f| f.network_format.as_ref())
        .ok_or_else(|| unsupported("no network_format (a pre-attention net)".into()))?;
    let smolgen = weights
        .encoder
        .first()
        .and_then(|e| e.mha.as_ref())
        .is_some_and(|m| m.smolgen.is_some());
    format::check_readable(net_format, smolgen).map_err(|f| unsupported(f.0))?;
    refuse_extras(weights).map_err(unsupported)?;
    let moves_left = net_format.moves_left == Some(MOVES_LEFT_V1);
    let config = infer_config(weights, smolgen, moves_left).map_err(corrupt)?;
    config
        .validate()
        .map_err(|e| corrupt(format!("its shape is not a valid cfzero net: {e}")))?;

    let net = Net::new(&config, device).map_err(|e| corrupt(e.to_string()))?;
    let vars = net.vs.variables();
    let mut weights = weights.clone();
    for binding in bindings(&config) {
        let Source::Var(var_name) = &binding.ours else {
            continue; // import always sets qkv_bias, so every slot has a variable
        };
        let layer = binding
            .access
            .slot(&mut weights)
            .as_ref()
            .ok_or_else(|| corrupt(format!("`{}` is missing", binding.lc0)))?;
        let values =
            decode(layer).map_err(|e: LayerError| corrupt(format!("`{}`: {e}", binding.lc0)))?;
        let var = &vars[var_name];
        let shape: Vec<usize> = var.size().iter().map(|&s| s as usize).collect();
        if binding.transform == Transform::Embedding {
            check_positional_columns(&values, shape[0]).map_err(unsupported)?;
        }
        let ours = binding.transform.from_lc0(&values, &shape).ok_or_else(|| {
            corrupt(format!(
                "`{}` has {} values, which do not fit cfzero's {:?}",
                binding.lc0,
                values.len(),
                shape
            ))
        })?;
        tch::no_grad(|| {
            let src = Tensor::from_slice(&ours).view(var.size().as_slice());
            var.shallow_clone().copy_(&src);
        });
    }
    Ok(net)
}

/// Refuses parts of Lc0 nets that cfzero's model does not have.
fn refuse_extras(w: &Weights) -> Result<(), String> {
    if !w.residual.is_empty() {
        return Err("a residual (convolutional) body; only attention bodies import".into());
    }
    if w.encoder.is_empty() {
        return Err("no encoder layers".into());
    }
    if w.ip_emb_preproc_w.is_some() || w.ip_emb_ln_gammas.is_some() || w.ip_emb_ffn.is_some() {
        return Err("an embedding preprocessor, LayerNorm or FFN (PE_DENSE style), which cfzero's embedding lacks".into());
    }
    let policy_encoders = w
        .policy_heads
        .as_ref()
        .and_then(|p| p.vanilla.as_ref())
        .is_some_and(|v| !v.pol_encoder.is_empty());
    if !w.pol_encoder.is_empty() || policy_encoders {
        return Err("encoder layers inside the policy head".into());
    }
    for (i, layer) in w.encoder.iter().enumerate() {
        let mha = layer.mha.as_ref();
        if mha.is_some_and(|m| m.rpe_q.is_some() || m.rpe_k.is_some() || m.rpe_v.is_some()) {
            return Err(format!(
                "relative-position (RPE) tables in encoder layer {i}"
            ));
        }
    }
    if let Some(b) = &w.smolgen_b
        && decode(b)
            .map_err(|e| e.to_string())?
            .iter()
            .any(|&v| v != 0.0)
    {
        return Err("a smolgen generator bias (smolgen_b), which cfzero's smolgen has not".into());
    }
    Ok(())
}

/// cfzero's embedding reads only the 112 planes; a PE_MAP net whose positional columns
/// are not zero would evaluate differently.
fn check_positional_columns(values: &[f32], rows: usize) -> Result<(), String> {
    if rows == 0 || values.len() != rows * PE_MAP_INPUTS {
        return Ok(()); // a 112-column embedding, or a size error reported by the caller
    }
    let nonzero = values
        .chunks_exact(PE_MAP_INPUTS)
        .any(|row| row[PLANES..].iter().any(|&v| v != 0.0));
    if nonzero {
        return Err(
            "ip_emb_w has non-zero weights on the PE_MAP positional features (columns 112..175), which cfzero's embedding does not have"
                .into(),
        );
    }
    Ok(())
}

/// Number of values a layer holds, without decoding it.
fn count(layer: Option<&Layer>, name: &str) -> Result<usize, String> {
    let layer = layer.ok_or_else(|| format!("`{name}` is missing"))?;
    Ok(value_count(layer))
}

/// The shape of the net, from the sizes of its layers.
fn infer_config(w: &Weights, smolgen: bool, moves_left: bool) -> Result<NetworkConfig, String> {
    let d_model = count(w.ip_emb_b.as_ref(), "ip_emb_b")?;
    let heads = w.headcount.unwrap_or(0) as usize;
    if heads == 0 {
        return Err("headcount is missing".into());
    }
    let first = &w.encoder[0];
    let mha = first.mha.as_ref().ok_or("`encoder[0].mha` is missing")?;
    let ffn = first.ffn.as_ref().ok_or("`encoder[0].ffn` is missing")?;
    let dff = count(ffn.dense1_b.as_ref(), "encoder[0].ffn.dense1_b")?;
    let policy = w.policy_heads.as_ref().ok_or("`policy_heads` is missing")?;
    let d_pol = count(policy.ip_pol_b.as_ref(), "policy_heads.ip_pol_b")?;
    let winner = w
        .value_heads
        .as_ref()
        .and_then(|v| v.winner.as_ref())
        .ok_or("`value_heads.winner` is missing")?;
    let value_channels = count(winner.ip_val_b.as_ref(), "value_heads.winner.ip_val_b")?;
    let value_hidden = count(winner.ip1_val_b.as_ref(), "value_heads.winner.ip1_val_b")?;
    let (moves_left_channels, moves_left_hidden) = if moves_left {
        (
            count(w.ip_mov_b.as_ref(), "ip_mov_b")?,
            count(w.ip1_mov_b.as_ref(), "ip1_mov_b")?,
        )
    } else {
        (8, 128)
    };
    let mut attention = AttentionConfig {
        position: PositionEncoding::None,
        ..AttentionConfig::default()
    };
    if smolgen {
        let sg = mha.smolgen.as_ref().ok_or("smolgen is missing")?;
        let compress = count(sg.compress.as_ref(), "encoder[0].mha.smolgen.compress")?;
        let gen_total = count(sg.dense2_b.as_ref(), "encoder[0].mha.smolgen.dense2_b")?;
        attention = AttentionConfig {
            position: PositionEncoding::Smolgen,
            smolgen_compress: compress / d_model.max(1),
            smolgen_hidden: count(sg.dense1_b.as_ref(), "encoder[0].mha.smolgen.dense1_b")?,
            smolgen_gen: gen_total / heads,
        };
    }
    Ok(NetworkConfig {
        layers: w.encoder.len(),
        d_model,
        heads,
        dff,
        d_pol,
        value_channels,
        value_hidden,
        norm: Norm::Layer,
        attention,
        moves_left_channels,
        moves_left_hidden,
        qkv_bias: true,
        // Lc0 trains and plays with fen_only.
        history_fill: HistoryFill::FenOnly,
        outputs: HeadsConfig {
            soft_policy: false,
            winner: true,
            q: false,
            st: false,
            moves_left,
        },
    })
}
