//! `cfzero match`: a match between two players (nets, UCI engines, a random or a 1-ply
//! material-greedy mover) from
//! an opening suite, each opening played with both colours, with the score, the Elo
//! difference and its 95% interval, and an optional SPRT that stops the match once decided.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use cfzero_chess::{ChessState, HistoryFill};
use cfzero_eval::arena::{
    ArenaGame, GreedyPlayer, MatchOptions, MatchScore, Player, RandomPlayer, SearchPlayer,
    run_match, score_sample,
};
use cfzero_eval::elo::{Sprt, SprtDecision, signed_elo};
use cfzero_eval::uci_client::{UciLimit, UciPlayer, parse_option, resolve_command};
use cfzero_inference::InferenceHandle;
use cfzero_inference::backend::BackendChoice;
use cfzero_mcts::SearchConfig;
use cfzero_network::Precision;
use cfzero_selfplay::openings::read_openings;
use cfzero_selfplay::pgn::{PgnTags, moves_to_pgn};
use clap::Args;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::net_play::{arena_error, play_search, serve_net};
use crate::error::user_error;
use crate::flags::{DeviceFlag, PlayFlags};
use crate::run::progress::bar;
use crate::user_bail;

/// One side of a match, as given on the command line (the `--a-*` or `--b-*` options).
#[derive(Debug, Clone)]
struct SideArgs {
    net: Option<PathBuf>,
    sims: u32,
    batch: usize,
    uci: Option<String>,
    options: Vec<String>,
    nodes: Option<u64>,
    movetime: Option<u64>,
    depth: Option<u32>,
    random: bool,
    greedy: bool,
}

