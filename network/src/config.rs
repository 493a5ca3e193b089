//! The `[network]` table of a config: the shape of a Chessformer.

use cfzero_chess::HistoryFill;
use serde::{Deserialize, Serialize};

/// Normalisation used after each residual sum of the encoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Norm {
    /// RMSNorm: no centering, no bias (the Chessformer paper).
    #[default]
    Rms,
    /// LayerNorm with bias, as Lc0's attention bodies use (needed for export to Lc0).
    Layer,
}

/// How attention learns where squares are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PositionEncoding {
    /// Shaw relative-position tables over the 15x15 square displacements: query-, key- and
    /// value-side vectors and a logit bias per head and displacement.
    #[default]
    Shaw,
    /// Lc0's smolgen: a learned, position-dependent attention bias.
    Smolgen,
    /// No position information in attention (the embedding gates still know the squares).
    None,
}

/// The `[network.attention]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttentionConfig {
    /// Position encoding of the attention logits.
    #[serde(default)]
    pub position: PositionEncoding,
    /// Smolgen: channels each square is compressed to.
    #[serde(default = "default_smolgen_compress")]
    pub smolgen_compress: usize,
    /// Smolgen: width of the hidden layer.
    #[serde(default = "default_smolgen_hidden")]
    pub smolgen_hidden: usize,
    /// Smolgen: size of each head's generator input.
    #[serde(default = "default_smolgen_gen")]
    pub smolgen_gen: usize,
}

fn default_smolgen_compress() -> usize {
    8
}
fn default_smolgen_hidden() -> usize {
    64
}
fn default_smolgen_gen() -> usize {
    32
}

impl Default for AttentionConfig {
    fn default() -> Self {
        AttentionConfig {
            position: PositionEncoding::default(),
            smolgen_compress: default_smolgen_compress(),
            smolgen_hidden: default_smolgen_hidden(),
            smolgen_gen: default_smolgen_gen(),
        }
    }
}

/// The `[network]` table: sizes of a Chessformer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkConfig {
    /// Number of encoder layers.
    pub layers: usize,
    /// Width of each square's token.
    pub d_model: usize,
    /// Attention heads per layer (must divide `d_model`).
    pub heads: usize,
    /// Hidden width of the feed-forward blocks.
    pub dff: usize,
    /// Width of the policy head's queries and keys.
    pub d_pol: usize,
    /// Channels per square in each value head (and the moves-left head) before flattening.
    #[serde(default = "default_value_channels")]
    pub value_channels: usize,
    /// Width of the hidden layer of the value heads.
    #[serde(default = "default_value_hidden")]
    pub value_hidden: usize,
    /// Normalisation after residual sums.
    #[serde(default)]
    pub norm: Norm,
    /// Attention options.
    #[serde(default)]
    pub attention: AttentionConfig,
    /// Channels per square of the moves-left head before flattening (Lc0 uses 8).
    #[serde(default = "default_moves_left_channels")]
    pub moves_left_channels: usize,
    /// Width of the hidden layer of the moves-left head.
    #[serde(default = "default_value_hidden")]
    pub moves_left_hidden: usize,
    /// Whether the Q, K, V projections of attention have biases. The Chessformer has none;
    /// nets imported from Lc0 have them.
    #[serde(default)]
    pub qkv_bias: bool,
    /// Which optional heads exist (the `[network.outputs]` table).
    #[serde(default)]
    pub outputs: HeadsConfig,
    /// How the input history before a position set up from a FEN is filled, the one
    /// convention of this net in every code path (self-play openings, matches, UCI
    /// `position fen`, puzzles, training samples, V6 export): `"fen_only"` (Lc0's default
    /// and its training data's: every missing step repeats the position; the standard start
    /// position gets no fill) or `"no"` (missing steps stay empty). Net files written before
    /// this key existed read as `"no"`, the convention they were trained with.
    #[serde(default)]
    pub history_fill: HistoryFill,
}

fn default_moves_left_channels() -> usize {
    8
}

