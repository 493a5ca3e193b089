//! The `teacher:` source's batches against targets built by hand from the labels: a softmax
//! of the expected scores at the documented temperature, the legal mask, the teacher's W/D/L
//! with q = W - L, the plies left (NaN when unknown), and the inputs of the FEN, or of the game
//! that reached it when the label carries the game's last plies; labels that do not fit their
//! position are counted and left out.

use cfzero_chess::{ChessState, HistoryFill};
use cfzero_labels::label_file::{
    GameHistory, Label, LabelEntry, LabelHeader, LabelHistory, LabelMove, LabelWriter,
};
use cfzero_labels::{ActionValues, Method};
use cfzero_network::encoding::{POLICY_SIZE, TOKEN_FLOATS, encode_tokens_filled, move_index};
use cfzero_trainer::sample::{HostBatch, SampleScratch, TargetOptions};
use cfzero_trainer::source::teacher::{DEFAULT_TEMPERATURE, TeacherLimits, TeacherSource};
use cfzero_trainer::{SampleSource, Split};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess, Move, Position};

fn header() -> LabelHeader {
    LabelHeader {
        engine: "test".into(),
        options: vec![],
        limit: "1 nodes".into(),
        method: Method::MultiPv,
        source: "epd:test".into(),
        action_values: ActionValues::Centipawns,
        split: None,
    }
}

fn legal(fen: &str) -> Vec<Move> {
    let pos: Chess = fen
        .parse::<Fen>()
        .unwrap()
        .into_position(CastlingMode::Standard)
        .unwrap();
    pos.legal_moves().into_iter().collect()
}

/// Expected scores exactly representable in the file's 1/65535 steps.
fn q(k: u16) -> f32 {
    f32::from(k) / 65535.0
}

/// A batch of `slots` samples with one drawn from `split` into `slot`, the net's history
/// filled as `fill` says, and whether there was one to draw.
fn drawn(
    source: &TeacherSource,
    split: Split,
    fill: HistoryFill,
    slots: usize,
    slot: usize,
) -> (HostBatch, bool) {
    let targets = TargetOptions {
        history_fill: fill,
        ..TargetOptions::default()
    };
    let mut batch = HostBatch::default();
    batch.reset(slots);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let filled = source
        .fill(
            split,
            &mut rng,
            &mut batch,
            slot,
            &mut SampleScratch::default(),
            &targets,
        )
        .unwrap();
    (batch, filled)
}

#[test]
fn teacher_batches_are_the_hand_built_targets() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.cfl");
    let mut w = LabelWriter::open(&path, &header()).unwrap().writer;
    // K a1 against K h8: Ka2, Kb1, Kb2.
    let fen = "7k/8/8/8/8/8/8/K7 w - - 0 1";
    let moves = legal(fen);
    assert_eq!(moves.len(), 3);
    let scores = [q(39321), q(36044), q(6554)]; // 0.6, 0.55, 0.1
    let wdl = [q(26214), q(26214), q(13107)]; // 0.4, 0.4, 0.2
    w.append(&LabelEntry::Label(Label {
        fen: fen.into(),
        plies_left: None,
        wdl,
        moves: moves.iter().map(LabelMove::of).zip(scores).collect(),
        best: 0,
        history: None,
    }))
    .unwrap();
    // Skipped and unfit labels are counted, not trained on.
    w.append(&LabelEntry::Skipped {
        fen: "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1".into(),
        reason: "no legal move".into(),
    })
    .unwrap();
    w.append(&LabelEntry::Label(Label {
        fen: fen.into(),
        plies_left: Some(3),
        wdl,
        moves: moves[..2].iter().map(LabelMove::of).zip(scores).collect(),
        best: 0,
        history: None,
    }))
    .unwrap();
    drop(w);

    let limits = TeacherLimits {
        window: usize::MAX,
        validation_window: usize::MAX,
        max_positions: 100,
        validation_share: 0.0,
        temperature: 0.05,
    };
    let source = TeacherSource::open(&path, limits).unwrap();
    let s = source.stats();
    assert_eq!(
        (s.files, s.labels, s.skipped, s.invalid, s.torn),
        (1, 1, 1, 1, 0)
    );
    assert_eq!(source.positions(Split::Training), 1);
    assert_eq!(source.positions(Split::Validation), 0);
    assert_eq!(source.describe(), format!("teacher:{}", path.display()));

    let (batch, filled) = drawn(&source, Split::Training, HistoryFill::FenOnly, 2, 1);
    assert!(filled);
    // Softmax of (0.6, 0.55, 0.1) at temperature 0.05: weights 1, e^-1, e^-10.
    let weights = [1.0f64, (-1.0f64).exp(), (-10.0f64).exp()];
    let total: f64 = weights.iter().sum();
    let policy = &batch.policy[POLICY_SIZE..];
    let legal_mask = &batch.legal[POLICY_SIZE..];
    let state = ChessState::from_fen(fen, HistoryFill::FenOnly).unwrap();
    let mut indices = Vec::new();
    for (m, w) in moves.iter().zip(weights) {
        let i = move_index(m, state.turn());
        indices.push(i);
        assert!(
            (f64::from(policy[i]) - w / total).abs() < 1e-4,
            "{i}: {}",
            policy[i]
        );
        assert_eq!(legal_mask[i], 1.0);
    }
    for i in 0..POLICY_SIZE {
        if !indices.contains(&i) {
            assert_eq!((policy[i], legal_mask[i]), (0.0, 0.0), "{i}");
        }
    }
    assert_eq!(&batch.wdl[3..6], &wdl);
    assert!((batch.q[1] - 0.2).abs() < 1e-4);
    assert_eq!(batch.q[1], batch.st[1]);
    assert!(batch.moves_left[1].is_nan());
    let mut inputs = vec![0.0; TOKEN_FLOATS];
    encode_tokens_filled(&state, HistoryFill::FenOnly, &mut inputs);
    assert_eq!(&batch.inputs[TOKEN_FLOATS..], &inputs[..]);
    // Slot 0 untouched.
    assert!(batch.policy[..POLICY_SIZE].iter().all(|&x| x == 0.0));
    // No held-out labels: the validation split is empty.
    assert!(!drawn(&source, Split::Validation, HistoryFill::FenOnly, 2, 0).1);
}