/// Arguments of `cfzero match`. Each side is one of `--X-net`, `--X-uci`, `--X-random` or
/// `--X-greedy` (X = a or b).
#[derive(Debug, Args)]
pub struct MatchArgs {
    /// Player A (whose score is reported): a net file.
    #[arg(long)]
    pub a_net: Option<PathBuf>,
    /// Player A: simulations per move of its net (default: the `--config`'s `[search]
    /// simulations`, else that table's default).
    #[arg(long)]
    pub a_sims: Option<u32>,
    /// Player A: leaves each search of its net evaluates together, selected with
    /// visits in flight as the UCI engine does (`[search] batch`); 1, the default, is the
    /// sequential search. For measuring what batching costs in play.
    #[arg(long, default_value_t = 1)]
    pub a_batch: usize,
    /// Player A: a UCI engine command line (a bare name is looked for on `PATH`, then in
    /// `/usr/games`).
    #[arg(long)]
    pub a_uci: Option<String>,
    /// Player A: a UCI option `Name=Value` (repeatable).
    #[arg(long)]
    pub a_option: Vec<String>,
    /// Player A: UCI nodes per move.
    #[arg(long)]
    pub a_nodes: Option<u64>,
    /// Player A: UCI milliseconds per move.
    #[arg(long)]
    pub a_movetime: Option<u64>,
    /// Player A: UCI depth per move.
    #[arg(long)]
    pub a_depth: Option<u32>,
    /// Player A: a uniformly random mover.
    #[arg(long)]
    pub a_random: bool,
    /// Player A: a 1-ply material-greedy mover (mates, else takes the most material).
    #[arg(long)]
    pub a_greedy: bool,
    /// Player B: a net file.
    #[arg(long)]
    pub b_net: Option<PathBuf>,
    /// Player B: simulations per move of its net (default: the `--config`'s `[search]
    /// simulations`, else that table's default).
    #[arg(long)]
    pub b_sims: Option<u32>,
    /// Player B: leaves each search of its net evaluates together, selected with
    /// visits in flight as the UCI engine does (`[search] batch`); 1, the default, is the
    /// sequential search. For measuring what batching costs in play.
    #[arg(long, default_value_t = 1)]
    pub b_batch: usize,
    /// Player B: a UCI engine command line (a bare name is looked for on `PATH`, then in
    /// `/usr/games`).
    #[arg(long)]
    pub b_uci: Option<String>,
    /// Player B: a UCI option `Name=Value` (repeatable).
    #[arg(long)]
    pub b_option: Vec<String>,
    /// Player B: UCI nodes per move.
    #[arg(long)]
    pub b_nodes: Option<u64>,
    /// Player B: UCI milliseconds per move.
    #[arg(long)]
    pub b_movetime: Option<u64>,
    /// Player B: UCI depth per move.
    #[arg(long)]
    pub b_depth: Option<u32>,
    /// Player B: a uniformly random mover.
    #[arg(long)]
    pub b_random: bool,
    /// Player B: a 1-ply material-greedy mover (mates, else takes the most material).
    #[arg(long)]
    pub b_greedy: bool,
    /// Games in all (default: each opening twice). Openings repeat when there are more
    /// games than twice the openings.
    #[arg(long)]
    pub games: Option<usize>,
    /// Opening suite: EPD or FEN lines, or a `.pgn` file whose games end in the openings
    /// (default: the standard start position).
    #[arg(long)]
    pub openings: Option<PathBuf>,
    /// Games played at the same time (default: 64 between nets, 2 with a UCI engine).
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Games reaching this many plies are adjudicated a draw.
    #[arg(long, default_value_t = cfzero_eval::arena::MATCH_MAX_PLIES)]
    pub max_plies: u32,
    /// Stop once a sequential probability ratio test decides between `ELO0` and `ELO1`
    /// (alpha = beta = 0.05), given as `ELO0,ELO1`, e.g. `0,50`.
    #[arg(long)]
    pub sprt: Option<String>,
    /// Write the games to this PGN file as they end.
    #[arg(long)]
    pub pgn: Option<PathBuf>,
    /// The search constants of nets: the `[search]` table of this config (default:
    /// docs/METHODS.md §3). Matches search without root noise.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Seed of the random mover, the greedy mover's tie-breaks and search tie-breaks.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub device: DeviceFlag,
    #[command(flatten)]
    pub play: PlayFlags,
    /// Player A's precision, instead of `--precision` (e.g. a net in bf16 against itself in f32).
    #[arg(long)]
    pub a_precision: Option<Precision>,
    /// Player B's precision, instead of `--precision`.
    #[arg(long)]
    pub b_precision: Option<Precision>,
    /// Print the result as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

impl MatchArgs {
    /// Side A's or B's arguments, with `sims` resolved by [`play_search`].
    fn side(&self, a: bool, sims: u32) -> SideArgs {
        if a {
            SideArgs {
                net: self.a_net.clone(),
                sims,
                batch: self.a_batch,
                uci: self.a_uci.clone(),
                options: self.a_option.clone(),
                nodes: self.a_nodes,
                movetime: self.a_movetime,
                depth: self.a_depth,
                random: self.a_random,
                greedy: self.a_greedy,
            }
        } else {
            SideArgs {
                net: self.b_net.clone(),
                sims,
                batch: self.b_batch,
                uci: self.b_uci.clone(),
                options: self.b_option.clone(),
                nodes: self.b_nodes,
                movetime: self.b_movetime,
                depth: self.b_depth,
                random: self.b_random,
                greedy: self.b_greedy,
            }
        }
    }
}

/// A checked side: what plays.
#[derive(Debug, Clone)]
enum Side {
    Net {
        path: PathBuf,
        sims: u32,
        batch: usize,
    },
    Uci {
        command: String,
        options: Vec<(String, String)>,
        limit: UciLimit,
    },
    Random,
    Greedy,
}

impl Side {
    /// Checks that exactly one kind of player is given for side `name` (`a` or `b`).
    fn parse(args: &SideArgs, name: char) -> Result<Side> {
        let kinds = [
            args.net.is_some(),
            args.uci.is_some(),
            args.random,
            args.greedy,
        ];
        if kinds.iter().filter(|&&k| k).count() != 1 {
            user_bail!(
                "player {name}: give exactly one of --{name}-net, --{name}-uci, --{name}-random, --{name}-greedy"
            );
        }
        if args.net.is_none() && args.batch != 1 {
            user_bail!("player {name}: --{name}-batch is for a net (--{name}-net)");
        }
        if args.uci.is_none()
            && (!args.options.is_empty()
                || args.nodes.is_some()
                || args.movetime.is_some()
                || args.depth.is_some())
        {
            user_bail!(
                "player {name}: --{name}-option, --{name}-nodes, --{name}-movetime and --{name}-depth are for a UCI engine (--{name}-uci)"
            );
        }
        if let Some(path) = &args.net {
            if !(1..=usize::from(u16::MAX)).contains(&args.batch) {
                user_bail!("player {name}: --{name}-batch must be 1 to {}", u16::MAX);
            }
            return Ok(Side::Net {
                // A net on object storage (`s3://bucket/run/nets/gen-0003.safetensors`) is
                // downloaded into the cache first.
                path: crate::run::stored_run::fetch_file(path, None)?,
                sims: args.sims,
                batch: args.batch,
            });
        }
        let Some(command) = &args.uci else {
            return Ok(if args.greedy {
                Side::Greedy
            } else {
                Side::Random
            });
        };
        let limit = match (args.nodes, args.movetime, args.depth) {
            (Some(n), None, None) => UciLimit::Nodes(n),
            (None, Some(ms), None) => UciLimit::Movetime(ms),
            (None, None, Some(d)) => UciLimit::Depth(d),
            (None, None, None) => {
                user_bail!(
                    "player {name}: a UCI engine needs one of --{name}-nodes, --{name}-movetime, --{name}-depth"
                )
            }
            _ => user_bail!(
                "player {name}: give only one of --{name}-nodes, --{name}-movetime, --{name}-depth"
            ),
        };
        let options = args
            .options
            .iter()
            .map(|o| parse_option(o).map_err(|e| user_error(format!("player {name}: {e}"))))
            .collect::<Result<Vec<_>>>()?;
        Ok(Side::Uci {
            // A bare name (`stockfish`) is found as `--teacher` and `--eval-engine` find it.
            command: resolve_command(command),
            options,
            limit,
        })
    }

