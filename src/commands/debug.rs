//! `cfzero debug`: look inside the encoding and the net. `debug moves` prints the policy
//! index, `debug planes` the input planes of a position (docs/METHODS.md §1), `debug attention` one
//! query square's attention map as a PNG board, `debug outputs` a net's raw outputs as JSON,
//! `debug targets` how well each recorded value predicts the games' results.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Result;
use cfzero_chess::{ChessState, HISTORY_STEPS, HistoryFill};
use cfzero_network::checkpoint::load_net;
use cfzero_network::encoding::{
    HALFMOVE_PLANE, InputPlanes, PLANES, TOKEN_FLOATS, encode_planes, encode_tokens, move_strings,
};
use clap::{Args, Subcommand, ValueEnum};
use shakmaty::{Color, Position, Square};
use tch::{Device, Tensor};

use crate::error::user_error;
use crate::plot::attention_board;
use crate::user_bail;

/// The standard start position.
const START_FEN: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

/// Arguments of `cfzero debug`.
#[derive(Debug, Args)]
pub struct DebugArgs {
    #[command(subcommand)]
    /// The subcommand.
    pub what: DebugCommand,
}

/// What to show.
#[derive(Debug, Subcommand)]
pub enum DebugCommand {
    /// The 1858 moves of the policy index as UCI strings, in index order, one a line.
    Moves,
    /// The non-zero input planes of a position, one a line.
    Planes(PlanesArgs),
    /// The attention map of one query square (a layer and head of a net), drawn on the board.
    Attention(AttentionArgs),
    /// Every head's raw outputs for the positions of a file, with their input tokens, as JSON.
    Outputs(super::debug_outputs::OutputsArgs),
    /// How well each recorded search value (root mean, best move, improved policy) and the
    /// network's value predict the results of a run's games, as JSON.
    Targets(super::debug_targets::TargetsArgs),
}

/// Arguments of `cfzero debug attention`.
#[derive(Debug, Args)]
pub struct AttentionArgs {
    /// The net.
    #[arg(long)]
    pub net: PathBuf,
    /// The position and the moves after it.
    #[command(flatten)]
    pub position: PlanesArgs,
    /// Encoder layer, from 0.
    #[arg(long, default_value_t = 0)]
    pub layer: usize,
    /// Attention head, from 0.
    #[arg(long, default_value_t = 0)]
    pub head: usize,
    /// The query square, e.g. e4.
    #[arg(long)]
    pub square: String,
    /// The PNG to write.
    #[arg(long)]
    pub out: PathBuf,
}

/// How history before the FEN is filled (Lc0's `--history-fill`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HistoryFillArg {
    /// Missing history is zero, as cfzero's self-play and training see it.
    No,
    /// Missing history copies the FEN position (Lc0's default; not for the start position).
    #[value(name = "fen_only", alias = "fen-only")]
    FenOnly,
}

impl From<HistoryFillArg> for HistoryFill {
    fn from(arg: HistoryFillArg) -> HistoryFill {
        match arg {
            HistoryFillArg::No => HistoryFill::No,
            HistoryFillArg::FenOnly => HistoryFill::FenOnly,
        }
    }
}

/// Arguments of `cfzero debug planes`.
#[derive(Debug, Args)]
pub struct PlanesArgs {
    /// Position to start from (default: the start position).
    #[arg(long, default_value = START_FEN)]
    pub fen: String,
    /// UCI moves played from the FEN, separated by spaces (e.g. "e2e4 e7e5").
    #[arg(long, default_value = "")]
    pub moves: String,
    /// How the history before the FEN is filled.
    #[arg(long, value_enum, default_value = "no")]
    pub history_fill: HistoryFillArg,
}

