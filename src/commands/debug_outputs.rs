//! `cfzero debug outputs`: a net's raw outputs for the positions of a file, with the input
//! tokens they came from, as JSON. Other implementations of the Chessformer (the PyTorch
//! reference in `bench/reference/`) feed the same tokens and compare every head.

use std::path::PathBuf;

use anyhow::{Context, Result};
use cfzero_chess::{ChessState, HistoryFill};
use cfzero_fsutil::write_file_atomically;
use cfzero_network::checkpoint::load_net;
use cfzero_network::encoding::{PLANES, TOKEN_FLOATS, encode_tokens_filled};
use cfzero_network::model::{ModelOutputs, ValueOutputs};
use cfzero_selfplay::openings::read_openings;
use clap::Args;
use serde::Serialize;
use tch::{Device, Kind, Tensor};

use crate::error::user_error;

/// Arguments of `cfzero debug outputs`.
#[derive(Debug, Args)]
pub struct OutputsArgs {
    /// The net (a cfzero .safetensors file).
    #[arg(long)]
    pub net: PathBuf,
    /// Positions, one FEN or EPD a line (blank lines and `#` comments skipped); all of them
    /// go through the net in one forward pass.
    #[arg(long)]
    pub positions: PathBuf,
    /// The JSON file to write.
    #[arg(long)]
    pub out: PathBuf,
}

/// The outputs of a `q` or `st` head, one entry per position.
#[derive(Debug, Serialize)]
struct ValueJson {
    /// The tanh value.
    value: Vec<f32>,
    /// The sigmoid error estimate.
    error: Vec<f32>,
    /// Logits of the 32 value buckets.
    categorical: Vec<Vec<f32>>,
}

/// Every head's raw outputs, one entry per position; heads the net lacks are `null`.
#[derive(Debug, Serialize)]
struct HeadsJson {
    /// Policy logits (1858, unmasked).
    policy: Vec<Vec<f32>>,
    /// Soft-policy logits (1858, unmasked).
    soft_policy: Option<Vec<Vec<f32>>>,
    /// Winner W/D/L logits.
    wdl: Option<Vec<Vec<f32>>>,
    /// The `q` head.
    q: Option<ValueJson>,
    /// The `st` head.
    st: Option<ValueJson>,
    /// Moves left in units of 20 plies.
    moves_left: Option<Vec<f32>>,
}

/// The whole file.
#[derive(Debug, Serialize)]
struct OutputsJson {
    /// The net's `[network]` config.
    network: serde_json::Value,
    /// The FEN of each position.
    positions: Vec<String>,
    /// Input tokens of each position, `64 * 112` floats, square-major (`[sq * 112 + plane]`).
    inputs: Vec<Vec<f32>>,
    /// The outputs of one forward pass over all positions.
    outputs: HeadsJson,
}

/// The rows of a float tensor `[B, n]`.
fn rows(t: &Tensor) -> Result<Vec<Vec<f32>>> {
    let t = t.to_device(Device::Cpu).to_kind(Kind::Float).contiguous();
    let (b, n) = t.size2().context("expected a [B, n] tensor")?;
    let flat = Vec::<f32>::try_from(t.view([-1]))?;
    Ok(flat
        .chunks(n.max(1) as usize)
        .take(b as usize)
        .map(<[f32]>::to_vec)
        .collect())
}

/// The values of a float tensor `[B]`.
fn values(t: &Tensor) -> Result<Vec<f32>> {
    Ok(Vec::<f32>::try_from(
        t.to_device(Device::Cpu).to_kind(Kind::Float).contiguous(),
    )?)
}

fn value_json(v: &ValueOutputs) -> Result<ValueJson> {
    Ok(ValueJson {
        value: values(&v.value)?,
        error: values(&v.error)?,
        categorical: rows(&v.categorical)?,
    })
}

fn heads_json(out: &ModelOutputs) -> Result<HeadsJson> {
    Ok(HeadsJson {
        policy: rows(&out.policy)?,
        soft_policy: out.soft_policy.as_ref().map(rows).transpose()?,
        wdl: out.wdl.as_ref().map(rows).transpose()?,
        q: out.q.as_ref().map(value_json).transpose()?,
        st: out.st.as_ref().map(value_json).transpose()?,
        moves_left: out.moves_left.as_ref().map(values).transpose()?,
    })
}

/// Runs `cfzero debug outputs`; returns the line to print.
pub fn run(args: &OutputsArgs) -> Result<String> {
    let positions = read_openings(&args.positions).map_err(user_error)?;
    let net = load_net(&args.net, Device::Cpu).map_err(user_error)?;
    let mut inputs = Vec::with_capacity(positions.len());
    for fen in &positions {
        let state = ChessState::from_fen(fen, HistoryFill::No).map_err(user_error)?;
        let mut tokens = vec![0.0f32; TOKEN_FLOATS];
        // The net's own convention for the history before the FEN's position.
        encode_tokens_filled(&state, net.config.history_fill, &mut tokens);
        inputs.push(tokens);
    }
    let flat: Vec<f32> = inputs.concat();
    let batch = Tensor::from_slice(&flat).view([positions.len() as i64, 64, PLANES as i64]);
    let outputs = tch::no_grad(|| net.forward(&batch));
    let report = OutputsJson {
        network: serde_json::to_value(&net.config)?,
        positions,
        inputs,
        outputs: heads_json(&outputs)?,
    };
    let text = serde_json::to_string(&report)?;
    write_file_atomically(&args.out, text.as_bytes())
        .map_err(|e| user_error(format!("cannot write {}: {e}", args.out.display())))?;
    Ok(format!(
        "wrote {} ({} positions)\n",
        args.out.display(),
        report.positions.len()
    ))
}