fn yes() -> bool {
    true
}

/// The `[network.outputs]` table: which optional heads the net has (the policy head always exists).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeadsConfig {
    /// Soft policy head (learns the search policy at temperature 4).
    #[serde(default = "yes")]
    pub soft_policy: bool,
    /// Winner head: win/draw/loss logits of the game result.
    #[serde(default = "yes")]
    pub winner: bool,
    /// `q` head: the root search value.
    #[serde(default = "yes")]
    pub q: bool,
    /// `st` head: the short-term value.
    #[serde(default = "yes")]
    pub st: bool,
    /// Moves-left head.
    #[serde(default = "yes")]
    pub moves_left: bool,
}

impl HeadsConfig {
    /// The heads a search reads (what `Chessformer::forward_play` computes): the winner
    /// head, or the `q` head in a net without one.
    pub fn for_play(self) -> HeadsConfig {
        HeadsConfig {
            soft_policy: false,
            winner: self.winner,
            q: self.q && !self.winner,
            st: false,
            moves_left: false,
        }
    }
}

impl Default for HeadsConfig {
    fn default() -> Self {
        HeadsConfig {
            soft_policy: true,
            winner: true,
            q: true,
            st: true,
            moves_left: true,
        }
    }
}

/// Weight of each loss term (defaults: docs/METHODS.md §2). Not part of [`NetworkConfig`] (it
/// does not change the architecture): the trainer's config holds it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LossWeights {
    /// Cross-entropy of the policy against the search policy.
    pub policy: f64,
    /// Cross-entropy of the soft policy against the search policy at temperature 4.
    pub soft_policy: f64,
    /// Cross-entropy of the winner head against the game result.
    pub winner: f64,
    /// Squared error of the `q` head's scalar.
    pub q: f64,
    /// Squared error of the `q` head's error estimate.
    pub q_error: f64,
    /// Cross-entropy of the `q` head's categorical buckets.
    pub q_categorical: f64,
    /// Squared error of the `st` head's scalar.
    pub st: f64,
    /// Squared error of the `st` head's error estimate.
    pub st_error: f64,
    /// Cross-entropy of the `st` head's categorical buckets.
    pub st_categorical: f64,
    /// Huber loss of the moves-left head.
    pub moves_left: f64,
    /// Not a weight: the width, in buckets, of the HL-Gauss label smoothing of the
    /// categorical value targets (`q`, `st`); 0 (the default) trains them on two-hot
    /// targets. ChessBench's 0.75 suits labels from a teacher (docs/METHODS.md, "Teacher").
    pub hl_gauss_sigma: f64,
}

impl LossWeights {
    /// The weight of `term`: the one place where a term meets its config field.
    pub fn weight(&self, term: crate::loss::LossTerm) -> f64 {
        use crate::loss::LossTerm;
        match term {
            LossTerm::Policy => self.policy,
            LossTerm::SoftPolicy => self.soft_policy,
            LossTerm::Winner => self.winner,
            LossTerm::Q => self.q,
            LossTerm::QError => self.q_error,
            LossTerm::QCategorical => self.q_categorical,
            LossTerm::St => self.st,
            LossTerm::StError => self.st_error,
            LossTerm::StCategorical => self.st_categorical,
            LossTerm::MovesLeft => self.moves_left,
        }
    }
}

impl Default for LossWeights {
    fn default() -> Self {
        LossWeights {
            policy: 1.0,
            soft_policy: 8.0,
            winner: 1.0,
            q: 1.0,
            q_error: 1.0,
            q_categorical: 0.1,
            st: 1.0,
            st_error: 1.0,
            st_categorical: 0.1,
            moves_left: 1.0,
            hl_gauss_sigma: 0.0,
        }
    }
}