#[test]
fn plies_left_and_the_validation_share() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.cfl");
    let mut w = LabelWriter::open(&path, &header()).unwrap().writer;
    let fen = "k7/8/8/8/8/8/8/KQ6 b - - 0 1";
    let moves = legal(fen);
    assert_eq!(moves.len(), 1);
    for i in 0..10u16 {
        w.append(&LabelEntry::Label(Label {
            fen: fen.into(),
            plies_left: Some(i),
            wdl: [0.0, 0.0, 1.0],
            moves: vec![(LabelMove::of(&moves[0]), 0.0)],
            best: 0,
            history: None,
        }))
        .unwrap();
    }
    drop(w);
    let source = TeacherSource::open(
        dir.path(),
        TeacherLimits {
            window: usize::MAX,
            validation_window: usize::MAX,
            max_positions: 8,
            validation_share: 0.25,
            temperature: DEFAULT_TEMPERATURE,
        },
    )
    .unwrap();
    // 8 of the 10 read, every fourth held out.
    assert_eq!(source.positions(Split::Training), 6);
    assert_eq!(source.positions(Split::Validation), 2);
    let mut batch = HostBatch::default();
    batch.reset(1);
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let mut scratch = SampleScratch::default();
    let targets = TargetOptions::default();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..200 {
        source
            .fill(
                Split::Validation,
                &mut rng,
                &mut batch,
                0,
                &mut scratch,
                &targets,
            )
            .unwrap();
        seen.insert(batch.moves_left[0] as u16);
        // The only move gets all of the policy; the position is lost for the side to move.
        assert_eq!(batch.q[0], -1.0);
        assert_eq!(batch.policy.iter().sum::<f32>(), 1.0);
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![3, 7]);
}