    /// A name for the report and the PGN: the net's file stem, the engine, `random`, `greedy`.
    fn label(&self) -> String {
        match self {
            Side::Net { path, sims, batch } => format!(
                "{} ({sims} sims{})",
                path.file_stem().unwrap_or_default().to_string_lossy(),
                if *batch > 1 {
                    format!(", batch {batch}")
                } else {
                    String::new()
                }
            ),
            Side::Uci { command, limit, .. } => format!("{command} ({limit})"),
            Side::Random => "random".into(),
            Side::Greedy => "greedy".into(),
        }
    }
}

/// Parses `ELO0,ELO1` with ELO0 < ELO1.
fn parse_sprt(text: &str) -> Result<Sprt> {
    let parsed = text
        .split_once(',')
        .and_then(|(a, b)| Some((a.trim().parse::<f64>().ok()?, b.trim().parse::<f64>().ok()?)));
    match parsed {
        Some((elo0, elo1)) if elo0 < elo1 && elo0.is_finite() && elo1.is_finite() => {
            Ok(Sprt::new(elo0, elo1))
        }
        _ => user_bail!("--sprt {text:?}: expected ELO0,ELO1 with ELO0 < ELO1, e.g. 0,50"),
    }
}

/// What a match ended with, for the report and `--json` (also of `bench learn`).
#[derive(Debug, serde::Serialize)]
pub(crate) struct MatchReport {
    a: String,
    b: String,
    games: usize,
    score: MatchScore,
    /// A's mean score in [0, 1].
    score_fraction: f64,
    /// 95% interval of the score.
    score_low: f64,
    score_high: f64,
    /// Elo of A over B and its 95% interval (from game pairs).
    elo: f64,
    elo_low: f64,
    elo_high: f64,
    /// Units of the statistics: complete pairs, or games when there are none.
    units: usize,
    terminations: BTreeMap<String, usize>,
    sprt: Option<SprtReport>,
}

#[derive(Debug, serde::Serialize)]
struct SprtReport {
    elo0: f64,
    elo1: f64,
    llr: f64,
    lower: f64,
    upper: f64,
    decision: SprtDecision,
}

impl MatchReport {
    /// The report of `games` between `a` and `b`, with the SPRT's verdict if one was run.
    pub(crate) fn new(
        a: String,
        b: String,
        games: &[ArenaGame],
        sprt: Option<&Sprt>,
    ) -> MatchReport {
        let score = MatchScore::of(games);
        let sample = score_sample(games);
        let (score_low, score_high) = sample.score_interval();
        let (elo_low, elo, elo_high) = sample.elo_interval();
        let mut terminations = BTreeMap::new();
        for g in games {
            *terminations
                .entry(g.termination.describe().to_string())
                .or_insert(0) += 1;
        }
        let sprt = sprt.map(|s| {
            let (decision, llr) = s.decide(&sample);
            let (lower, upper) = s.bounds();
            SprtReport {
                elo0: s.elo0,
                elo1: s.elo1,
                llr,
                lower,
                upper,
                decision,
            }
        });
        MatchReport {
            a,
            b,
            games: games.len(),
            score,
            score_fraction: score.score(),
            score_low,
            score_high,
            elo,
            elo_low,
            elo_high,
            units: sample.len(),
            terminations,
            sprt,
        }
    }