/// The most encoder layers a config may have.
pub const MAX_LAYERS: usize = 256;
/// The most attention heads.
pub const MAX_HEADS: usize = 256;
/// The widest `d_model`, `dff`, `d_pol` and hidden layer.
pub const MAX_WIDTH: usize = 16_384;
/// The most channels per square of a head (and of smolgen's compression and generator).
pub const MAX_CHANNELS: usize = 4096;
/// The most parameters of a net: 40 GB of f32 weights, some 170 times the largest preset.
pub const MAX_PARAMETERS: u64 = 10_000_000_000;

/// A config that cannot describe a network.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A size is zero or inconsistent with another.
    #[error("network config: {0}")]
    Invalid(String),
    /// The TOML text does not parse.
    #[error("network config: {0}")]
    Parse(String),
}

/// Only the `[network]` table of a config file; other tables are ignored.
#[derive(Debug, Deserialize)]
struct NetworkOnly {
    network: NetworkConfig,
}

impl NetworkConfig {
    /// Parses the `[network]` table of a whole config file (other tables are ignored) and validates it.
    pub fn from_toml_file_text(text: &str) -> Result<NetworkConfig, ConfigError> {
        let only: NetworkOnly = toml::from_str(text)
            .map_err(|e| ConfigError::Parse(e.to_string().replace('\n', " ")))?;
        only.network.validate()?;
        Ok(only.network)
    }

    /// Checks that the sizes describe a buildable network: every size at least 1 and at
    /// most a bound far above any real net's (so that a corrupt or hostile config, e.g. in a
    /// net file's metadata, is an error instead of a libtorch panic or an allocation of
    /// terabytes), and at most [`MAX_PARAMETERS`] weights in all.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |msg: String| Err(ConfigError::Invalid(msg));
        for (name, v, max) in [
            ("layers", self.layers, MAX_LAYERS),
            ("d_model", self.d_model, MAX_WIDTH),
            ("heads", self.heads, MAX_HEADS),
            ("dff", self.dff, MAX_WIDTH),
            ("d_pol", self.d_pol, MAX_WIDTH),
            ("value_channels", self.value_channels, MAX_CHANNELS),
            ("value_hidden", self.value_hidden, MAX_WIDTH),
            (
                "moves_left_channels",
                self.moves_left_channels,
                MAX_CHANNELS,
            ),
            ("moves_left_hidden", self.moves_left_hidden, MAX_WIDTH),
        ] {
            if v == 0 {
                return bad(format!("`{name}` must be at least 1"));
            }
            if v > max {
                return bad(format!("`{name}` must be at most {max} (got {v})"));
            }
        }
        if !self.d_model.is_multiple_of(self.heads) {
            return bad(format!(
                "`heads` ({}) must divide `d_model` ({})",
                self.heads, self.d_model
            ));
        }
        if self.attention.position == PositionEncoding::Smolgen {
            let a = &self.attention;
            for (name, v, max) in [
                ("smolgen_compress", a.smolgen_compress, MAX_CHANNELS),
                ("smolgen_hidden", a.smolgen_hidden, MAX_WIDTH),
                ("smolgen_gen", a.smolgen_gen, MAX_CHANNELS),
            ] {
                if v == 0 {
                    return bad(format!("`attention.{name}` must be at least 1"));
                }
                if v > max {
                    return bad(format!(
                        "`attention.{name}` must be at most {max} (got {v})"
                    ));
                }
            }
        }
        // The sizes are bounded above, so the count cannot overflow.
        let parameters = crate::flops::parameter_count(self);
        if parameters > MAX_PARAMETERS {
            return bad(format!(
                "`layers` ({}) and `d_model` ({}) with the other sizes make {parameters} \
                 parameters, more than the {MAX_PARAMETERS} allowed",
                self.layers, self.d_model
            ));
        }
        Ok(())
    }

    /// Width of one attention head.
    pub fn d_head(&self) -> usize {
        self.d_model / self.heads
    }

    /// The config as JSON (stored in checkpoints).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a NetworkConfig always serialises to JSON")
    }
}

fn default_value_channels() -> usize {
    32
}
fn default_value_hidden() -> usize {
    128
}
