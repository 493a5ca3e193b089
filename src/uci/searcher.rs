//! One `go`: a search on its own thread that reports `info` lines about once a second and
//! ends with `bestmove`, when its budget is spent, its time is up or `stop` arrives. It is
//! the same search as everywhere else ([`Driver::search`]): its leaves go to the net in
//! batches of [`cfzero_mcts::SearchConfig::batch`], through the engine's evaluation cache,
//! which lives from one `go` to the next. A search that fails, even by a panic, still
//! answers with a legal move: a GUI waits for `bestmove` forever, and scores `0000` as a
//! loss.
//!
//! Fault injection for tests: with the environment variable [`FAULT_ENV`] set to `panic`,
//! every search panics as it starts.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cfzero_chess::ChessState;
use cfzero_inference::InferenceHandle;
use cfzero_mcts::tree::{NO_NODE, ROOT, Tree};
use cfzero_mcts::{Driver, Limits, Search};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Move, Position};

use super::clock::Budget;

/// Simulations per second assumed before the first search has measured them.
pub const INITIAL_NPS: u64 = 200;

/// Time between two `info` lines.
const INFO_EVERY: Duration = Duration::from_secs(1);

/// Longest principal variation reported.
const MAX_PV: usize = 24;

/// What one `go` searches.
pub struct Job {
    /// The position.
    pub state: ChessState,
    /// Its limits.
    pub budget: Budget,
    /// When the `go` arrived (time limits count from it).
    pub started: Instant,
}

/// Shared between the engine's command loop and the search thread.
#[derive(Clone)]
pub struct Shared {
    /// Set by `stop` and `quit`.
    pub stop: Arc<AtomicBool>,
    /// Simulations per second of the last search, to plan a timed search's budget.
    pub nps: Arc<AtomicU64>,
    /// Set just before the search prints its `bestmove`: from then on the GUI may send the
    /// next `go`, and the thread is as good as finished.
    pub answered: Arc<AtomicBool>,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            stop: Arc::new(AtomicBool::new(false)),
            nps: Arc::new(AtomicU64::new(INITIAL_NPS)),
            answered: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// The environment variable that makes every search panic (see the module's doc).
pub const FAULT_ENV: &str = "CFZERO_UCI_FAULT";

/// The engine's search: its constants and its evaluation cache, kept between `go`s.
pub type SharedDriver = Arc<Mutex<Driver<ChessState>>>;

/// Starts the search of `job` with `driver` on a new thread; it prints its own `bestmove`.
pub fn spawn(
    job: Job,
    net: InferenceHandle<ChessState>,
    driver: SharedDriver,
    shared: Shared,
) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("uci-search".into())
        .spawn(move || {
            let outcome = catch_unwind(AssertUnwindSafe(|| search(&job, &net, &driver, &shared)));
            let failure = match outcome {
                Ok(Ok(best)) => Ok(best),
                Ok(Err(e)) => Err(e.to_string()),
                Err(panic) => Err(panic_message(panic.as_ref())),
            };
            let best = failure.unwrap_or_else(|why| {
                println!("info string search failed: {why}");
                // Any legal move beats none.
                job.state.position().legal_moves().first().copied()
            });
            // `go infinite` must not answer before `stop`, even when the search is done.
            while job.budget.infinite && !shared.stop.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(5));
            }
            shared.answered.store(true, Ordering::Release);
            match best {
                Some(mv) => println!("bestmove {}", uci(mv)),
                None => println!("bestmove 0000"),
            }
        })
        .expect("spawning the search thread")
}

/// The first line of a panic's message.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_string());
    format!("panic: {}", text.lines().next().unwrap_or_default())
}