    /// A's score in [0, 1] with its 95% interval: (low, score, high).
    pub(crate) fn score_interval(&self) -> (f64, f64, f64) {
        (self.score_low, self.score_fraction, self.score_high)
    }

    /// Wins, draws and losses of A.
    pub(crate) fn score(&self) -> MatchScore {
        self.score
    }

    /// B's name.
    pub(crate) fn opponent(&self) -> &str {
        &self.b
    }

    /// Prints the report as text on stdout.
    pub(crate) fn print(&self) {
        let s = &self.score;
        println!("{} vs {}", self.a, self.b);
        println!(
            "games {}: +{} ={} -{}, score {:.1}% [{:.1}%, {:.1}%], Elo {} [{}, {}] (95%, {} units)",
            self.games,
            s.wins,
            s.draws,
            s.losses,
            100.0 * self.score_fraction,
            100.0 * self.score_low,
            100.0 * self.score_high,
            signed_elo(self.elo),
            signed_elo(self.elo_low),
            signed_elo(self.elo_high),
            self.units
        );
        let ends: Vec<String> = self
            .terminations
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        println!("endings: {}", ends.join(", "));
        if let Some(t) = &self.sprt {
            println!(
                "SPRT [{}, {}]: LLR {:.2} (bounds {:.2}, {:.2}): {}",
                t.elo0,
                t.elo1,
                t.llr,
                t.lower,
                t.upper,
                match t.decision {
                    SprtDecision::H0 => "H0 accepted (not stronger by elo1)",
                    SprtDecision::H1 => "H1 accepted (stronger by elo0 or more)",
                    SprtDecision::Continue => "undecided",
                }
            );
        }
    }
}

/// The progress bar's message of a match so far: `+W =D -L Elo E`.
pub(crate) fn progress_message(finished: &[ArenaGame]) -> String {
    let score = MatchScore::of(finished);
    let (_, elo, _) = score_sample(finished).elo_interval();
    format!(
        "+{} ={} -{} Elo {}",
        score.wins,
        score.draws,
        score.losses,
        signed_elo(elo)
    )
}

/// Starts the inference server of a net side (none for other sides).
fn serve(
    side: &Side,
    device: tch::Device,
    precision: Precision,
    backend: BackendChoice,
) -> Result<Option<InferenceHandle<ChessState>>> {
    match side {
        Side::Net { path, .. } => serve_net(path, device, precision, backend).map(Some),
        _ => Ok(None),
    }
}

/// The player of a side; `handle` is its inference server when it is a net.
fn player<'h>(
    side: &Side,
    handle: Option<&'h InferenceHandle<ChessState>>,
    search: &SearchConfig,
    instances: usize,
) -> Result<Box<dyn Player + 'h>> {
    Ok(match side {
        Side::Net { sims, batch, .. } => Box::new(
            SearchPlayer::new(
                side.label(),
                handle.expect("a net side has an inference server"),
                search.clone(),
                *sims,
            )
            .with_leaves_per_search(*batch),
        ),
        Side::Uci {
            command,
            options,
            limit,
        } => Box::new(
            UciPlayer::start(command, options, *limit, instances)
                .map_err(|e| user_error(format!("engine {command:?}: {e}")))?,
        ),
        Side::Random => Box::new(RandomPlayer::default()),
        Side::Greedy => Box::new(GreedyPlayer),
    })
}

