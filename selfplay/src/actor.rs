//! An actor: one thread that plays many self-play games at once through the search driver.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use cfzero_chess::{ChessState, HistoryFill, TerminalReason, tablebase};
use cfzero_mcts::Terminal;
use cfzero_mcts::search::{SearchError, SearchResult};
use cfzero_mcts::{Driver, Evaluator, SearchConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shakmaty::{Color, Move};

use crate::config::{MoveChoice, SelfplayConfig, TablebaseUse, material_leader};
use crate::record::{GameRecord, PositionRecord, quantize_probability};
use crate::resign::{ResignSample, ResignTracker};
use crate::result::{GameResult, Termination};
use crate::targets::{SHORT_TERM_THETA, short_term_targets};

/// Why self-play stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum SelfplayError {
    /// The search (or its evaluator) failed.
    #[error("search failed: {0}")]
    Search(#[from] SearchError),
    /// An opening of the book is not a valid position.
    #[error("opening {index} ({fen:?}): {reason}")]
    BadOpening {
        /// Line number in the book (0-based, over kept lines).
        index: usize,
        /// The FEN.
        fen: String,
        /// What is wrong.
        reason: String,
    },
}

/// A finished self-play game.
#[derive(Debug, Clone)]
pub struct FinishedGame {
    /// The record to train on.
    pub record: GameRecord,
    /// For a game that played on past a resignation: whether that resignation would have
    /// been wrong (the resigning side did not lose). `None` if no one would have resigned.
    pub resign_false_positive: Option<bool>,
    /// For a playthrough game (one that never resigns), each side's resign score and
    /// whether it lost, for calibrating the threshold ([`crate::resign`]); empty otherwise.
    pub resign_samples: Vec<ResignSample>,
}

/// Counters of an actor's work.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ActorStats {
    /// Games finished.
    pub games: u64,
    /// Moves played (positions recorded).
    pub positions: u64,
    /// Positions searched with the full budget (training positions).
    pub training_positions: u64,
    /// Simulations run over all searches.
    pub simulations: u64,
}

/// A game that [`play_games`] stopped before its end and handed back, to go on in a later
/// call (with a newer net) where it stopped: with games carried over, a phase of self-play
/// ends when enough games have finished, not when its longest game has, so every slot keeps a
/// game until then.
#[derive(Debug)]
pub struct GameInFlight {
    state: ChessState,
    slot: Slot,
}

impl GameInFlight {
    /// Moves played in the game so far.
    pub fn plies(&self) -> usize {
        self.slot.positions.len()
    }
}

/// One game in flight.
#[derive(Debug)]
struct Slot {
    start_fen: Option<String>,
    positions: Vec<PositionRecord>,
    playthrough: bool,
    would_resign: Option<Color>,
    resign: ResignTracker,
    /// The tables' result of the game's first position in them (with `tablebase` on).
    tablebase: Option<GameResult>,
    /// The side that has led by a piece of material after each of the last plies, and for
    /// how many (with `material_adjudication_plies` on).
    lead: Option<(Color, u32)>,
}

/// Moves played by the actors that share it, with an optional limit: once the count reaches
/// the limit, every actor stops as if `stop` were set (searches already under way still end
/// and count, so the count may pass the limit by up to the number of games in flight).
#[derive(Debug)]
pub struct MoveCount {
    played: AtomicU64,
    limit: u64,
}

impl MoveCount {
    /// A counter without a limit.
    pub fn unlimited() -> MoveCount {
        MoveCount::with_limit(u64::MAX)
    }

    /// A counter that stops the actors after `limit` moves.
    pub fn with_limit(limit: u64) -> MoveCount {
        MoveCount {
            played: AtomicU64::new(0),
            limit,
        }
    }

    /// Moves played so far.
    pub fn played(&self) -> u64 {
        self.played.load(Ordering::Relaxed)
    }

    /// Whether the limit is reached.
    pub fn reached(&self) -> bool {
        self.played() >= self.limit
    }
}

/// The identity of a stream of self-play: which net plays, and the random seed.
#[derive(Debug, Clone, Copy)]
pub struct ActorId {
    /// Generation of the net that plays (stored in the records).
    pub generation: u32,
    /// Seed of this actor's random numbers: same seed, same games (with a deterministic evaluator).
    pub seed: u64,
}