/// Runs the search; `None` when the position has no legal move.
fn search(
    job: &Job,
    net: &InferenceHandle<ChessState>,
    driver: &SharedDriver,
    shared: &Shared,
) -> Result<Option<Move>, cfzero_mcts::SearchError> {
    if std::env::var_os(FAULT_ENV).is_some_and(|v| v == "panic") {
        panic!("fault injected by {FAULT_ENV}=panic");
    }
    // A search that panicked leaves the lock poisoned; the driver itself is still sound
    // (every search starts by resetting its tree).
    let mut driver = driver
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let limits = Limits {
        simulations: planned_simulations(&job.budget, shared.nps.load(Ordering::Relaxed)),
        deadline: job.budget.time.map(|t| job.started + t),
        stop: Some(&shared.stop),
    };
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut last_info = Instant::now();
    let outcome = driver.search(&job.state, &limits, net, &mut rng, |search| {
        if last_info.elapsed() >= INFO_EVERY {
            last_info = Instant::now();
            println!("{}", info_line(search, job.started));
        }
    });
    let result = match outcome {
        Ok(result) => result,
        Err(cfzero_mcts::SearchError::TerminalRoot { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    if let Some(search) = driver.last_search() {
        println!("{}", info_line(search, job.started));
    }
    let seconds = job.started.elapsed().as_secs_f64();
    if result.simulations >= 16 && seconds > 0.05 {
        let nps = (f64::from(result.simulations) / seconds) as u64;
        shared.nps.store(nps.max(1), Ordering::Relaxed);
    }
    Ok(Some(result.best_move))
}

/// Simulations to plan for: the node limit, or what the time allows at the measured rate
/// (with a margin: a timed search is cut by the clock, and the Gumbel schedule spreads its
/// visits over the planned budget).
fn planned_simulations(budget: &Budget, nps: u64) -> u32 {
    let by_time = budget.time.map_or(u64::MAX, |t| {
        ((t.as_secs_f64() * nps as f64 * 1.2) as u64).max(16)
    });
    budget.simulations.min(by_time).min(u64::from(u32::MAX)) as u32
}

/// `info depth .. nodes .. nps .. time .. score .. wdl .. pv ..` for the search so far.
fn info_line(search: &mut Search<ChessState>, started: Instant) -> String {
    let result = search.result();
    let tree = search.tree();
    let millis = started.elapsed().as_millis().max(1);
    let nodes = u64::from(result.simulations) + 1;
    let nps = u128::from(nodes) * 1000 / millis;
    let best = result
        .moves
        .iter()
        .position(|&m| m == result.best_move)
        .expect("the best move is a root move");
    let best_edge = tree.nodes[ROOT as usize].edge_range().start + best;
    let pv = principal_variation(tree, best_edge);
    // A proven root has an exact score: mate in N moves (negative when mated), or a draw.
    let score = match result.proven {
        Some(proof) => match proof.mate_moves() {
            Some(moves) => format!("mate {moves}"),
            None => "cp 0".to_string(),
        },
        None => format!("cp {}", centipawns(result.value)),
    };
    let permille = |p: f32| (p * 1000.0).round() as i64;
    let [w, d, l] = result.wdl;
    format!(
        "info depth {} nodes {nodes} nps {nps} time {millis} score {score} wdl {} {} {} pv {}",
        pv.len(),
        permille(w),
        permille(d),
        permille(l),
        pv.iter().map(|&m| uci(m)).collect::<Vec<_>>().join(" ")
    )
}

/// The best root move, then the most visited child at each node below it.
fn principal_variation(tree: &Tree<Move>, best_edge: usize) -> Vec<Move> {
    let mut pv = vec![tree.edges[best_edge].mv];
    let mut node = tree.edges[best_edge].child;
    while node != NO_NODE && pv.len() < MAX_PV {
        let n = &tree.nodes[node as usize];
        let Some(edge) = n
            .edge_range()
            .filter(|&e| tree.edge_visits(e) > 0)
            .max_by_key(|&e| tree.edge_visits(e))
        else {
            break;
        };
        pv.push(tree.edges[edge].mv);
        node = tree.edges[edge].child;
    }
    pv
}

/// Centipawns of a value in [-1, 1], with Lc0's older mapping 111.71·tan(1.5621·q).
pub fn centipawns(q: f32) -> i64 {
    let q = f64::from(q).clamp(-0.99, 0.99);
    (111.714_640_912 * (1.562_068_842_1 * q).tan()).round() as i64
}

/// A move in UCI notation (castling as king to its destination square).
pub fn uci(mv: Move) -> String {
    UciMove::from_move(mv, CastlingMode::Standard).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn centipawns_are_odd_and_grow_with_the_value() {
        assert_eq!(centipawns(0.0), 0);
        assert_eq!(centipawns(0.5), -centipawns(-0.5));
        // 111.71 · tan(0.781034) = 111.71 · 0.99131 = 110.74; at 0.9, 671.17.
        assert_eq!(centipawns(0.5), 111);
        assert_eq!(centipawns(0.9), 671);
        assert_eq!(centipawns(1.0), centipawns(0.99));
    }

    #[test]
    fn timed_searches_plan_by_the_measured_rate() {
        let budget = Budget {
            simulations: 4_000_000,
            time: Some(Duration::from_millis(500)),
            infinite: false,
        };
        // 0.5 s · 1000 nps · 1.2.
        assert_eq!(planned_simulations(&budget, 1000), 600);
        // At least 16, so that a very short search still compares a few moves.
        assert_eq!(planned_simulations(&budget, 1), 16);
        let nodes = Budget {
            simulations: 50,
            time: None,
            infinite: false,
        };
        assert_eq!(planned_simulations(&nodes, 1000), 50);
    }
}
