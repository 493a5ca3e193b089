//! Records to batches: `fill_position` writes one slot with the replayed position's
//! inputs and targets, and `Loader` threads build whole batches from a replay window.

mod support;

use std::sync::{Arc, RwLock};
use std::time::Duration;

use cfzero_chess::TerminalReason;
use cfzero_network::encoding::{POLICY_SIZE, TOKEN_FLOATS, encode_tokens, move_index};
use cfzero_selfplay::record::{dequantize_probability, write_records};
use cfzero_selfplay::replay::replay_prefix;
use cfzero_selfplay::window::ReplayWindow;
use cfzero_selfplay::{GameRecord, GameResult, Termination};
use cfzero_trainer::sample::{SampleScratch, TargetOptions, fill_position};
use cfzero_trainer::{HostBatch, Loader, QTarget};
use support::{random_game, window_config};

/// A window of `games` random games, read from record files as a run reads them.
fn window_of(games: u64) -> Arc<RwLock<ReplayWindow>> {
    let dir = tempfile::tempdir().unwrap();
    for seed in 0..games {
        let path = dir.path().join(format!("g{seed:05}.cfzg"));
        write_records(&path, &[random_game(seed, 30)]).unwrap();
    }
    let mut window = ReplayWindow::new(window_config());
    let (added, skipped) = window.load_new_files(dir.path()).unwrap();
    assert_eq!((added, skipped.len()), (games as usize, 0));
    Arc::new(RwLock::new(window))
}

/// Whether two W/D/L targets agree to float rounding.
fn close(a: [f32; 3], b: [f32; 3]) -> bool {
    a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-6)
}

fn targets() -> TargetOptions {
    TargetOptions {
        q_target: QTarget::Best,
        q_ratio: 0.25,
        capped_q_ratio: 0.25,
        ..TargetOptions::default()
    }
}

/// Checks the buffer sizes of a batch of `len` and what every slot must hold whatever
/// position it came from.
fn assert_well_formed(batch: &HostBatch, len: usize) {
    assert_eq!(batch.len, len);
    assert_eq!(batch.inputs.len(), len * TOKEN_FLOATS);
    assert_eq!(batch.policy.len(), len * POLICY_SIZE);
    assert_eq!(batch.legal.len(), len * POLICY_SIZE);
    assert_eq!(batch.wdl.len(), len * 3);
    for v in [&batch.q, &batch.st, &batch.moves_left] {
        assert_eq!(v.len(), len);
    }
    for slot in 0..len {
        let inputs = &batch.inputs[slot * TOKEN_FLOATS..(slot + 1) * TOKEN_FLOATS];
        // Plane 111 is all ones, so a written slot is never all zero.
        assert!(inputs.iter().sum::<f32>() >= 64.0, "slot {slot}: no input");
        let legal = &batch.legal[slot * POLICY_SIZE..(slot + 1) * POLICY_SIZE];
        let policy = &batch.policy[slot * POLICY_SIZE..(slot + 1) * POLICY_SIZE];
        assert!(legal.iter().all(|&l| l == 0.0 || l == 1.0));
        let moves = legal.iter().filter(|&&l| l == 1.0).count();
        assert!(
            (1..=218).contains(&moves),
            "slot {slot}: {moves} legal moves"
        );
        assert!(
            policy
                .iter()
                .zip(legal)
                .all(|(&p, &l)| p >= 0.0 && (l == 1.0 || p == 0.0)),
            "slot {slot}: policy outside the legal moves"
        );
        let total: f32 = policy.iter().sum();
        assert!(
            (total - 1.0).abs() < 1e-4,
            "slot {slot}: policy sums to {total}"
        );
        let wdl = &batch.wdl[slot * 3..slot * 3 + 3];
        assert!(wdl.iter().all(|&w| (0.0..=1.0).contains(&w)), "{wdl:?}");
        assert!((wdl.iter().sum::<f32>() - 1.0).abs() < 1e-5, "{wdl:?}");
        assert!((-1.0..=1.0).contains(&batch.q[slot]));
        assert!(batch.moves_left[slot] >= 1.0);
    }
}