/// What a stream of self-play plays: how many games, from which openings (FENs; empty means
/// the standard start position), as whom, and when it stops: when `stop` is set or `moves`
/// (every move played is counted there) reaches its limit.
#[derive(Debug, Clone, Copy)]
pub struct Assignment<'a> {
    /// New games to start (besides the games [`play_games`] carries on).
    pub games: usize,
    /// Opening FENs, drawn at random per game.
    pub openings: &'a [String],
    /// The net's generation and the seed.
    pub id: ActorId,
    /// Set to stop (unfinished games are dropped, or handed back to carry on).
    pub stop: &'a AtomicBool,
    /// Every move played, with an optional limit.
    pub moves: &'a MoveCount,
}

/// Plays `work.games` new games with `evaluator`, up to `config.games_per_actor` at a time, and
/// hands each finished game to `on_game` as soon as it ends (see [`Assignment`] for when it
/// stops early).
///
/// With `in_flight`, the games it holds are played on first (beside the new ones, each in a
/// slot of its own), and the games unfinished when the actor stops are handed back in it
/// instead of being dropped.
pub fn play_games<E: Evaluator<ChessState>>(
    config: &SelfplayConfig,
    search: &SearchConfig,
    evaluator: &E,
    work: Assignment,
    mut in_flight: Option<&mut Vec<GameInFlight>>,
    mut on_game: impl FnMut(FinishedGame, &ActorStats),
) -> Result<ActorStats, SelfplayError> {
    let Assignment {
        games,
        openings,
        id,
        stop,
        moves,
    } = work;
    let mut rng = ChaCha8Rng::seed_from_u64(id.seed);
    if config.tablebase != TablebaseUse::Off {
        tablebase::prepare();
    }
    let mut driver: Driver<ChessState> = Driver::new(search.clone(), config.cache_entries);
    let mut stats = ActorStats::default();
    // The game of each driver slot, and whether its current search has the full budget.
    let mut playing: Vec<Option<(ChessState, Slot, bool)>> = Vec::new();
    let carried = in_flight
        .as_deref_mut()
        .map(std::mem::take)
        .unwrap_or_default();
    // At least a slot for each carried game, which therefore all fit.
    let slots =
        (config.games_per_actor.max(1).max(carried.len())).min(games.saturating_add(carried.len()));
    playing.resize_with(slots, || None);
    for (slot, game) in playing.iter_mut().zip(carried) {
        *slot = Some((game.state, game.slot, false));
    }
    let mut started = 0usize;
    let mut values = Vec::new();
    let mut st = Vec::new();

    driver.run_streaming(slots, evaluator, &mut rng, |i, result, rng| {
        if let Some(res) = result {
            let (state, slot, full) = playing[i].as_mut().expect("a search ran for this slot");
            stats.simulations += u64::from(res.simulations);
            stats.positions += 1;
            moves.played.fetch_add(1, Ordering::Relaxed);
            stats.training_positions += u64::from(*full);
            if let Some((result, termination)) = step_game(config, state, slot, &res, *full, rng) {
                let (state, slot, _) = playing[i].take().expect("checked above");
                let game = finish(
                    slot,
                    &state,
                    result,
                    termination,
                    id.generation,
                    &mut values,
                    &mut st,
                );
                stats.games += 1;
                on_game(game, &stats);
            }
        }
        if stop.load(Ordering::Relaxed) || moves.reached() {
            // Unfinished games go back to the caller who asked for them; else they are
            // dropped: only whole games are training data.
            if let Some((state, slot, _)) = playing[i].take()
                && let Some(out) = in_flight.as_deref_mut()
            {
                out.push(GameInFlight { state, slot });
            }
            return Ok(None);
        }
        if playing[i].is_none() {
            if started == games {
                return Ok(None);
            }
            let (state, slot) = new_game(config, openings, rng)?;
            playing[i] = Some((state, slot, false));
            started += 1;
        }
        let (state, _, full) = playing[i].as_mut().expect("filled above");
        *full = rng.random::<f32>() < config.full_search_fraction;
        let budget = if *full {
            config.simulations
        } else {
            config.cheap_simulations
        };
        Ok::<_, SelfplayError>(Some((state.clone(), budget)))
    })?;
    Ok(stats)
}

