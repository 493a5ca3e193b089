//! The self-play phase of a generation: actors play games with the newest net; each
//! finished game is written at once as its own record file.

use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use cfzero_chess::ChessState;
use cfzero_fsutil::write_file_atomically;
use cfzero_inference::{InferenceHandle, InferenceServer, StatsSnapshot};
use cfzero_network::Net;
use cfzero_selfplay::openings::read_book;
use cfzero_selfplay::pgn::{PgnTags, game_to_pgn};
use cfzero_selfplay::record::{RECORD_EXTENSION, read_records, write_records};
use cfzero_selfplay::window::natural_cmp;
use cfzero_selfplay::{
    ActorId, ActorStats, Assignment, FinishedGame, GameInFlight, GameRecord, GameResult, MoveCount,
    play_games,
};
use crossbeam_channel::RecvTimeoutError;

use crate::config::Config;
use crate::error::user_error;
use crate::run::progress::bar;

/// The playable positions of the self-play opening book at `path`; the finished ones are
/// left out with a warning on stderr, and a book without any playable one is a user error.
pub fn read_selfplay_book(path: &Path) -> Result<Vec<String>> {
    let book = read_book(path).map_err(user_error)?;
    if let Some(warning) = book.skipped_warning(path) {
        eprintln!("warning: {warning}");
    }
    Ok(book.positions)
}

/// What a self-play phase did.
#[derive(Debug, Clone, Default)]
pub struct SelfplaySummary {
    /// Games played in this phase.
    pub games: u64,
    /// Positions (moves) of the games that ended in this phase.
    pub positions: u64,
    /// Moves played in this phase, in games that ended or go on in the next: what its rate
    /// counts.
    pub played: u64,
    /// Positions searched with the full budget.
    pub training_positions: u64,
    /// Simulations run.
    pub simulations: u64,
    /// Wall time.
    pub seconds: f64,
    /// White wins, draws, black wins.
    pub results: [u64; 3],
    /// Games that played on past a would-be resignation, and how many of those the
    /// resigning side did not lose.
    pub resign_checked: u64,
    /// See `resign_checked`.
    pub resign_false_positives: u64,
    /// Games that ended by resignation.
    pub resignations: u64,
    /// Each side of each playthrough game, for calibrating the resignation threshold.
    pub resign_samples: Vec<cfzero_selfplay::resign::ResignSample>,
    /// Inference thread counters over the phase.
    pub inference: StatsSnapshot,
    /// Bytes written to record files.
    pub record_bytes: u64,
    /// The policy surprise of the positions searched with the full budget, summed (their
    /// mean goes to TensorBoard): how far the search moves from the net's policy.
    pub surprise: f64,
}

/// `N games, L plies, R pos/s, batch B, W/D/L w/d/l`, the self-play part of a summary line.
impl std::fmt::Display for SelfplaySummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} games, {:.1} plies, {:.0} pos/s, batch {:.1}, W/D/L {}/{}/{}",
            self.games,
            self.mean_length(),
            self.rate(),
            self.inference.average_batch(),
            self.results[0],
            self.results[1],
            self.results[2]
        )
    }
}

impl SelfplaySummary {
    /// Moves played a second.
    pub fn rate(&self) -> f64 {
        self.played as f64 / self.seconds.max(1e-9)
    }

    /// Mean game length in plies.
    pub fn mean_length(&self) -> f64 {
        if self.games == 0 {
            0.0
        } else {
            self.positions as f64 / self.games as f64
        }
    }
}

/// The file name of record `index` of `worker` (`gNNNNN.cfzg`, or `WORKER-gNNNNN.cfzg` when
/// several workers share a run directory).
fn record_name(worker: &str, index: u64) -> String {
    format!("{}{index:05}.{RECORD_EXTENSION}", record_prefix(worker))
}

/// What the names of `worker`'s record files start with (`g`, or `WORKER-g`).
pub fn record_prefix(worker: &str) -> String {
    if worker.is_empty() {
        "g".to_owned()
    } else {
        format!("{worker}-g")
    }
}

/// Index of the next record file of `worker` in `dir`.
fn next_index(dir: &Path, worker: &str) -> Result<u64> {
    let prefix = record_prefix(worker);
    let mut next = 0;
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if let Some(n) = name
            .strip_prefix(&prefix)
            .and_then(|r| r.strip_suffix(&format!(".{RECORD_EXTENSION}")))
            && let Ok(n) = n.parse::<u64>()
        {
            next = next.max(n + 1);
        }
    }
    Ok(next)
}