/// Runs `cfzero debug`.
pub fn run(args: &DebugArgs) -> Result<()> {
    let text = match &args.what {
        DebugCommand::Moves => {
            let mut s = String::with_capacity(move_strings().len() * 6);
            for m in move_strings() {
                s.push_str(m);
                s.push('\n');
            }
            s
        }
        DebugCommand::Planes(planes) => {
            let state = position(planes)?;
            describe_planes(&state, &encode_planes(&state))
        }
        DebugCommand::Attention(args) => attention(args)?,
        DebugCommand::Outputs(args) => super::debug_outputs::run(args)?,
        DebugCommand::Targets(args) => super::debug_targets::run(args)?,
    };
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        // `cfzero debug moves | head` closes the pipe early: that is not an error.
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// The position of `args` after its moves; bad FENs and moves are user errors.
fn position(args: &PlanesArgs) -> Result<ChessState> {
    let mut state =
        ChessState::from_fen(&args.fen, args.history_fill.into()).map_err(user_error)?;
    for uci in args.moves.split_whitespace() {
        state
            .play_uci(uci)
            .map_err(|e| user_error(format!("--moves: {e}")))?;
    }
    Ok(state)
}

/// Draws the attention map of `args` and describes its strongest squares.
fn attention(args: &AttentionArgs) -> Result<String> {
    let state = position(&args.position)?;
    let query: Square = args
        .square
        .parse()
        .map_err(|_| user_error(format!("--square {:?}: not a square like e4", args.square)))?;
    let net = load_net(&args.net, Device::Cpu).map_err(user_error)?;
    let (layers, heads) = (net.config.layers, net.config.heads);
    if args.layer >= layers {
        user_bail!(
            "--layer {}: the net has layers 0 to {}",
            args.layer,
            layers - 1
        );
    }
    if args.head >= heads {
        user_bail!("--head {}: the net has heads 0 to {}", args.head, heads - 1);
    }
    let mut tokens = vec![0.0f32; TOKEN_FLOATS];
    encode_tokens(&state, &mut tokens);
    let inputs = Tensor::from_slice(&tokens).view([1, 64, PLANES as i64]);
    let map =
        tch::no_grad(|| net.model.attention_map(&inputs, args.layer)).expect("the layer exists");
    // The net sees the board from the side to move: for black, token t is square t ^ 56.
    let flip = if state.turn() == Color::Black { 56 } else { 0 };
    let row = map
        .get(0)
        .get(args.head as i64)
        .get((usize::from(query) ^ flip) as i64);
    let by_token = Vec::<f32>::try_from(row.contiguous()).map_err(anyhow::Error::new)?;
    let mut weights = [0.0f32; 64];
    let mut pieces = [None; 64];
    for sq in Square::ALL {
        weights[usize::from(sq)] = by_token[usize::from(sq) ^ flip];
        pieces[usize::from(sq)] = state.position().board().piece_at(sq).map(|p| p.char());
    }
    let title = format!(
        "{}: layer {}, head {}, query {query}",
        args.net.file_stem().unwrap_or_default().to_string_lossy(),
        args.layer,
        args.head
    );
    attention_board(&weights, &pieces, usize::from(query), &title, &args.out)?;
    let mut order: Vec<usize> = (0..64).collect();
    order.sort_by(|&a, &b| weights[b].total_cmp(&weights[a]));
    let mut text = format!("{title}: wrote {}\n", args.out.display());
    for &sq in &order[..5] {
        let name = Square::new(sq as u32);
        let _ = writeln!(text, "{name} {:.1}%", 100.0 * weights[sq]);
    }
    Ok(text)
}

/// Short name of each plane.
fn plane_name(plane: usize) -> String {
    const PIECES: [&str; 6] = ["pawns", "knights", "bishops", "rooks", "queens", "king"];
    let history = HISTORY_STEPS * 13;
    if plane < history {
        let (t, i) = (plane / 13, plane % 13);
        return match i {
            0..6 => format!("t{t} our {}", PIECES[i]),
            6..12 => format!("t{t} their {}", PIECES[i - 6]),
            _ => format!("t{t} repetition"),
        };
    }
    match plane - history {
        0 => "we can O-O-O".into(),
        1 => "we can O-O".into(),
        2 => "they can O-O-O".into(),
        3 => "they can O-O".into(),
        4 => "black to move".into(),
        5 => "halfmove clock".into(),
        6 => "zeros".into(),
        _ => "ones".into(),
    }
}

/// The squares of `mask` by name (side-to-move coordinates), or "all squares".
fn squares(mask: u64) -> String {
    if mask == u64::MAX {
        return "all squares".into();
    }
    let mut s = String::new();
    let mut bits = mask;
    while bits != 0 {
        let sq = Square::new(bits.trailing_zeros());
        if !s.is_empty() {
            s.push(' ');
        }
        let _ = write!(s, "{sq}");
        bits &= bits - 1;
    }
    s
}

/// One header line, then one line per non-zero plane: index, name, mask, squares or value.
fn describe_planes(state: &ChessState, planes: &InputPlanes) -> String {
    let mut s = String::new();
    let (turn, view) = match state.turn() {
        Color::White => ("white", "as on the board"),
        Color::Black => ("black", "mirrored: rank r shown as 9-r"),
    };
    let _ = writeln!(
        s,
        "# {} ({turn} to move; squares from the side to move's view, {view})",
        state.fen()
    );
    for plane in 0..PLANES {
        let (mask, value) = (planes.masks[plane], planes.values[plane]);
        if mask == 0 || value == 0.0 {
            continue;
        }
        let what = if plane == HALFMOVE_PLANE || value != 1.0 {
            format!("value {value} on {}", squares(mask))
        } else {
            squares(mask)
        };
        let _ = writeln!(
            s,
            "{plane:>3}  {:<18} {mask:#018x}  {what}",
            plane_name(plane)
        );
    }
    s
}
