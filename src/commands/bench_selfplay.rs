//! `cfzero bench selfplay`: the self-play of a config (the actors and inference server of
//! `cfzero train`) for a fixed number of moves, against the limit its net sets: the inference
//! servers' evaluations per second at the batch size self-play reached (real positions, copies
//! included), over the simulations per move.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use std::time::Instant;

use anyhow::Result;
use cfzero_chess::{ChessState, HistoryFill};
use cfzero_inference::InferenceHandle;
use cfzero_mcts::{Evaluations, Evaluator, Game, LeafBatch};
use cfzero_network::Net;
use cfzero_network::checkpoint::load_net;
use cfzero_selfplay::openings::read_openings;
use cfzero_selfplay::{ActorId, Assignment, MoveCount};
use clap::Args;
use serde::Serialize;
use tch::Device;

use crate::config::Config;
use crate::error::user_error;
use crate::flags::DeviceFlag;
use crate::run::progress::{bar, spinner};
use crate::run::selfplay_phase::{Live, run_actors, spawn_servers};
use crate::user_bail;
use cfzero_inference::backend::BackendChoice;

/// Arguments of `cfzero bench selfplay`.
#[derive(Debug, Args)]
pub struct SelfplayBenchArgs {
    /// Config whose `[selfplay]`, `[search]` and `[inference]` (and `[network]`, without `--net`)
    /// are measured.
    #[arg(long, default_value = "configs/tiny.toml")]
    pub config: PathBuf,
    /// Moves (positions) to play, over all games (those in flight at the end count too).
    #[arg(long, default_value_t = 2000)]
    pub moves: u64,
    /// A net to play with (default: a fresh random net of the config's `[network]`).
    #[arg(long)]
    pub net: Option<PathBuf>,
    /// Seconds of the net's own measurement at self-play's average batch size.
    #[arg(long, default_value_t = 2.0)]
    pub nn_seconds: f64,
    #[command(flatten)]
    pub device: DeviceFlag,
    /// Backend of the inference servers (auto, tch, native, material), instead of the
    /// config's `[inference] backend`.
    #[arg(long)]
    pub backend: Option<BackendChoice>,
    /// Actor threads, instead of the config's `selfplay.actors` (a GPU wants more than a
    /// laptop's config gives it).
    #[arg(long)]
    pub actors: Option<usize>,
    /// Games each actor keeps in flight, instead of `selfplay.games_per_actor`.
    #[arg(long)]
    pub games_per_actor: Option<usize>,
    /// Inference servers, instead of `[inference] servers`.
    #[arg(long)]
    pub servers: Option<usize>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Finished games and the games per hour they point to.
#[derive(Debug, Serialize)]
struct Games {
    /// Games that ended during the run.
    finished: u64,
    /// Their mean length in plies (`None` if none ended).
    mean_length: Option<f64>,
    /// `positions_per_second * 3600 /` the length of `per_hour_basis`.
    per_hour: f64,
    /// `finished_games` (their mean length) or `max_plies` (no game ended: the config's
    /// longest game, so `per_hour` is a lower bound).
    per_hour_basis: &'static str,
}

/// The inference thread's share of the work.
#[derive(Debug, Serialize)]
struct Inference {
    /// Forward passes.
    batches: u64,
    /// Positions evaluated.
    positions: u64,
    /// `positions / batches`.
    average_batch: f64,
    /// Positions evaluated per move played (below the simulations per move where the
    /// evaluation cache or finished games answer leaves).
    evaluations_per_move: f64,
    /// Share of the wall time the inference thread was busy.
    busy_share: f64,
}

/// The limit that the net's speed sets.
#[derive(Debug, Serialize)]
struct NnBound {
    /// Batch size measured: self-play's average batch per server, rounded.
    batch: usize,
    /// Inference servers measured side by side (`[inference] servers`).
    servers: usize,
    /// Their evaluations per second together, at that batch, on real positions with the
    /// copies in and out (see `served_rate`).
    evaluations_per_second: f64,
    /// Simulations per move by the config: full and cheap searches in its ratio.
    simulations_per_move: f64,
    /// `evaluations_per_second / simulations_per_move`.
    positions_per_second: f64,
}

/// The whole report.
#[derive(Debug, Serialize)]
struct SelfplayReport {
    config: String,
    net: String,
    device: String,
    /// The backend that served the net (`auto` resolved).
    backend: String,
    actors: usize,
    games_in_flight: usize,
    moves_requested: u64,
    positions: u64,
    seconds: f64,
    positions_per_second: f64,
    /// Simulations actually run per move (terminal roots and short games make it differ
    /// from the config's).
    simulations_per_move_observed: f64,
    games: Games,
    inference: Inference,
    nn_bound: NnBound,
    /// `positions_per_second / nn_bound.positions_per_second`.
    ratio_to_nn_bound: f64,
}

/// The net to play with: the one in `path`, or a fresh one seeded like `cfzero train`'s first.
fn make_net(config: &Config, path: Option<&Path>, device: Device) -> Result<Net> {
    match path {
        Some(p) => load_net(p, device).map_err(user_error),
        None => Net::seeded(&config.network, device, config.run.seed as i64).map_err(user_error),
    }
}

/// Evaluations per second of `[inference] servers` inference servers with the options
/// self-play gives them (each with a copy of `net`), each fed batches of `batch` real
/// positions (the openings, else the start position) by a thread of its own through the
/// evaluator interface, as actors feed them: the encoding, the channel and the copies in and
/// out are included. Counted for about `seconds` after one warm-up batch per server.
fn served_rate(
    config: &Config,
    net: Net,
    openings: &[String],
    batch: usize,
    seconds: f64,
) -> Result<f64> {
    let mut leaves = LeafBatch::<ChessState>::new();
    let mut moves = Vec::new();
    let states: Vec<ChessState> = if openings.is_empty() {
        vec![ChessState::new()]
    } else {
        openings
            .iter()
            .filter_map(|fen| ChessState::from_fen(fen, HistoryFill::No).ok())
            .collect()
    };
    for state in states.iter().cycle().take(batch) {
        state.legal_moves(&mut moves);
        leaves.push(state, &moves);
    }
    let handles = spawn_servers(config, net)?;
    let counts = std::thread::scope(|scope| {
        let threads: Vec<_> = handles
            .iter()
            .map(|handle: &InferenceHandle<ChessState>| {
                let leaves = &leaves;
                scope.spawn(move || -> Result<(usize, f64)> {
                    let mut out = Evaluations::default();
                    handle.evaluate(leaves, &mut out)?;
                    let start = Instant::now();
                    let mut evaluations = 0;
                    while evaluations == 0 || start.elapsed().as_secs_f64() < seconds {
                        handle.evaluate(leaves, &mut out)?;
                        evaluations += leaves.len();
                    }
                    Ok((evaluations, start.elapsed().as_secs_f64()))
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().expect("a measuring thread panicked"))
            .collect::<Result<Vec<_>>>()
    })?;
    Ok(counts.iter().map(|&(n, s)| n as f64 / s.max(1e-9)).sum())
}

/// Runs the measurement.
pub fn run(args: &SelfplayBenchArgs) -> Result<()> {
    let mut config = Config::load(&args.config)?;
    if let Some(b) = args.backend {
        config.inference.backend = b;
    }
    for (flag, value, setting) in [
        ("--actors", args.actors, &mut config.selfplay.actors),
        (
            "--games-per-actor",
            args.games_per_actor,
            &mut config.selfplay.games_per_actor,
        ),
        ("--servers", args.servers, &mut config.inference.servers),
    ] {
        match value {
            Some(0) => user_bail!("{flag} must be at least 1"),
            Some(v) => *setting = v,
            None => {}
        }
    }
    if args.moves == 0 {
        user_bail!("--moves must be at least 1");
    }
    if args.nn_seconds.is_nan() || args.nn_seconds <= 0.0 {
        user_bail!("--nn-seconds must be more than 0 (got {})", args.nn_seconds);
    }
    let device = args.device.parse()?;
    eprintln!(
        "{}",
        crate::sizing::size(&mut config, crate::sizing::Machine::detect(device))
    );
    let openings = match &config.selfplay.openings {
        Some(p) => read_openings(p).map_err(user_error)?,
        None => Vec::new(),
    };
    let net = make_net(&config, args.net.as_deref(), device)?;

    let moves = MoveCount::with_limit(args.moves);
    let pb = bar(args.moves, "selfplay", "moves");
    let show = |live: &Live| {
        pb.set_position(live.positions.min(args.moves));
        pb.set_message(format!(
            "avg batch {:.1}, inference busy {:.0}%",
            live.inference.average_batch(),
            100.0 * live.inference.busy_share(live.seconds)
        ));
    };
    let (mut finished, mut finished_plies) = (0u64, 0u64);
    let never = AtomicBool::new(false);
    let work = Assignment {
        games: usize::MAX,
        openings: &openings,
        id: ActorId {
            generation: 0,
            seed: config.run.seed,
        },
        stop: &never,
        moves: &moves,
    };
    let outcome = run_actors(
        &config,
        net,
        work,
        None,
        |game, live| {
            finished += 1;
            finished_plies += game.record.positions.len() as u64;
            show(live);
            Ok(())
        },
        &show,
    );
    pb.finish_and_clear();
    let outcome = outcome?;

    let positions = outcome.stats.positions;
    let seconds = outcome.seconds.max(1e-9);
    let positions_per_second = positions as f64 / seconds;
    let mean_length = (finished > 0).then(|| finished_plies as f64 / finished as f64);
    let (length, per_hour_basis) = match mean_length {
        Some(l) => (l, "finished_games"),
        None => (f64::from(config.selfplay.max_plies.max(1)), "max_plies"),
    };
    let inf = outcome.inference;
    let average_batch = inf.average_batch();

    // The servers' own speed at the batch size self-play reached, fed real positions through
    // the evaluator interface as the actors feed them.
    let batch = (average_batch.round() as usize).max(1);
    let servers = config.inference.servers.max(1);
    let wait = spinner(format!(
        "measuring {servers} inference server(s) at batch {batch}"
    ));
    config.inference.use_threads();
    let net = make_net(&config, args.net.as_deref(), device)?;
    let served = served_rate(&config, net, &openings, batch, args.nn_seconds)?;
    wait.finish_and_clear();
    let sp = &config.selfplay;
    let full = f64::from(sp.full_search_fraction.clamp(0.0, 1.0));
    let simulations_per_move =
        full * f64::from(sp.simulations) + (1.0 - full) * f64::from(sp.cheap_simulations);
    let bound = served / simulations_per_move.max(1.0);

    let report = SelfplayReport {
        config: args.config.display().to_string(),
        net: args
            .net
            .as_ref()
            .map_or_else(|| "random".to_string(), |p| p.display().to_string()),
        device: format!("{device:?}"),
        backend: {
            let options = config.inference.options(device);
            options
                .backend
                .resolve(device, options.kind)
                .map_err(user_error)?
                .to_string()
        },
        actors: sp.actors.max(1),
        games_in_flight: sp.actors.max(1) * sp.games_per_actor.max(1),
        moves_requested: args.moves,
        positions,
        seconds,
        positions_per_second,
        simulations_per_move_observed: outcome.stats.simulations as f64 / positions.max(1) as f64,
        games: Games {
            finished,
            mean_length,
            per_hour: positions_per_second * 3600.0 / length,
            per_hour_basis,
        },
        inference: Inference {
            batches: inf.batches,
            positions: inf.positions,
            average_batch,
            evaluations_per_move: inf.positions as f64 / positions.max(1) as f64,
            busy_share: inf.busy_share(seconds),
        },
        nn_bound: NnBound {
            batch,
            servers,
            evaluations_per_second: served,
            simulations_per_move,
            positions_per_second: bound,
        },
        ratio_to_nn_bound: positions_per_second / bound,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(&report);
    }
    Ok(())
}

fn print_table(r: &SelfplayReport) {
    println!(
        "{} ({} net, {}, {} backend): {} actors, {} games in flight",
        r.config, r.net, r.device, r.backend, r.actors, r.games_in_flight
    );
    println!(
        "positions      {:>10.1} /s  ({} moves in {:.1} s, {:.1} simulations per move)",
        r.positions_per_second, r.positions, r.seconds, r.simulations_per_move_observed
    );
    let basis = match r.games.mean_length {
        Some(l) => format!(
            "mean length {l:.1} plies of {} finished games",
            r.games.finished
        ),
        None => "no game finished: at most max_plies each, a lower bound".to_string(),
    };
    println!("games          {:>10.0} /h  ({basis})", r.games.per_hour);
    println!(
        "inference      {:>10.1} avg batch, busy {:.0}% of the time ({} batches, {:.1} evaluations per move)",
        r.inference.average_batch,
        100.0 * r.inference.busy_share,
        r.inference.batches,
        r.inference.evaluations_per_move
    );
    println!(
        "net bound      {:>10.1} /s  ({:.0} evaluations/s of {} server(s) at batch {} / {:.1} simulations per move)",
        r.nn_bound.positions_per_second,
        r.nn_bound.evaluations_per_second,
        r.nn_bound.servers,
        r.nn_bound.batch,
        r.nn_bound.simulations_per_move
    );
    println!(
        "achieved       {:>10.1}% of the net bound",
        100.0 * r.ratio_to_nn_bound
    );
}