/// A seed for `worker` that differs between workers and from the unnamed one.
fn worker_seed(worker: &str) -> u64 {
    worker
        .bytes()
        .fold(0, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// Live counters of running actors, handed to the callbacks of [`run_actors`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Live {
    /// Moves played so far by all actors.
    pub positions: u64,
    /// Seconds since the inference server started.
    pub seconds: f64,
    /// The inference threads' counters so far, summed.
    pub inference: StatsSnapshot,
}

/// What the actors of [`run_actors`] did, besides the games they handed over.
#[derive(Debug, Clone, Copy, Default)]
pub struct ActorsOutcome {
    /// The actors' counters, summed.
    pub stats: ActorStats,
    /// The inference threads' counters, summed.
    pub inference: StatsSnapshot,
    /// Wall time from the inference server's start to the last actor's end.
    pub seconds: f64,
}

/// The self-play inference servers of `config`: `[inference] servers` of them (at least
/// one) with the run's options, each with its own copy of `net`.
pub fn spawn_servers(config: &Config, net: Net) -> Result<Vec<InferenceHandle<ChessState>>> {
    let options = config.inference.options(net.device());
    let servers = config.inference.servers.max(1);
    let mut handles = Vec::with_capacity(servers);
    for _ in 1..servers {
        let copy = net
            .try_clone()
            .context("copying the net for another inference server")?;
        handles.push(InferenceServer::spawn(copy, options).map_err(user_error)?);
    }
    handles.push(InferenceServer::spawn(net, options).map_err(user_error)?);
    Ok(handles)
}

/// How often [`run_actors`] calls its `on_tick` at the least.
const TICK: Duration = Duration::from_millis(100);

/// The self-play engine of `train`, `selfplay` and `bench selfplay`: plays up to `games` games
/// with `net` on the config's actor threads behind `[inference] servers` inference servers
/// (each with its own copy of the net), actor `a` seeded
/// `base.seed ^ a`. Stops early when `stop` is set or `moves` reaches its limit. On the
/// calling thread, each finished game goes to `on_game` as it ends, and `on_tick` runs at
/// least every 100 ms while the actors play.
///
/// With `in_flight`, the games it holds go on first, shared out among the actors, every
/// slot takes a new game as soon as its game ends, and the actors stop once `games` games
/// have ended (a few more may end while they stop): the games unfinished then are handed
/// back in it.
///
/// A failure stops everything within one tick and is returned: an error of `on_game` (a
/// record that cannot be written, e.g. a full disk) or of an actor (its search failed) halts
/// every other actor, instead of playing the phase to its end for nothing.
pub fn run_actors(
    config: &Config,
    net: Net,
    work: Assignment,
    mut in_flight: Option<&mut Vec<GameInFlight>>,
    mut on_game: impl FnMut(FinishedGame, &Live) -> Result<()>,
    mut on_tick: impl FnMut(&Live),
) -> Result<ActorsOutcome> {
    let Assignment {
        games,
        openings,
        id: base,
        stop,
        moves,
    } = work;
    let start = Instant::now();
    config.inference.use_threads();
    let handles = spawn_servers(config, net)?;
    let servers = handles.len();
    let stats = || {
        handles
            .iter()
            .map(InferenceHandle::stats)
            .sum::<StatsSnapshot>()
    };
    let live = || Live {
        positions: moves.played(),
        seconds: start.elapsed().as_secs_f64(),
        inference: stats(),
    };
    let actors = config.selfplay.actors.max(1);
    let (tx, rx) = crossbeam_channel::unbounded::<FinishedGame>();
    let carrying = in_flight.is_some();
    // Set by `stop`, by the first failure or, carrying games over, by the phase's last game;
    // what the actors watch.
    let halt = AtomicBool::new(stop.load(Ordering::Relaxed) || (carrying && games == 0));
    let halt = &halt;
    let mut failure: Option<anyhow::Error> = None;
    let mut parts: Vec<Vec<GameInFlight>> = (0..actors).map(|_| Vec::new()).collect();
    if let Some(carried) = in_flight.as_deref_mut() {
        for (k, game) in carried.drain(..).enumerate() {
            parts[k % actors].push(game);
        }
    }
    let mut handed = 0usize;
    let results = std::thread::scope(|scope| {
        let mut threads = Vec::new();
        for (a, mut part) in parts.into_iter().enumerate() {
            // Carrying games over, the actors start games until the phase has enough.
            let share = if carrying {
                usize::MAX
            } else {
                games / actors + usize::from(a < games % actors)
            };
            // Actor a plays through server a mod servers, so the servers share the actors.
            let (tx, handle) = (tx.clone(), handles[a % servers].clone());
            let id = ActorId {
                generation: base.generation,
                seed: base.seed ^ a as u64,
            };
            threads.push(scope.spawn(move || {
                let work = Assignment {
                    games: share,
                    openings,
                    id,
                    stop: halt,
                    moves,
                };
                let result = play_games(
                    &config.selfplay,
                    &config.search,
                    &handle,
                    work,
                    carrying.then_some(&mut part),
                    |game, _| {
                        let _ = tx.send(game);
                    },
                );
                if result.is_err() {
                    halt.store(true, Ordering::Relaxed);
                }
                (result, part)
            }));
        }
        drop(tx);
        let mut last_tick = Instant::now();
        loop {
            match rx.recv_timeout(TICK) {
                // Games that end after a failure are not handed on.
                Ok(game) if failure.is_none() => {
                    if let Err(e) = on_game(game, &live()) {
                        failure = Some(e);
                        halt.store(true, Ordering::Relaxed);
                    }
                    handed += 1;
                    if carrying && handed >= games {
                        halt.store(true, Ordering::Relaxed);
                    }
                }
                Ok(_) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if stop.load(Ordering::Relaxed) {
                halt.store(true, Ordering::Relaxed);
            }
            if last_tick.elapsed() >= TICK {
                on_tick(&live());
                last_tick = Instant::now();
            }
        }
        threads
            .into_iter()
            .map(|t| t.join().expect("an actor thread panicked"))
            .collect::<Vec<_>>()
    });
    if let Some(e) = failure {
        return Err(e);
    }
    let mut outcome = ActorsOutcome::default();
    for (r, part) in results {
        if let Some(out) = in_flight.as_deref_mut() {
            out.extend(part);
        }
        let s = r.context("self-play failed")?;
        outcome.stats.games += s.games;
        outcome.stats.positions += s.positions;
        outcome.stats.training_positions += s.training_positions;
        outcome.stats.simulations += s.simulations;
    }
    outcome.seconds = start.elapsed().as_secs_f64();
    outcome.inference = stats();
    Ok(outcome)
}

/// The mean game length of this process's last self-play phase (`f64` bits; 0: none yet),
/// what the next phase's progress bar expects.
static LAST_MEAN_LENGTH: AtomicU64 = AtomicU64::new(0);

/// Where a self-play phase's games go.
#[derive(Debug, Clone, Copy)]
pub struct GamesOut<'a> {
    /// The directory of their record files.
    pub dir: &'a Path,
    /// The generation of their records (`games/gen-N`: played by net N-1).
    pub generation: u32,
    /// The worker whose files they are (empty for the one worker of `cfzero train`).
    pub worker: &'a str,
    /// The first file number (default: after the files already there; the number also seeds
    /// the games, so it must not repeat for a worker and generation).
    pub first_index: Option<u64>,
}

/// Plays `games` more games with `net` into `out`, from `openings`, until done or `stop`;
/// with `in_flight`, the games it holds go on first and the phase's unfinished games are
/// handed back in it ([`run_actors`]).
pub fn play(
    config: &Config,
    net: Net,
    out: &GamesOut,
    games: usize,
    openings: &[String],
    stop: &AtomicBool,
    in_flight: Option<&mut Vec<GameInFlight>>,
) -> Result<SelfplaySummary> {
    let GamesOut {
        dir: games_dir,
        generation,
        worker,
        first_index,
    } = *out;
    std::fs::create_dir_all(games_dir)
        .with_context(|| format!("creating {}", games_dir.display()))?;
    let first = match first_index {
        Some(i) => i,
        None => next_index(games_dir, worker)?,
    };
    let mut summary = SelfplaySummary::default();
    if games == 0 {
        return Ok(summary);
    }
    let base = ActorId {
        // The records of games/gen-N are played by net gen-(N-1).
        generation: generation.saturating_sub(1),
        seed: config.run.seed ^ worker_seed(worker) ^ (u64::from(generation) << 32) ^ (first << 8),
    };
    // The bar counts positions, not games: the games play at once and most end near the phase's
    // end (or go on in the next, with `carry_over`), so finished games say little about the
    // time left. The total is the games times an expected length: the previous phase's mean
    // (half the length cap in the first phase) until half of this phase's games have ended,
    // whose mean it is from then on (the first games to end are the short ones).
    let prior_length = match LAST_MEAN_LENGTH.load(Ordering::Relaxed) {
        0 => f64::from(config.selfplay.max_plies.max(2)) / 2.0,
        bits => f64::from_bits(bits),
    };
    let expected = |finished: u64, positions: u64| -> u64 {
        let mean = if finished > 0 && 2 * finished >= games as u64 {
            positions as f64 / finished as f64
        } else {
            prior_length
        };
        (games as f64 * mean).round() as u64
    };
    let pb = bar(expected(0, 0), "selfplay", "positions");
    pb.set_message(format!("0/{games} games, avg batch 0.0"));
    let (finished, finished_positions) = (Cell::new(0u64), Cell::new(0u64));
    let show = |live: &Live| {
        let finished = finished.get();
        pb.set_length(expected(finished, finished_positions.get()).max(live.positions + 1));
        pb.set_position(live.positions);
        pb.set_message(format!(
            "{finished}/{games} games, avg batch {:.1}",
            live.inference.average_batch()
        ));
    };
    let mut index = first;
    let unlimited = MoveCount::unlimited();
    let work = Assignment {
        games,
        openings,
        id: base,
        stop,
        moves: &unlimited,
    };
    let outcome = run_actors(
        config,
        net,
        work,
        in_flight,
        |game, live| {
            let path = games_dir.join(record_name(worker, index));
            index += 1;
            write_records(&path, std::slice::from_ref(&game.record))
                .with_context(|| format!("writing the game record {}", path.display()))?;
            summary.record_bytes += std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            summary.games += 1;
            summary.positions += game.record.positions.len() as u64;
            summary.training_positions += game
                .record
                .positions
                .iter()
                .filter(|p| p.is_trainable())
                .count() as u64;
            summary.surprise += game
                .record
                .positions
                .iter()
                .map(|p| f64::from(p.surprise))
                .sum::<f64>();
            summary.results[match game.record.result {
                GameResult::WhiteWin => 0,
                GameResult::Draw => 1,
                GameResult::BlackWin => 2,
            }] += 1;
            if let Some(fp) = game.resign_false_positive {
                summary.resign_checked += 1;
                summary.resign_false_positives += u64::from(fp);
            }
            summary.resignations +=
                u64::from(game.record.termination == cfzero_selfplay::Termination::Resignation);
            summary.resign_samples.extend(game.resign_samples);
            finished.set(finished.get() + 1);
            finished_positions.set(finished_positions.get() + game.record.positions.len() as u64);
            show(live);
            Ok(())
        },
        show,
    );
    pb.finish_and_clear();
    if finished.get() > 0 {
        let mean = finished_positions.get() as f64 / finished.get() as f64;
        LAST_MEAN_LENGTH.store(mean.to_bits(), Ordering::Relaxed);
    }
    let outcome = outcome?;
    summary.simulations = outcome.stats.simulations;
    summary.played = outcome.stats.positions;
    summary.seconds = outcome.seconds;
    summary.inference = outcome.inference;
    Ok(summary)
}

/// The PGN of self-play `games` of `generation` (played by net `generation - 1`); `origin`
/// names where they come from in warnings.
pub fn pgn_text(games: &[GameRecord], generation: u32, origin: &str) -> String {
    let mut out = String::new();
    let player = format!("cfzero gen-{:04}", generation.saturating_sub(1));
    for (i, g) in games.iter().enumerate() {
        let tags = PgnTags {
            event: "cfzero self-play",
            round: i as u64 + 1,
            white: &player,
            black: &player,
        };
        // A game that does not replay is left out of the PGN (the window quarantines its
        // file), not a reason to stop the run.
        match game_to_pgn(g, &tags) {
            Ok(text) => out.push_str(&text),
            Err(e) => eprintln!("warning: {origin}: a game left out of the PGN: {e}"),
        }
    }
    out
}

/// Writes the PGN of every game of `games_dir` to `pgn`, atomically; with `worker`, only
/// that worker's games (files `WORKER-gNNNNN`), so that workers sharing a directory each
/// write their own file instead of rewriting one another's.
pub fn write_pgn(
    games_dir: &Path,
    pgn: &Path,
    generation: u32,
    worker: Option<&str>,
) -> Result<()> {
    let prefix = worker.map(record_prefix);
    let mut files: Vec<_> = std::fs::read_dir(games_dir)
        .with_context(|| format!("reading {}", games_dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == RECORD_EXTENSION))
        .filter(|p| {
            prefix.as_deref().is_none_or(|pre| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(pre))
            })
        })
        .collect();
    files.sort_by(|a, b| natural_cmp(&a.to_string_lossy(), &b.to_string_lossy()));
    let mut games = Vec::new();
    for f in files {
        if let Ok(g) = read_records(&f) {
            games.extend(g);
        }
    }
    let out = pgn_text(&games, generation, &games_dir.display().to_string());
    write_file_atomically(pgn, out.as_bytes()).with_context(|| format!("writing {}", pgn.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_game_handler_stops_every_actor_at_once() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let config = Config::load(&root.join("configs/micro.toml")).unwrap();
        let net = Net::seeded(&config.network, tch::Device::Cpu, 1).unwrap();
        let openings = vec![shakmaty::fen::Fen::default().to_string()];
        let start = Instant::now();
        let mut handed = 0;
        let (stop, unlimited) = (AtomicBool::new(false), MoveCount::unlimited());
        let work = Assignment {
            games: 100_000,
            openings: &openings,
            id: ActorId {
                generation: 0,
                seed: 1,
            },
            stop: &stop,
            moves: &unlimited,
        };
        let outcome = run_actors(
            &config,
            net,
            work,
            None,
            |_, _| {
                handed += 1;
                anyhow::bail!("disk full (simulated)")
            },
            |_| {},
        );
        let err = outcome.unwrap_err().to_string();
        assert!(err.contains("disk full"), "{err}");
        // Only the first game reached the handler, and the actors stopped within the games
        // they had in flight, not after 100,000 games.
        assert_eq!(handed, 1);
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "{:?}",
            start.elapsed()
        );
    }

    /// Carrying games over, a phase ends once its games have ended and hands back the rest;
    /// the next phase plays them on. No move is lost or played twice: each phase's moves are
    /// those of the games it finished and of the games it hands back, less those it was
    /// handed.
    #[test]
    fn a_phase_hands_back_its_unfinished_games_and_the_next_plays_them_on() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut config = Config::load(&root.join("configs/micro.toml")).unwrap();
        config.selfplay.actors = 2;
        config.selfplay.games_per_actor = 4;
        let net = Net::seeded(&config.network, tch::Device::Cpu, 1).unwrap();
        let openings = vec![shakmaty::fen::Fen::default().to_string()];
        let (stop, unlimited) = (AtomicBool::new(false), MoveCount::unlimited());
        let mut in_flight = Vec::new();
        for phase in 0..3 {
            let (handed_in, before) = (
                in_flight.len(),
                in_flight.iter().map(GameInFlight::plies).sum::<usize>(),
            );
            let work = Assignment {
                games: 3,
                openings: &openings,
                id: ActorId {
                    generation: phase,
                    seed: 1,
                },
                stop: &stop,
                moves: &unlimited,
            };
            let (mut games, mut recorded) = (0, 0);
            let outcome = run_actors(
                &config,
                net.try_clone().unwrap(),
                work,
                Some(&mut in_flight),
                |game, _| {
                    games += 1;
                    recorded += game.record.positions.len();
                    cfzero_selfplay::replay::validate(&game.record).map_err(anyhow::Error::from)
                },
                |_| {},
            )
            .unwrap();
            let after: usize = in_flight.iter().map(GameInFlight::plies).sum();
            assert!(games >= 3, "phase {phase}: {games} games");
            assert_eq!(outcome.stats.games, games as u64);
            // At most a game a slot comes back, and every game handed in ended or came
            // back. (How many slots were busy at the stop depends on the threads' timing: an
            // actor that starts after the phase has its games starts none.)
            assert!(in_flight.len() <= 8, "phase {phase}: {}", in_flight.len());
            assert!(
                handed_in <= in_flight.len() + games,
                "phase {phase}: {handed_in} in, {} back, {games} ended",
                in_flight.len()
            );
            assert_eq!(
                outcome.stats.positions as usize + before,
                recorded + after,
                "phase {phase}"
            );
        }
    }
}