#[test]
fn fill_position_writes_the_replayed_position_into_its_slot_only() {
    let game = random_game(3, 20);
    assert_eq!((game.result, game.positions.len()), (GameResult::Draw, 20));
    let ply = 9;
    let mut batch = HostBatch::default();
    batch.reset(3);
    let mut scratch = SampleScratch::default();
    fill_position(&game, ply, &mut batch, 1, &mut scratch, &targets()).unwrap();

    let mut legal = Vec::new();
    let state = replay_prefix(&game, ply, &mut legal, |_, _, _, _| {}).unwrap();
    cfzero_mcts::Game::legal_moves(&state, &mut legal);
    let mut inputs = vec![0.0; TOKEN_FLOATS];
    encode_tokens(&state, &mut inputs);
    assert_eq!(batch.inputs[TOKEN_FLOATS..2 * TOKEN_FLOATS], inputs[..]);

    let record = &game.positions[ply];
    let total: f32 = record
        .policy
        .iter()
        .map(|&q| dequantize_probability(q))
        .sum();
    let slot_policy = &batch.policy[POLICY_SIZE..2 * POLICY_SIZE];
    let slot_legal = &batch.legal[POLICY_SIZE..2 * POLICY_SIZE];
    for (mv, &q) in legal.iter().zip(&record.policy) {
        let i = move_index(mv, state.turn());
        assert_eq!(slot_legal[i], 1.0, "{mv:?}");
        assert!((slot_policy[i] - dequantize_probability(q) / total).abs() < 1e-6);
    }
    assert_eq!(
        slot_legal.iter().filter(|&&l| l == 1.0).count(),
        legal.len()
    );

    // The game is a draw: the WDL target is 3/4 the result's draw and 1/4 the search's.
    // Both from best play (Lc0's best_q and best_d), not the root's draw share.
    let q = record.best_q;
    let d = record.best_d;
    assert_ne!(d, record.root_d);
    let searched = [(1.0 + q - d) / 2.0, d, (1.0 - q - d) / 2.0];
    let expected = [
        0.25 * searched[0],
        0.75 + 0.25 * searched[1],
        0.25 * searched[2],
    ];
    for (got, want) in batch.wdl[3..6].iter().zip(expected) {
        assert!(
            (got - want).abs() < 1e-6,
            "{:?} vs {expected:?}",
            &batch.wdl[3..6]
        );
    }
    assert_eq!(batch.q[1], q);
    assert_eq!(batch.st[1], record.st);
    assert_eq!(batch.moves_left[1], (game.positions.len() - ply) as f32);

    // The other slots keep their zeros.
    for slot in [0, 2] {
        let inputs = &batch.inputs[slot * TOKEN_FLOATS..(slot + 1) * TOKEN_FLOATS];
        assert!(inputs.iter().all(|&x| x == 0.0), "slot {slot}");
        let policy = &batch.policy[slot * POLICY_SIZE..(slot + 1) * POLICY_SIZE];
        assert!(policy.iter().all(|&x| x == 0.0), "slot {slot}");
        assert_eq!(batch.moves_left[slot], 0.0);
    }
}

#[test]
fn a_cheap_searchs_position_gets_its_legal_moves_and_values_but_no_policy_target() {
    let full = random_game(3, 20);
    let ply = 9;
    let mut cheap = full.clone();
    cheap.positions[ply].policy.clear();
    let slot = |game: &GameRecord| {
        let mut batch = HostBatch::default();
        batch.reset(1);
        let mut scratch = SampleScratch::default();
        fill_position(game, ply, &mut batch, 0, &mut scratch, &targets()).unwrap();
        batch
    };
    let (with, without) = (slot(&full), slot(&cheap));
    assert!(without.policy.iter().all(|&p| p == 0.0), "a policy target");
    assert!(with.policy.iter().sum::<f32>() > 0.99);
    // Everything else is what the position with a policy target gets.
    assert_eq!(without.inputs, with.inputs);
    assert_eq!(without.legal, with.legal);
    assert!(without.legal.iter().filter(|&&l| l == 1.0).count() > 1);
    assert_eq!(without.wdl, with.wdl);
    assert_eq!(
        (without.q, without.st, without.moves_left),
        (with.q, with.st, with.moves_left)
    );
    // A policy target with a wrong number of entries is still refused.
    let mut bad = full.clone();
    bad.positions[ply].policy.pop();
    let mut batch = HostBatch::default();
    batch.reset(1);
    let err = fill_position(
        &bad,
        ply,
        &mut batch,
        0,
        &mut SampleScratch::default(),
        &targets(),
    );
    assert!(err.is_err(), "a short policy was written");
}

#[test]
fn a_game_adjudicated_at_the_length_cap_trains_its_value_on_the_search_alone() {
    let capped = random_game(3, 20);
    assert_eq!(capped.termination, Termination::MAX_PLIES);
    // The same moves, ended by a rule: a real draw.
    let mut repeated = capped.clone();
    repeated.termination = Termination::Rule(TerminalReason::ThreefoldRepetition);
    let options = TargetOptions {
        capped_q_ratio: 1.0,
        ..targets()
    };
    let ply = 9;
    let record = &capped.positions[ply];
    let (q, d) = (record.best_q, record.best_d);
    let searched = [(1.0 + q - d) / 2.0, d, (1.0 - q - d) / 2.0];
    let wdl_target = |game: &GameRecord| {
        let mut batch = HostBatch::default();
        batch.reset(1);
        let mut scratch = SampleScratch::default();
        fill_position(game, ply, &mut batch, 0, &mut scratch, &options).unwrap();
        [batch.wdl[0], batch.wdl[1], batch.wdl[2]]
    };
    let got = wdl_target(&capped);
    assert!(close(got, searched), "{got:?} vs the search's {searched:?}");
    // A draw by the rules keeps the result's share: 3/4 draw, 1/4 the search's.
    let got = wdl_target(&repeated);
    let mixed = [
        0.25 * searched[0],
        0.75 + 0.25 * searched[1],
        0.25 * searched[2],
    ];
    assert!(close(got, mixed), "{got:?} vs {mixed:?}");
}