/// Starts a game from the standard position or a random opening of the book.
fn new_game(
    config: &SelfplayConfig,
    openings: &[String],
    rng: &mut impl Rng,
) -> Result<(ChessState, Slot), SelfplayError> {
    let (mut state, start_fen) = if openings.is_empty() {
        (ChessState::new(), None)
    } else {
        let index = rng.random_range(0..openings.len());
        let fen = &openings[index];
        let state =
            ChessState::from_fen(fen, HistoryFill::No).map_err(|e| SelfplayError::BadOpening {
                index,
                fen: fen.clone(),
                reason: e.to_string(),
            })?;
        (state, Some(fen.clone()))
    };
    state.set_max_plies(config.max_plies);
    let playthrough = rng.random::<f32>() < config.resign_playthrough;
    let slot = Slot {
        start_fen,
        positions: Vec::with_capacity(128),
        playthrough,
        would_resign: None,
        resign: ResignTracker::new(config.resign_consecutive),
        tablebase: None,
        lead: None,
    };
    Ok((state, slot))
}

/// Chooses and plays a move from a search result, records the position, and says whether
/// (and how) the game ended.
fn step_game(
    config: &SelfplayConfig,
    state: &mut ChessState,
    slot: &mut Slot,
    res: &SearchResult<Move>,
    full: bool,
    rng: &mut impl Rng,
) -> Option<(GameResult, Termination)> {
    let best = res
        .moves
        .iter()
        .position(|&m| m == res.best_move)
        .expect("the best move is a root move");
    // A proven win is played, not sampled: the search knows the shortest one.
    let proven_win = res.proven.is_some_and(|p| p.outcome == Terminal::Win);
    let played = if state.ply() < config.temperature_plies && !proven_win {
        sample_move(&res.policy, &res.move_outcomes, config.temperature, rng)
    } else {
        match config.move_choice {
            MoveChoice::Gumbel => best,
            MoveChoice::Greedy => greedy_move(res).unwrap_or(best),
        }
    };
    let mv = res.moves[played];
    let played_q = res.q.get(played).copied().unwrap_or(res.value);
    slot.positions.push(PositionRecord {
        played: u8::try_from(played).expect("at most 218 legal moves"),
        policy: if full {
            res.policy
                .iter()
                .map(|&p| quantize_probability(p))
                .collect()
        } else {
            Vec::new()
        },
        network_q: res.network_value,
        root_q: res.value,
        root_d: res.wdl[1],
        best: u8::try_from(best).expect("at most 218 legal moves"),
        best_d: res.best_d,
        best_q: res.best_q,
        played_q,
        policy_q: res.policy_q,
        st: 0.0,
        surprise: if full { res.prior_kl } else { 0.0 },
    });

    let mover = state.turn();
    if full {
        slot.resign.observe(mover, res.best_q);
    }
    let mut end = None;
    if let Some(threshold) = config.resign_threshold {
        let proven_loss = res.proven.is_some_and(|p| p.outcome == Terminal::Loss);
        if proven_loss || slot.resign.wants_to_resign(mover, threshold) {
            if slot.playthrough {
                slot.would_resign.get_or_insert(mover);
            } else {
                end = Some((GameResult::win_for(!mover), Termination::Resignation));
            }
        }
    }
    state.play_move(mv);
    if config.tablebase != TablebaseUse::Off && slot.tablebase.is_none() {
        slot.tablebase = tablebase::probe(state.position());
    }
    if config.material_adjudication_plies > 0 {
        slot.lead = match (slot.lead, material_leader(state.position())) {
            (Some((was, plies)), Some(now)) if was == now => Some((now, plies + 1)),
            (_, now) => now.map(|c| (c, 1)),
        };
    }
    let end = end
        .or_else(|| {
            state.terminal_reason().map(|reason| {
                let decisive = (reason == TerminalReason::MaxPlies)
                    .then(|| config.max_plies_result.decisive(state.position()))
                    .flatten();
                match decisive {
                    Some(result) => (result, Termination::Material),
                    None => (
                        GameResult::from_terminal(reason, state.turn()),
                        Termination::from(reason),
                    ),
                }
            })
        })
        .or_else(|| match config.tablebase {
            TablebaseUse::Adjudicate => slot.tablebase.map(|r| (r, Termination::Tablebase)),
            TablebaseUse::Off | TablebaseUse::Rescore => None,
        })
        .or_else(|| match slot.lead {
            Some((leader, plies)) if plies >= config.material_adjudication_plies => {
                Some((GameResult::win_for(leader), Termination::Material))
            }
            _ => None,
        })?;
    // Once the game entered the tables, their result stands, whatever the play after it.
    Some(match slot.tablebase {
        Some(known) if known != end.0 => (known, Termination::Tablebase),
        _ => end,
    })
}

