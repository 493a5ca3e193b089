//! The `NetworkFormat` of the nets cfzero writes and reads: 112 classical input planes,
//! an attention body with multi-head format, attention policy, WDL value, moves-left V1,
//! Mish everywhere but smolgen (Swish), PE_MAP input embedding.

use super::proto::NetworkFormat;
use crate::lc0::Lc0Finding;

/// `INPUT_CLASSICAL_112_PLANE`.
pub const INPUT_CLASSICAL_112_PLANE: i32 = 1;
/// `OUTPUT_CLASSICAL`: a single value.
pub const OUTPUT_CLASSICAL: i32 = 1;
/// `OUTPUT_WDL`.
pub const OUTPUT_WDL: i32 = 2;
/// `NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT`.
pub const NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT: i32 = 7;
/// `NETWORK_ONNX`: the net is an ONNX graph (`Net.onnx_model`).
pub const NETWORK_ONNX: i32 = 5;
/// `POLICY_CLASSICAL`: 1858 logits in Lc0's move order.
pub const POLICY_CLASSICAL: i32 = 1;
/// `POLICY_ATTENTION`.
pub const POLICY_ATTENTION: i32 = 3;
/// `VALUE_CLASSICAL`: a single value.
pub const VALUE_CLASSICAL: i32 = 1;
/// `VALUE_WDL`.
pub const VALUE_WDL: i32 = 2;
/// `MOVES_LEFT_NONE`.
pub const MOVES_LEFT_NONE: i32 = 0;
/// `MOVES_LEFT_V1`.
pub const MOVES_LEFT_V1: i32 = 1;
/// `DEFAULT_ACTIVATION_MISH`.
pub const DEFAULT_ACTIVATION_MISH: i32 = 1;
/// `ACTIVATION_DEFAULT` (the default activation, Mish here).
pub const ACTIVATION_DEFAULT: i32 = 0;
/// `ACTIVATION_MISH`.
pub const ACTIVATION_MISH: i32 = 1;
/// `ACTIVATION_SWISH`.
pub const ACTIVATION_SWISH: i32 = 7;
/// `INPUT_EMBEDDING_NONE`: the embedding sees the 112 planes only.
pub const INPUT_EMBEDDING_NONE: i32 = 0;
/// `INPUT_EMBEDDING_PE_MAP`: 64 fixed positional features follow the 112 planes.
pub const INPUT_EMBEDDING_PE_MAP: i32 = 1;
/// `Format.Encoding` LINEAR16: the file-level encoding field; layers may override it.
pub const FORMAT_LINEAR16: i32 = 1;
/// The magic number every Lc0 weights file starts with.
pub const MAGIC: u32 = 0x1c0;
/// Inputs of a PE_MAP embedding: the 112 planes and 64 positional features.
pub const PE_MAP_INPUTS: usize = 176;

/// The format cfzero writes, every field set explicitly (Lc0 fills unset fields of old
/// files with other defaults).
pub fn written(moves_left: bool) -> NetworkFormat {
    NetworkFormat {
        input: Some(INPUT_CLASSICAL_112_PLANE),
        output: Some(OUTPUT_WDL),
        network: Some(NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT),
        policy: Some(POLICY_ATTENTION),
        value: Some(VALUE_WDL),
        moves_left: Some(if moves_left {
            MOVES_LEFT_V1
        } else {
            MOVES_LEFT_NONE
        }),
        default_activation: Some(DEFAULT_ACTIVATION_MISH),
        smolgen_activation: Some(ACTIVATION_SWISH),
        ffn_activation: Some(ACTIVATION_MISH),
        input_embedding: Some(INPUT_EMBEDDING_PE_MAP),
    }
}

/// Checks that a file's format is one cfzero evaluates exactly as Lc0 does; the error
/// names the first field that differs. The smolgen activation matters only to smolgen nets.
pub fn check_readable(f: &NetworkFormat, smolgen: bool) -> Result<(), Lc0Finding> {
    let expect = |name: &str, got: Option<i32>, allowed: &[i32], what: &str| {
        let value = got.unwrap_or(0);
        if allowed.contains(&value) {
            Ok(())
        } else {
            Err(format!("network_format.{name} is {value}, expected {what}"))
        }
    };
    expect(
        "input",
        f.input,
        &[INPUT_CLASSICAL_112_PLANE],
        "1 (the classical 112 planes)",
    )?;
    expect("output", f.output, &[OUTPUT_WDL], "2 (WDL)")?;
    expect(
        "network",
        f.network,
        &[NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT],
        "7 (attention body with multi-head format)",
    )?;
    expect(
        "policy",
        f.policy,
        &[POLICY_ATTENTION],
        "3 (attention policy)",
    )?;
    expect("value", f.value, &[VALUE_WDL], "2 (WDL)")?;
    expect(
        "moves_left",
        f.moves_left,
        &[MOVES_LEFT_NONE, MOVES_LEFT_V1],
        "0 or 1",
    )?;
    expect(
        "default_activation",
        f.default_activation,
        &[DEFAULT_ACTIVATION_MISH],
        "1 (Mish)",
    )?;
    expect(
        "ffn_activation",
        f.ffn_activation,
        &[ACTIVATION_DEFAULT, ACTIVATION_MISH],
        "Mish",
    )?;
    if smolgen {
        expect(
            "smolgen_activation",
            f.smolgen_activation,
            &[ACTIVATION_SWISH],
            "7 (Swish)",
        )?;
    }
    expect(
        "input_embedding",
        f.input_embedding,
        &[INPUT_EMBEDDING_NONE, INPUT_EMBEDDING_PE_MAP],
        "0 (none) or 1 (PE_MAP); PE_DENSE nets have an embedding preprocessor and LayerNorm cfzero lacks",
    )
    .map_err(Lc0Finding)
}