#[test]
fn the_loader_builds_full_batches_of_the_right_shapes() {
    let loader = Loader::start(window_of(6), 16, 2, 5, targets());
    for _ in 0..4 {
        let batch = loader.next();
        assert_well_formed(&batch, 16);
        loader.recycle(batch);
    }
}

#[test]
fn one_loader_thread_with_one_seed_gives_the_same_batches() {
    let window = window_of(4);
    let batches = |seed: u64| {
        let loader = Loader::start(window.clone(), 8, 1, seed, targets());
        (0..3).map(|_| loader.next()).collect::<Vec<_>>()
    };
    let fields = |b: &HostBatch| {
        [
            &b.inputs,
            &b.policy,
            &b.legal,
            &b.wdl,
            &b.q,
            &b.st,
            &b.moves_left,
        ]
        .map(|v| v.clone())
    };
    let (a, b, c) = (batches(9), batches(9), batches(10));
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(fields(x), fields(y));
    }
    assert_ne!(
        a.iter().map(fields).collect::<Vec<_>>(),
        c.iter().map(fields).collect::<Vec<_>>(),
        "another seed draws other positions"
    );
}

#[test]
fn the_loader_waits_for_games_and_then_delivers() {
    let window = Arc::new(RwLock::new(ReplayWindow::new(window_config())));
    let loader = Loader::start(window.clone(), 4, 1, 1, targets());
    let (tx, rx) = std::sync::mpsc::channel();
    // A loader that never delivers must fail this test, not hang it.
    std::thread::spawn(move || {
        let batch = loader.next();
        let _ = tx.send(batch);
    });
    std::thread::sleep(Duration::from_millis(100));
    assert!(rx.try_recv().is_err(), "a batch from an empty window");
    window.write().unwrap().add(Arc::new(random_game(7, 10)));
    let batch = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("no batch a minute after a game was added");
    assert_well_formed(&batch, 4);
}

#[test]
fn td_lambda_weighs_the_later_search_values_and_the_result() {
    // A 20-ply game White wins: White moves at even plies.
    let mut game = random_game(3, 20);
    assert_eq!(game.positions.len(), 20);
    game.result = GameResult::WhiteWin;
    game.termination = Termination::Resignation;
    let wdl_target = |ply: usize, td_lambda: Option<f32>| {
        let options = TargetOptions {
            q_ratio: 0.0,
            td_lambda,
            ..targets()
        };
        let mut batch = HostBatch::default();
        batch.reset(1);
        fill_position(
            &game,
            ply,
            &mut batch,
            0,
            &mut SampleScratch::default(),
            &options,
        )
        .unwrap();
        [batch.wdl[0], batch.wdl[1], batch.wdl[2]]
    };
    // The W/D/L of a position's value of best play, for its own side to move: best_d 1/8,
    // less where |q| leaves no room for it.
    let searched = |ply: usize| {
        let q = game.positions[ply].best_q;
        let d = game.positions[ply].best_d.min(1.0 - q.abs());
        [(1.0 - d + q) / 2.0, d, (1.0 - d - q) / 2.0]
    };
    let swap = |[w, d, l]: [f32; 3]| [l, d, w];
    // Ply 17 (Black to move): ply 18 is White's (swapped) at 1/2, ply 19 Black's at 1/4, and
    // the result, a loss for Black, the last 1/4.
    let (a, b) = (swap(searched(18)), searched(19));
    let want: [f32; 3] =
        std::array::from_fn(|i| 0.5 * a[i] + 0.25 * b[i] + 0.25 * [0.0, 0.0, 1.0][i]);
    let got = wdl_target(17, Some(0.5));
    assert!(close(got, want), "{got:?} vs {want:?}");
    // Lambda 1, or no lambda: the result alone; the last position: the result at any lambda.
    for (ply, lambda, want) in [
        (4, Some(1.0), [1.0, 0.0, 0.0]),
        (5, None, [0.0, 0.0, 1.0]),
        (19, Some(0.3), [0.0, 0.0, 1.0]),
    ] {
        let got = wdl_target(ply, lambda);
        assert!(
            close(got, want),
            "ply {ply}, {lambda:?}: {got:?} vs {want:?}"
        );
    }
    // Lambda 0: the next position's value alone, from the other side.
    let got = wdl_target(6, Some(0.0));
    assert!(close(got, swap(searched(7))), "{got:?}");
}