/// [`MoveChoice::Greedy`]: among the most visited root moves that are not proven losses,
/// the one with the largest improved policy (the best `logit + sigma`, the root noise left
/// out). `None` where proofs decide (the root is proven: the search's move follows them).
fn greedy_move(res: &SearchResult<Move>) -> Option<usize> {
    if res.proven.is_some() {
        return None;
    }
    let playable = |i: &usize| !proven_loss(&res.move_outcomes, *i);
    let most = (0..res.visits.len())
        .filter(playable)
        .map(|i| res.visits[i])
        .max()?;
    (0..res.visits.len())
        .filter(|i| playable(i) && res.visits[*i] == most)
        .max_by(|&a, &b| res.policy[a].total_cmp(&res.policy[b]).then(b.cmp(&a)))
}

/// Whether root move `i` is proven to lose for the side to move (`outcomes` as
/// [`SearchResult::move_outcomes`] gives them).
fn proven_loss(outcomes: &[Option<Terminal>], i: usize) -> bool {
    outcomes.get(i) == Some(&Some(Terminal::Loss))
}

/// Index of a move drawn from `policy` at `temperature` (0 = the most likely one). Moves
/// proven to lose (`outcomes`, for the side to move) are never drawn while another move is
/// not one: exploration has nothing to learn from a known blunder.
fn sample_move(
    policy: &[f32],
    outcomes: &[Option<Terminal>],
    temperature: f32,
    rng: &mut impl Rng,
) -> usize {
    let avoid = (0..policy.len()).any(|i| !proven_loss(outcomes, i));
    let allowed = |i: usize| !(avoid && proven_loss(outcomes, i));
    let argmax = || {
        (0..policy.len())
            .filter(|&i| allowed(i))
            .max_by(|&a, &b| policy[a].total_cmp(&policy[b]))
            .expect("a root has legal moves")
    };
    if temperature <= 0.0 {
        return argmax();
    }
    let weight = |i: usize| {
        let p = policy[i];
        if !allowed(i) {
            0.0
        } else if temperature == 1.0 {
            p.max(0.0)
        } else {
            p.max(0.0).powf(1.0 / temperature)
        }
    };
    let total: f32 = (0..policy.len()).map(weight).sum();
    if total.is_nan() || total <= 0.0 {
        return argmax();
    }
    let mut x = rng.random::<f32>() * total;
    let mut last = 0;
    for i in 0..policy.len() {
        let w = weight(i);
        if w > 0.0 {
            last = i;
            x -= w;
            if x < 0.0 {
                return i;
            }
        }
    }
    // Rounding can leave x at or just above 0: the last move with weight takes it.
    last
}