/// A run's teacher writes the labels of held-out games to a file whose header says so: every
/// label of it is held out whatever the share, no label of the training file is, and no
/// training batch holds a held-out game's position. The training labels keep their newest
/// `window`.
#[test]
fn a_file_of_held_out_games_never_reaches_a_training_batch() {
    use cfzero_labels::label_file::LabelSplit;
    let dir = tempfile::tempdir().unwrap();
    // Trained on: K+Q against K, plies left 0..10 (the newest 4 kept); held out: a position
    // of its own, plies left 100..105.
    let (trained, held) = (
        "k7/8/8/8/8/8/8/KQ6 b - - 0 1",
        "k7/8/8/8/8/8/8/KR6 b - - 0 1",
    );
    let files = [
        ("labels-01.cfl", LabelSplit::Training, trained, 0..10u16),
        ("held-out-01.cfl", LabelSplit::HeldOut, held, 100..105u16),
    ];
    for (name, split, fen, plies) in files {
        let header = LabelHeader {
            split: Some(split),
            ..header()
        };
        let mut w = LabelWriter::open(&dir.path().join(name), &header)
            .unwrap()
            .writer;
        let moves = legal(fen);
        for i in plies {
            w.append(&LabelEntry::Label(Label {
                fen: fen.into(),
                plies_left: Some(i),
                wdl: [0.0, 0.0, 1.0],
                moves: moves.iter().map(|m| (LabelMove::of(m), 0.0)).collect(),
                best: 0,
                history: None,
            }))
            .unwrap();
        }
    }
    let source = TeacherSource::open(
        dir.path(),
        TeacherLimits {
            window: 4,
            validation_window: usize::MAX,
            max_positions: usize::MAX,
            validation_share: 0.5,
            temperature: DEFAULT_TEMPERATURE,
        },
    )
    .unwrap();
    assert_eq!(source.stats().labels, 15);
    assert_eq!(source.positions(Split::Training), 4);
    assert_eq!(source.positions(Split::Validation), 5);
    let encoded = |fen: &str| {
        let mut inputs = vec![0.0; TOKEN_FLOATS];
        let state = ChessState::from_fen(fen, HistoryFill::FenOnly).unwrap();
        encode_tokens_filled(&state, HistoryFill::FenOnly, &mut inputs);
        inputs
    };
    let targets = TargetOptions {
        history_fill: HistoryFill::FenOnly,
        ..TargetOptions::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut scratch = SampleScratch::default();
    for (split, fen, plies) in [
        (Split::Training, trained, 6..10u16),
        (Split::Validation, held, 100..105),
    ] {
        let mut batch = HostBatch::default();
        batch.reset(64);
        for slot in 0..64 {
            assert!(
                source
                    .fill(split, &mut rng, &mut batch, slot, &mut scratch, &targets)
                    .unwrap()
            );
        }
        let mut seen = std::collections::BTreeSet::new();
        for slot in 0..64 {
            let inputs = &batch.inputs[slot * TOKEN_FLOATS..(slot + 1) * TOKEN_FLOATS];
            assert_eq!(inputs, &encoded(fen)[..], "{split:?} slot {slot}");
            seen.insert(batch.moves_left[slot] as u16);
        }
        assert_eq!(seen, plies.collect(), "{split:?}");
    }
}

/// A game from the start: the Italian game's first ten plies.
const GAME: [&str; 10] = [
    "e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6", "d2d3", "f8c5", "c2c3", "d7d6",
];

/// The game's states before each ply and after the last, and each ply's move.
fn game_states() -> (Vec<ChessState>, Vec<Move>) {
    let mut state = ChessState::new();
    let (mut states, mut moves) = (vec![state.clone()], Vec::new());
    for uci in GAME {
        moves.push(state.play_uci(uci).unwrap());
        states.push(state.clone());
    }
    (states, moves)
}

#[test]
fn game_history_keeps_the_last_seven_plies() {
    let (states, moves) = game_states();
    let mut history = GameHistory::default();
    let mut of = Vec::new();
    for (state, mv) in states.iter().zip(&moves) {
        of.push(history.of(state));
        history.push(state, mv);
    }
    of.push(history.of(&states[10]));
    // At the start: the position itself, no move.
    assert_eq!(of[0].root_fen, states[0].fen());
    assert!(of[0].moves.is_empty());
    // Near the start: the game's first position and every move since.
    assert_eq!(of[2].root_fen, states[0].fen());
    assert_eq!(
        of[2].moves,
        vec![LabelMove::of(&moves[0]), LabelMove::of(&moves[1])]
    );
    // Later: seven plies back, the most the history planes show.
    assert_eq!(of[10].root_fen, states[3].fen());
    let last_seven: Vec<LabelMove> = moves[3..].iter().map(LabelMove::of).collect();
    assert_eq!(of[10].moves, last_seven);
    for (ply, h) in of.iter().enumerate() {
        assert_eq!(h.replay(HistoryFill::No).unwrap().fen(), states[ply].fen());
    }
}

#[test]
fn a_label_with_history_is_the_position_as_the_game_reached_it() {
    let (states, moves) = game_states();
    let fen = states[10].fen();
    let legal_moves = legal(&fen);
    let value = 1.0 / legal_moves.len() as f32;
    let label = |history: Option<LabelHistory>| {
        LabelEntry::Label(Label {
            fen: fen.clone(),
            plies_left: Some(40),
            wdl: [q(13107), q(39321), q(13107)],
            moves: legal_moves
                .iter()
                .map(|m| (LabelMove::of(m), value))
                .collect(),
            best: 0,
            history,
        })
    };
    let history = LabelHistory {
        root_fen: states[3].fen(),
        moves: moves[3..].iter().map(LabelMove::of).collect(),
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.cfl");
    let mut w = LabelWriter::open(&path, &header()).unwrap().writer;
    w.append(&label(Some(history.clone()))).unwrap();
    // A history that leads elsewhere (one ply short) does not fit the label.
    w.append(&label(Some(LabelHistory {
        root_fen: states[3].fen(),
        moves: history.moves[..6].to_vec(),
    })))
    .unwrap();
    drop(w);
    let limits = TeacherLimits {
        window: usize::MAX,
        validation_window: usize::MAX,
        max_positions: 100,
        validation_share: 0.0,
        temperature: DEFAULT_TEMPERATURE,
    };
    let source = TeacherSource::open(&path, limits).unwrap();
    assert_eq!((source.stats().labels, source.stats().invalid), (1, 1));

    for fill in [HistoryFill::FenOnly, HistoryFill::No] {
        let (batch, filled) = drawn(&source, Split::Training, fill, 1, 0);
        assert!(filled);
        // The inputs are those of the game's own state after its ten plies, as self-play
        // encodes it: eight real boards of history...
        let mut in_game = vec![0.0; TOKEN_FLOATS];
        encode_tokens_filled(&states[10], fill, &mut in_game);
        assert_eq!(batch.inputs, in_game);
        // ...which the FEN alone, filled or not, does not give.
        let mut from_fen = vec![0.0; TOKEN_FLOATS];
        let alone = ChessState::from_fen(&fen, fill).unwrap();
        encode_tokens_filled(&alone, fill, &mut from_fen);
        assert_ne!(batch.inputs, from_fen);
    }
}

/// Labels of the ten-move game's positions 0..n, as a teacher beside self-play writes them
/// (each with its history).
fn game_labels(n: usize) -> Vec<LabelEntry> {
    let (states, moves) = game_states();
    let mut history = GameHistory::default();
    let mut out = Vec::new();
    for (state, mv) in states.iter().zip(&moves).take(n) {
        let legal_moves = legal(&state.fen());
        out.push(LabelEntry::Label(Label {
            fen: state.fen(),
            plies_left: Some(10),
            wdl: [q(13107), q(39321), q(13107)],
            moves: legal_moves
                .iter()
                .map(|m| (LabelMove::of(m), 0.5))
                .collect(),
            best: 0,
            history: Some(history.of(state)),
        }));
        history.push(state, mv);
    }
    out
}

#[test]
fn refresh_reads_what_was_appended_since_as_a_fresh_open_would() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("labels-01.cfl");
    let labels = game_labels(10);
    let mut w = LabelWriter::open(&first, &header()).unwrap().writer;
    for e in &labels[..4] {
        w.append(e).unwrap();
    }
    let limits = TeacherLimits {
        window: usize::MAX,
        validation_window: usize::MAX,
        max_positions: usize::MAX,
        validation_share: 0.25,
        temperature: DEFAULT_TEMPERATURE,
    };
    let source = TeacherSource::open(dir.path(), limits).unwrap();
    assert_eq!(source.stats().labels, 4);
    // More labels, then a writer in the middle of an entry: the whole ones are read, the
    // partial one is not (yet).
    for e in &labels[4..7] {
        w.append(e).unwrap();
    }
    drop(w);
    let whole = std::fs::metadata(&first).unwrap().len();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&first)
        .unwrap();
    std::io::Write::write_all(&mut file, &[200, 0, 0, 0, 1, 2, 3]).unwrap();
    drop(file);
    assert_eq!(source.refresh().unwrap(), 3);
    assert_eq!((source.stats().labels, source.stats().torn), (7, 1));
    // The writer resumes (cutting the partial entry) and appends the rest; a second file
    // begins. Each label is read once.
    let mut w = LabelWriter::open(&first, &header()).unwrap().writer;
    assert_eq!(std::fs::metadata(&first).unwrap().len(), whole);
    for e in &labels[7..9] {
        w.append(e).unwrap();
    }
    drop(w);
    let mut w = LabelWriter::open(&dir.path().join("labels-02.cfl"), &header())
        .unwrap()
        .writer;
    w.append(&labels[9]).unwrap();
    w.append(&LabelEntry::Skipped {
        fen: "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1".into(),
        reason: "no legal move".into(),
    })
    .unwrap();
    drop(w);
    assert_eq!(source.refresh().unwrap(), 3);
    assert_eq!(source.refresh().unwrap(), 0);
    let fresh = TeacherSource::open(dir.path(), limits).unwrap();
    assert_eq!(source.stats(), fresh.stats());
    assert_eq!(
        (
            source.stats().labels,
            source.stats().files,
            source.stats().skipped
        ),
        (10, 2, 1)
    );
    for split in [Split::Training, Split::Validation] {
        assert_eq!(source.positions(split), fresh.positions(split));
    }
    assert_eq!(source.positions(Split::Validation), 2);
    // The same draws give the same samples.
    for slot in 0..3 {
        let a = drawn(&source, Split::Training, HistoryFill::FenOnly, 3, slot);
        let b = drawn(&fresh, Split::Training, HistoryFill::FenOnly, 3, slot);
        assert_eq!(a.0.inputs, b.0.inputs);
        assert_eq!(a.0.policy, b.0.policy);
    }
}