/// Appends one game to the PGN file.
fn write_pgn(
    out: &mut impl Write,
    game: &ArenaGame,
    round: u64,
    names: (&str, &str),
) -> Result<()> {
    let start = match &game.start_fen {
        None => ChessState::new(),
        Some(fen) => ChessState::from_fen(fen, HistoryFill::No)?,
    };
    let (white, black) = if game.a_is_white {
        names
    } else {
        (names.1, names.0)
    };
    let tags = PgnTags {
        event: "cfzero match",
        round,
        white,
        black,
    };
    let text = moves_to_pgn(
        game.start_fen.as_deref(),
        start.position(),
        &game.moves,
        game.result,
        game.termination,
        &tags,
    );
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Plays the match and prints its report.
pub fn run(args: &MatchArgs) -> Result<()> {
    let config = args.config.as_deref();
    let play_a = play_search(config, args.a_sims, "--a-sims")?;
    let play_b = play_search(config, args.b_sims, "--b-sims")?;
    let side_a = Side::parse(&args.side(true, play_a.simulations), 'a')?;
    let side_b = Side::parse(&args.side(false, play_b.simulations), 'b')?;
    let sprt = args.sprt.as_deref().map(parse_sprt).transpose()?;
    let openings = match &args.openings {
        Some(p) => read_openings(p).map_err(user_error)?,
        None => Vec::new(),
    };
    if args.openings.is_some() && openings.is_empty() {
        user_bail!(
            "openings {}: no position in the file",
            show(args.openings.as_deref())
        );
    }
    let games = args.games.unwrap_or(2 * openings.len().max(1));
    if games == 0 {
        user_bail!("--games must be at least 1");
    }
    let engines = matches!(side_a, Side::Uci { .. }) || matches!(side_b, Side::Uci { .. });
    let concurrency = args
        .concurrency
        .unwrap_or(if engines { 2 } else { 64 })
        .clamp(1, games);
    let search = play_a.search;
    let device = args.device.parse()?;
    let (label_a, label_b) = (side_a.label(), side_b.label());
    let handle_a = serve(
        &side_a,
        device,
        args.a_precision.unwrap_or(args.play.precision),
        args.play.backend,
    )?;
    let handle_b = serve(
        &side_b,
        device,
        args.b_precision.unwrap_or(args.play.precision),
        args.play.backend,
    )?;
    let mut a = player(&side_a, handle_a.as_ref(), &search, concurrency)?;
    let mut b = player(&side_b, handle_b.as_ref(), &search, concurrency)?;
    let mut pgn = match &args.pgn {
        Some(p) => Some(BufWriter::new(File::create(p).map_err(|e| {
            user_error(format!("cannot create {}: {e}", p.display()))
        })?)),
        None => None,
    };

    let progress = bar(games as u64, "match", "games");
    let mut finished: Vec<ArenaGame> = Vec::with_capacity(games);
    let mut pgn_error = None;
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let options = MatchOptions {
        games,
        concurrency,
        max_plies: args.max_plies,
    };
    let played = run_match(
        &mut *a,
        &mut *b,
        &openings,
        &options,
        &mut rng,
        &mut |game| {
            finished.push(game.clone());
            if let Some(out) = pgn.as_mut()
                && pgn_error.is_none()
            {
                let names = (label_a.as_str(), label_b.as_str());
                pgn_error = write_pgn(out, game, finished.len() as u64, names).err();
            }
            progress.inc(1);
            progress.set_message(progress_message(&finished));
            match &sprt {
                Some(t) => t.decide(&score_sample(&finished)).0 == SprtDecision::Continue,
                None => true,
            }
        },
    )
    .map_err(arena_error)?;
    progress.finish_and_clear();
    if let Some(e) = pgn_error {
        return Err(e.context(format!("writing {}", show(args.pgn.as_deref()))));
    }
    let report = MatchReport::new(label_a, label_b, &played, sprt.as_ref());
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        report.print();
    }
    Ok(())
}

fn show(path: Option<&Path>) -> String {
    path.map_or_else(String::new, |p| p.display().to_string())
}