/// Fills in the targets that need the end of the game and builds the record.
///
/// The short-term targets are built from the value of best play ([`PositionRecord::best_q`]),
/// not the root's mean: that is the value the position has if the game goes on well.
fn finish(
    mut slot: Slot,
    final_state: &ChessState,
    result: GameResult,
    termination: Termination,
    generation: u32,
    values: &mut Vec<f32>,
    st: &mut Vec<f32>,
) -> FinishedGame {
    values.clear();
    values.extend(slot.positions.iter().map(|p| p.best_q));
    // The draw of the game-length cap is no result (the net cannot see the ply count): the
    // tail of a capped game's targets is the search's value of its last position, seen from
    // the side to move after it.
    let final_value = match (termination, values.last()) {
        (Termination::MAX_PLIES, Some(&last)) => -last,
        _ => result.value_for(final_state.turn()),
    };
    short_term_targets(values, final_value, SHORT_TERM_THETA, st);
    for (p, &v) in slot.positions.iter_mut().zip(st.iter()) {
        p.st = v;
    }
    // A game drawn only by the length cap says nothing about a resignation: the side that
    // would have resigned may well have lost had the game gone on. Such games count as
    // unknown, neither right nor wrong.
    let known = termination != Termination::MAX_PLIES;
    let resign_false_positive = slot
        .would_resign
        .filter(|_| known)
        .map(|side| result.value_for(side) >= 0.0);
    let resign_samples = if slot.playthrough && known {
        [Color::White, Color::Black]
            .into_iter()
            .filter(|&c| slot.resign.score(c).is_finite())
            .map(|c| ResignSample {
                score: slot.resign.score(c),
                lost: result.value_for(c) < 0.0,
            })
            .collect()
    } else {
        Vec::new()
    };
    FinishedGame {
        record: GameRecord {
            start_fen: slot.start_fen,
            result,
            termination,
            generation,
            positions: slot.positions,
        },
        resign_false_positive,
        resign_samples,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MaxPliesResult;
    use rand::SeedableRng;

    /// A game slot of the start position with a tracker that resigns after one low value.
    fn test_slot(playthrough: bool, would_resign: Option<Color>) -> Slot {
        Slot {
            start_fen: None,
            positions: Vec::new(),
            playthrough,
            would_resign,
            resign: ResignTracker::new(1),
            tablebase: None,
            lead: None,
        }
    }

    #[test]
    fn sampling_never_draws_a_proven_loss_while_another_move_is_open() {
        let policy = [0.9, 0.06, 0.04];
        let outcomes = [Some(Terminal::Loss), None, Some(Terminal::Draw)];
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for _ in 0..500 {
            assert_ne!(sample_move(&policy, &outcomes, 1.0, &mut rng), 0);
        }
        assert_eq!(sample_move(&policy, &outcomes, 0.0, &mut rng), 1);
        // When every move loses, one of them is still played.
        let all = [Some(Terminal::Loss); 3];
        assert_eq!(sample_move(&policy, &all, 0.0, &mut rng), 0);
        // Without proofs the policy's favourite is drawn most.
        let zeros = [None; 3];
        let firsts = (0..500)
            .filter(|_| sample_move(&policy, &zeros, 1.0, &mut rng) == 0)
            .count();
        assert!(firsts > 400, "{firsts}");
    }

    /// A search result at the start position whose move is `best` (all its policy there,
    /// one visit a move), with values to recognise in the record.
    fn start_position_result(best: usize) -> SearchResult<Move> {
        result_at(&ChessState::new(), best)
    }

    /// [`result_at`] with the move `uci` chosen.
    fn result_playing(state: &ChessState, uci: &str) -> SearchResult<Move> {
        let mut moves = Vec::new();
        cfzero_mcts::Game::legal_moves(state, &mut moves);
        let i = moves
            .iter()
            .position(|m| m.to_uci(shakmaty::CastlingMode::Standard).to_string() == uci)
            .unwrap_or_else(|| panic!("{uci} is legal"));
        result_at(state, i)
    }

    /// [`start_position_result`] at `state`.
    fn result_at(state: &ChessState, best: usize) -> SearchResult<Move> {
        let mut moves = Vec::new();
        cfzero_mcts::Game::legal_moves(state, &mut moves);
        let n = moves.len();
        let mut policy = vec![0.0; n];
        policy[best] = 1.0;
        SearchResult {
            best_move: moves[best],
            moves,
            visits: vec![1; n],
            policy,
            value: -0.4,
            wdl: [0.1, 0.4, 0.5],
            proven: None,
            network_value: 0.0,
            network_wdl: [0.0, 1.0, 0.0],
            best_q: 0.3,
            best_d: 0.6,
            q: vec![0.0; n],
            policy_q: 0.2,
            move_outcomes: vec![None; n],
            prior_kl: 1.5,
            simulations: 16,
            nodes: 17,
        }
    }

    /// Past the temperature plies, `Gumbel` plays the search's move (chosen with the root
    /// noise) and `Greedy` the most visited move with the largest improved policy, never a
    /// proven loss; a proven root leaves the choice to the search's proofs.
    #[test]
    fn greedy_choice_plays_the_most_visited_move_with_the_largest_improved_policy() {
        let n = start_position_result(0).moves.len();
        // Moves 2, 5 and 9 are the finalists (4 visits); 9 has the largest pi' of all but is
        // a proven loss, 5 beats 2, and 0 has a larger pi' than 5 with fewer visits.
        let mut visits = vec![1; n];
        let mut policy = vec![0.01; n];
        let mut outcomes = vec![None; n];
        for (i, v, p) in [(2, 4, 0.10), (5, 4, 0.20), (9, 4, 0.40), (0, 1, 0.25)] {
            visits[i] = v;
            policy[i] = p;
        }
        outcomes[9] = Some(Terminal::Loss);
        let res = SearchResult {
            visits,
            policy,
            move_outcomes: outcomes,
            ..start_position_result(2)
        };
        let played = |choice: MoveChoice, res: &SearchResult<Move>| {
            let config = SelfplayConfig {
                temperature_plies: 0,
                move_choice: choice,
                resign_threshold: None,
                ..SelfplayConfig::default()
            };
            let (mut state, mut slot) = (ChessState::new(), test_slot(false, None));
            let mut rng = ChaCha8Rng::seed_from_u64(3);
            step_game(&config, &mut state, &mut slot, res, true, &mut rng);
            let p = &slot.positions[0];
            assert_eq!(p.best, 2, "the record keeps the search's move");
            p.played
        };
        assert_eq!(played(MoveChoice::Gumbel, &res), 2);
        assert_eq!(played(MoveChoice::Greedy, &res), 5);
        let proven = SearchResult {
            proven: Some(cfzero_mcts::Proof {
                outcome: Terminal::Draw,
                plies: 4,
            }),
            ..res
        };
        assert_eq!(played(MoveChoice::Greedy, &proven), 2);
    }

    /// The record of a searched position keeps the chosen move's value and draw share as
    /// best play (not the root mean's), the chosen move, and the played one, which differs
    /// from it when sampled at a temperature.
    #[test]
    fn a_position_records_the_chosen_moves_value_and_draw_share() {
        let mut state = ChessState::new();
        let res = start_position_result(3);
        let mut slot = test_slot(false, None);
        // Past the temperature plies: the chosen move is played.
        let config = SelfplayConfig {
            temperature_plies: 0,
            resign_threshold: None,
            ..SelfplayConfig::default()
        };
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        step_game(&config, &mut state, &mut slot, &res, true, &mut rng);
        let p = &slot.positions[0];
        assert_eq!((p.best_q, p.best_d, p.best, p.played), (0.3, 0.6, 3, 3));
        assert_eq!((p.root_q, p.root_d, p.policy_q), (-0.4, 0.4, 0.2));
        assert_eq!(p.surprise, 1.5);
        // Within them a move is sampled from a policy that never picks the chosen one.
        let config = SelfplayConfig {
            temperature_plies: 100,
            temperature: 1.0,
            resign_threshold: None,
            ..SelfplayConfig::default()
        };
        let mut policy = vec![0.0; 20];
        policy[7] = 1.0;
        let mut state = ChessState::new();
        step_game(
            &config,
            &mut state,
            &mut slot,
            &SearchResult {
                policy,
                ..res.clone()
            },
            true,
            &mut rng,
        );
        let p = &slot.positions[1];
        assert_eq!((p.best, p.played, p.best_q, p.best_d), (3, 7, 0.3, 0.6));

        // Resignation reads full searches only: a cheap search's hopeless value neither
        // resigns nor counts towards the streak; a full one does.
        let config = SelfplayConfig {
            temperature_plies: 0,
            resign_threshold: Some(-0.9),
            ..SelfplayConfig::default()
        };
        let hopeless = SearchResult {
            best_q: -0.99,
            ..res
        };
        let mut slot = test_slot(false, None);
        let mut state = ChessState::new();
        let end = step_game(&config, &mut state, &mut slot, &hopeless, false, &mut rng);
        assert_eq!(end, None);
        // Without a policy target a position has no surprise to weigh.
        assert_eq!(slot.positions[0].surprise, 0.0);
        assert!(slot.resign.score(Color::White).is_infinite());
        let mut state = ChessState::new();
        let end = step_game(&config, &mut state, &mut slot, &hopeless, true, &mut rng);
        assert_eq!(
            end,
            Some((GameResult::win_for(Color::Black), Termination::Resignation))
        );
    }

    /// A capture into king and queen against king, then king moves: `Adjudicate` ends the
    /// game at the capture with the tables' result, `Rescore` plays on and scores the game
    /// by that result at its end (here the length cap), `Off` leaves the capped draw.
    #[test]
    fn a_game_that_enters_the_tables_gets_their_result_as_asked() {
        let start = ChessState::from_fen("6k1/p7/8/8/8/8/8/Q6K w - - 0 1", HistoryFill::FenOnly)
            .expect("a legal FEN");
        let win = Some((GameResult::WhiteWin, Termination::Tablebase));
        for (mode, after_capture, at_cap) in [
            (TablebaseUse::Adjudicate, win, None),
            (TablebaseUse::Rescore, None, win),
            (
                TablebaseUse::Off,
                None,
                Some((GameResult::Draw, Termination::MAX_PLIES)),
            ),
        ] {
            let config = SelfplayConfig {
                temperature_plies: 0,
                resign_threshold: None,
                tablebase: mode,
                ..SelfplayConfig::default()
            };
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            let mut state = start.clone();
            state.set_max_plies(2);
            let mut slot = test_slot(false, None);
            let res = result_playing(&state, "a1a7");
            let end = step_game(&config, &mut state, &mut slot, &res, true, &mut rng);
            assert_eq!(end, after_capture, "{mode:?} after Qxa7");
            if end.is_some() {
                continue;
            }
            // Black's king steps aside and the game reaches its length cap.
            let res = result_playing(&state, "g8f8");
            let end = step_game(&config, &mut state, &mut slot, &res, true, &mut rng);
            assert_eq!(end, at_cap, "{mode:?} at the cap");
        }
    }

    /// At the length cap `Material` gives the game to a side a piece or more ahead (either
    /// colour) and leaves a smaller lead a draw; `Draw` draws every capped game.
    #[test]
    fn a_capped_game_is_scored_by_material_as_asked() {
        let win = |r| Some((r, Termination::Material));
        let draw = Some((GameResult::Draw, Termination::MAX_PLIES));
        for (fen, rule, expected) in [
            (
                "6k1/8/8/8/8/8/PP6/N6K w - - 0 1",
                MaxPliesResult::Material,
                win(GameResult::WhiteWin),
            ),
            (
                "6k1/8/8/8/8/8/PP6/N6K w - - 0 1",
                MaxPliesResult::Draw,
                draw,
            ),
            (
                "6k1/8/8/8/8/8/PP6/7K w - - 0 1",
                MaxPliesResult::Material,
                draw,
            ),
            (
                "6k1/5nn1/8/8/8/8/P7/7K w - - 0 1",
                MaxPliesResult::Material,
                win(GameResult::BlackWin),
            ),
        ] {
            let config = SelfplayConfig {
                temperature_plies: 0,
                resign_threshold: None,
                max_plies_result: rule,
                ..SelfplayConfig::default()
            };
            let mut state = ChessState::from_fen(fen, HistoryFill::FenOnly).expect("a legal FEN");
            state.set_max_plies(1);
            let mut slot = test_slot(false, None);
            let res = result_playing(&state, "h1h2");
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            let end = step_game(&config, &mut state, &mut slot, &res, true, &mut rng);
            assert_eq!(end, expected, "{fen} under {rule:?}");
        }
    }

    /// `material_adjudication_plies` ends a game once one side has led by a piece after that
    /// many plies in a row; a lead below a piece, or off, plays on.
    #[test]
    fn a_lasting_lead_of_a_piece_ends_the_game_when_asked() {
        let moves = ["h1h2", "g8f8", "h2h1"];
        for (fen, plies, ends_at) in [
            ("6k1/8/8/8/8/8/PP6/N6K w - - 0 1", 2, Some(1)),
            ("6k1/8/8/8/8/8/PP6/N6K w - - 0 1", 3, Some(2)),
            ("6k1/8/8/8/8/8/PP6/N6K w - - 0 1", 0, None),
            ("6k1/8/8/8/8/8/PP6/7K w - - 0 1", 1, None),
        ] {
            let config = SelfplayConfig {
                temperature_plies: 0,
                resign_threshold: None,
                material_adjudication_plies: plies,
                ..SelfplayConfig::default()
            };
            let mut state = ChessState::from_fen(fen, HistoryFill::FenOnly).expect("a legal FEN");
            let mut slot = test_slot(false, None);
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            let mut ended = None;
            for (i, uci) in moves.iter().enumerate() {
                let res = result_playing(&state, uci);
                if let Some(end) = step_game(&config, &mut state, &mut slot, &res, true, &mut rng) {
                    assert_eq!(end, (GameResult::WhiteWin, Termination::Material), "{fen}");
                    ended = Some(i);
                    break;
                }
            }
            assert_eq!(ended, ends_at, "{fen} after {plies} plies");
        }
    }

    /// A playthrough game drawn at the length cap is no evidence about resignation: it gives
    /// neither a false positive nor calibration samples; drawn by a rule, it does.
    #[test]
    fn a_capped_game_is_no_false_resignation() {
        let run = |termination| {
            let mut slot = test_slot(true, Some(Color::White));
            slot.resign.observe(Color::White, -0.97);
            slot.resign.observe(Color::Black, 0.9);
            finish(
                slot,
                &ChessState::new(),
                GameResult::Draw,
                termination,
                0,
                &mut Vec::new(),
                &mut Vec::new(),
            )
        };
        let capped = run(Termination::MAX_PLIES);
        assert_eq!(capped.resign_false_positive, None);
        assert!(capped.resign_samples.is_empty());
        let drawn = run(Termination::Rule(TerminalReason::ThreefoldRepetition));
        assert_eq!(drawn.resign_false_positive, Some(true));
        assert_eq!(drawn.resign_samples.len(), 2);
        assert!(drawn.resign_samples.iter().all(|s| !s.lost));
    }

    /// A game of two plies whose best-play values are `best_q`, ended as `termination`.
    fn finished(best_q: [f32; 2], result: GameResult, termination: Termination) -> GameRecord {
        let mut state = ChessState::new();
        let mut moves = Vec::new();
        let mut slot = test_slot(false, None);
        for q in best_q {
            cfzero_mcts::Game::legal_moves(&state, &mut moves);
            slot.positions.push(PositionRecord {
                best_q: q,
                ..PositionRecord::default()
            });
            state.play_move(moves[0]);
        }
        let game = finish(
            slot,
            &state,
            result,
            termination,
            0,
            &mut Vec::new(),
            &mut Vec::new(),
        );
        game.record
    }

    #[test]
    fn the_short_term_target_of_a_capped_game_ends_in_the_search_value_not_a_draw() {
        let theta = SHORT_TERM_THETA;
        // Cut off by the length cap: after the last move the side to move (White) is worth
        // minus Black's best-play value of 0.6.
        let capped = finished([0.2, 0.6], GameResult::Draw, Termination::MAX_PLIES);
        let st1 = (1.0 - theta) * 0.6 - theta * -0.6;
        let st0 = (1.0 - theta) * 0.2 - theta * st1;
        assert!((capped.positions[1].st - st1).abs() < 1e-6);
        assert!((capped.positions[0].st - st0).abs() < 1e-6);
        // A draw by the rules ends in 0.
        let drawn = finished(
            [0.2, 0.6],
            GameResult::Draw,
            Termination::Rule(TerminalReason::ThreefoldRepetition),
        );
        let st1 = (1.0 - theta) * 0.6;
        assert!((drawn.positions[1].st - st1).abs() < 1e-6);
        assert!((drawn.positions[0].st - ((1.0 - theta) * 0.2 - theta * st1)).abs() < 1e-6);
    }

    /// Plays with the uniform evaluator until `moves` stops it; the finished games' records.
    fn play_uniform(
        config: &SelfplayConfig,
        games: usize,
        moves: &MoveCount,
        in_flight: Option<&mut Vec<GameInFlight>>,
    ) -> (ActorStats, Vec<GameRecord>) {
        let stop = AtomicBool::new(false);
        let work = Assignment {
            games,
            openings: &[],
            id: ActorId {
                generation: 0,
                seed: 5,
            },
            stop: &stop,
            moves,
        };
        let mut finished = Vec::new();
        let search = SearchConfig::default();
        let evaluator = cfzero_mcts::UniformEvaluator;
        let stats = play_games(config, &search, &evaluator, work, in_flight, |g, _| {
            finished.push(g.record)
        })
        .unwrap();
        (stats, finished)
    }

    /// Games stopped before their end and handed back go on in the next call where they
    /// stopped: every move is played once, the records hold them all and replay.
    #[test]
    fn games_handed_back_on_stop_go_on_where_they_stopped() {
        let config = SelfplayConfig {
            games_per_actor: 3,
            simulations: 8,
            cheap_simulations: 4,
            max_plies: 30,
            resign_threshold: None,
            ..SelfplayConfig::default()
        };
        // Stopped after about 20 moves, before any game can reach its 30 plies.
        let mut in_flight = Vec::new();
        let (first, done) =
            play_uniform(&config, 3, &MoveCount::with_limit(20), Some(&mut in_flight));
        assert!(done.is_empty());
        assert_eq!(in_flight.len(), 3);
        assert!((20..=23).contains(&first.positions), "{first:?}");
        let carried: usize = in_flight.iter().map(GameInFlight::plies).sum();
        assert_eq!(carried as u64, first.positions);
        // Played on without new games: the three end, with the moves of both calls.
        let (second, done) =
            play_uniform(&config, 0, &MoveCount::unlimited(), Some(&mut in_flight));
        assert!(in_flight.is_empty());
        assert_eq!(done.len(), 3);
        let recorded: usize = done.iter().map(|r| r.positions.len()).sum();
        assert_eq!(recorded as u64, first.positions + second.positions);
        assert!(second.positions > 0 && done.iter().all(|r| r.positions.len() > 6));
        for record in &done {
            crate::replay::validate(record).unwrap();
        }
        // Without a place to hand them back, stopped games are dropped.
        let (stats, done) = play_uniform(&config, 3, &MoveCount::with_limit(20), None);
        assert!(done.is_empty());
        assert_eq!(stats.positions, first.positions);
    }
}
