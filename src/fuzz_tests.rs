//! Mutation fuzzing of every reader of outside input: game records (and their replay),
//! UCI lines, config files, EPD and PGN books, puzzle files, Lc0 nets and cfzero nets.
//!
//! Each target starts from valid inputs and feeds mutations of them (bits flipped, bytes
//! overwritten, cut, duplicated, inserted; numbers and lengths set to extremes) to the real
//! parser under `catch_unwind`: an error is fine, a panic is a failure that prints the case's
//! seed. The cases come from a fixed-seed generator, so CI runs the same ones every time;
//! `CFZERO_FUZZ_CASES` sets the number per target (default [`DEFAULT_CASES`]) and
//! `CFZERO_FUZZ_SEED` the first seed, for long runs:
//!
//! ```text
//! CFZERO_FUZZ_CASES=200000 CFZERO_FUZZ_SEED=$RANDOM cargo test --release --bin cfzero fuzz_
//! ```

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use cfzero_chess::{ChessState, HistoryFill};
use cfzero_mcts::Game;
use cfzero_selfplay::record::{decode_records, encode_records, quantize_probability};
use cfzero_selfplay::{GameRecord, GameResult, PositionRecord, Termination};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Cases per target in the normal test suite.
const DEFAULT_CASES: u64 = 400;

/// Cases per target: `CFZERO_FUZZ_CASES` or [`DEFAULT_CASES`].
fn cases() -> u64 {
    std::env::var("CFZERO_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

/// The first seed: `CFZERO_FUZZ_SEED` or 0.
fn first_seed() -> u64 {
    std::env::var("CFZERO_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// One mutation of `input`, drawn from `rng`.
fn mutate(input: &[u8], rng: &mut ChaCha8Rng) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..rng.random_range(1..=4) {
        let at = |rng: &mut ChaCha8Rng, len: usize| rng.random_range(0..len.max(1));
        match rng.random_range(0..8) {
            0 if !out.is_empty() => {
                let i = at(rng, out.len());
                out[i] ^= 1 << rng.random_range(0..8);
            }
            1 if !out.is_empty() => {
                let i = at(rng, out.len());
                out[i] = [0x00, 0xff, 0x7f, 0x80, b'\n', b' ', b'0', b'9'][rng.random_range(0..8)];
            }
            2 => {
                let len = at(rng, out.len() + 1);
                out.truncate(len);
            }
            3 if !out.is_empty() => {
                let (a, b) = (at(rng, out.len()), at(rng, out.len()));
                let (a, b) = (a.min(b), a.max(b));
                let chunk = out[a..b].to_vec();
                let i = at(rng, out.len());
                out.splice(i..i, chunk);
            }
            4 => {
                let i = at(rng, out.len() + 1);
                let n = rng.random_range(1..16);
                let bytes: Vec<u8> = (0..n).map(|_| rng.random()).collect();
                out.splice(i..i, bytes);
            }
            5 if out.len() >= 4 => {
                // A little-endian word set to an extreme: lengths and counts.
                let i = at(rng, out.len() - 3);
                let word: u32 = [0, 1, u32::MAX, u32::MAX / 2, 1 << 24][rng.random_range(0..5)];
                out[i..i + 4].copy_from_slice(&word.to_le_bytes());
            }
            6 if !out.is_empty() => {
                // A digit run made huge (text formats).
                let i = at(rng, out.len());
                out.splice(i..i, b"99999999999999999999".iter().copied());
            }
            _ => {
                let i = at(rng, out.len());
                out.truncate(i);
                out.extend_from_slice(&input[at(rng, input.len())..]);
            }
        }
    }
    out
}

/// Runs `target` on mutations of every seed input; panics naming the first case that panics.
fn fuzz(name: &str, seeds: &[Vec<u8>], mut target: impl FnMut(&[u8])) {
    let (first, n) = (first_seed(), cases());
    for case in first..first + n {
        let mut rng = ChaCha8Rng::seed_from_u64(case);
        let seed = &seeds[rng.random_range(0..seeds.len())];
        let input = mutate(seed, &mut rng);
        if catch_unwind(AssertUnwindSafe(|| target(&input))).is_err() {
            panic!(
                "fuzz target {name}: case {case} panicked on {} bytes: {:?}",
                input.len(),
                String::from_utf8_lossy(&input[..input.len().min(200)])
            );
        }
    }
}

/// A short real game as a record: the first legal move each ply, a uniform policy.
fn sample_record(plies: usize, start_fen: Option<&str>) -> GameRecord {
    let mut state = match start_fen {
        Some(f) => ChessState::from_fen(f, HistoryFill::No).unwrap(),
        None => ChessState::new(),
    };
    let mut moves = Vec::new();
    let mut positions = Vec::new();
    for ply in 0..plies {
        state.legal_moves(&mut moves);
        if moves.is_empty() {
            break;
        }
        let k = moves.len();
        positions.push(PositionRecord {
            played: (ply % k) as u8,
            policy: vec![quantize_probability(1.0 / k as f32); k],
            network_q: 0.1,
            root_q: -0.2,
            root_d: 0.3,
            best: (ply % k) as u8,
            best_d: 0.4,
            best_q: 0.05,
            played_q: 0.0,
            policy_q: 0.02,
            st: 0.0,
            surprise: 0.5,
        });
        state.play(moves[ply % k]);
    }
    GameRecord {
        start_fen: start_fen.map(str::to_string),
        result: GameResult::Draw,
        termination: Termination::MAX_PLIES,
        generation: 3,
        positions,
    }
}

/// The payload of a record file made valid around mutated contents: decompressed, mutated
/// by the caller, then compressed and framed again with a correct checksum, so that the
/// mutations reach the game decoder instead of stopping at the CRC.
fn reframe(file: &[u8], mutate_payload: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    const HEADER: usize = 24;
    let mut payload = zstd::bulk::decompress(&file[HEADER..], 1 << 20).unwrap();
    mutate_payload(&mut payload);
    let compressed = zstd::bulk::compress(&payload, 1).unwrap();
    let mut out = file[..8].to_vec();
    out.extend_from_slice(&file[8..12]); // game count
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&(compressed.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&compressed).to_le_bytes());
    out.extend_from_slice(&compressed);
    out
}

#[test]
fn fuzz_records_and_their_replay() {
    let files = [
        encode_records(&[sample_record(30, None)]),
        encode_records(&[
            sample_record(12, Some("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")),
            sample_record(5, None),
        ]),
    ];
    let path = Path::new("fuzz.cfzg");
    let decode_and_replay = |bytes: &[u8]| {
        if let Ok(games) = decode_records(bytes, path) {
            for game in &games {
                // A record that decodes but does not replay must be an error, not a panic.
                let _ = cfzero_selfplay::replay::replay(game, |_, _, _, _| {});
            }
        }
    };
    // Mutations of the whole file (mostly stopped by the header and the checksum).
    let seeds: Vec<Vec<u8>> = files.to_vec();
    fuzz("record file", &seeds, decode_and_replay);
    // Mutations of the payload inside a valid frame.
    let payloads: Vec<Vec<u8>> = files
        .iter()
        .map(|f| zstd::bulk::decompress(&f[24..], 1 << 20).unwrap())
        .collect();
    let mut which = 0;
    fuzz("record payload", &payloads, |payload| {
        which += 1;
        let file = reframe(&files[which % files.len()], |p| *p = payload.to_vec());
        decode_and_replay(&file);
    });
}

#[test]
fn fuzz_uci_lines() {
    let seeds: Vec<Vec<u8>> = [
        "uci",
        "isready",
        "setoption name Simulations value 800",
        "setoption name Net value /tmp/x.safetensors",
        "position startpos moves e2e4 e7e5 g1f3 b8c6",
        "position fen r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1 moves e1g1",
        "go nodes 800",
        "go wtime 60000 btime 60000 winc 1000 binc 1000 movestogo 40",
        "go movetime 500 depth 12 infinite",
        "stop",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    fuzz("uci line", &seeds, |bytes| {
        let line = String::from_utf8_lossy(bytes);
        if let crate::uci::command::Command::Position { fen, moves } =
            crate::uci::command::parse(&line)
        {
            // What the engine does with a parsed position: build it, then play the moves.
            if let Some(fen) = fen
                && let Ok(mut state) = ChessState::from_fen(&fen, HistoryFill::No)
            {
                for mv in &moves {
                    if state.play_uci(mv).is_err() {
                        break;
                    }
                }
            }
        }
    });
}

#[test]
fn fuzz_config_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let seeds: Vec<Vec<u8>> = ["micro", "tiny", "lc0-bt-tiny"]
        .iter()
        .map(|p| std::fs::read(root.join(format!("configs/{p}.toml"))).unwrap())
        .collect();
    fuzz("config", &seeds, |bytes| {
        let _ = crate::config::Config::parse(&String::from_utf8_lossy(bytes));
    });
}

#[test]
fn fuzz_books_and_puzzles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let epd = std::fs::read_to_string(root.join("configs/openings/4mvs_+90_+99.epd")).unwrap();
    let epd: String = epd.lines().take(8).map(|l| format!("{l}\n")).collect();
    let pgn = "[Event \"a\"]\n[Result \"1-0\"]\n\n1. e4 e5 2. Nf3 {a comment} Nc6 (2... d6 3. d4) \
               3. Bb5 a6 $1 4. Ba4 Nf6 5. O-O 1-0\n\n[Event \"b\"]\n\n1. d4 d5 2. c4 *\n";
    let seeds = vec![epd.into_bytes(), pgn.as_bytes().to_vec()];
    fuzz("epd/pgn book", &seeds, |bytes| {
        let text = String::from_utf8_lossy(bytes);
        let _ = cfzero_selfplay::openings::pgn_final_positions(&text);
        for line in text.lines() {
            let fen = cfzero_selfplay::openings::fen_of_line(line);
            let _ = ChessState::from_fen(&fen, HistoryFill::No);
        }
    });
    let puzzles = std::fs::read(root.join("tests/data/puzzles/sample.csv")).unwrap();
    let head: Vec<u8> = puzzles
        .split(|&b| b == b'\n')
        .take(6)
        .flat_map(|l| l.iter().copied().chain([b'\n']))
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("puzzles.csv");
    let cases_before = cases();
    // Files are slower than strings: a quarter of the cases.
    let quarter = (cases_before / 4).max(1);
    let (first, _) = (first_seed(), ());
    for case in first..first + quarter {
        let mut rng = ChaCha8Rng::seed_from_u64(case);
        let input = mutate(&head, &mut rng);
        std::fs::write(&path, &input).unwrap();
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let _ = cfzero_eval::puzzles::read_puzzles(&path, Some(100));
        }));
        assert!(outcome.is_ok(), "fuzz target puzzles: case {case} panicked");
    }
}

#[test]
fn fuzz_net_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let config = crate::config::Config::load(&root.join("configs/micro.toml")).unwrap();
    let net = cfzero_network::Net::seeded(&config.network, tch::Device::Cpu, 1).unwrap();
    let native = tmp.path().join("micro.safetensors");
    cfzero_network::save_net(&net, &native).unwrap();
    let native = std::fs::read(native).unwrap();
    let lc0 = [
        std::fs::read(root.join("tests/data/lc0/bt-plain.pb.gz")).unwrap(),
        std::fs::read(root.join("tests/data/lc0/bt-smolgen.pb.gz")).unwrap(),
    ];
    // Lc0 nets mutated inside their gzip, so that the protobuf is what gets mutated.
    let lc0_plain: Vec<Vec<u8>> = lc0
        .iter()
        .map(|gz| {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(gz.as_slice()), &mut out)
                .unwrap();
            out
        })
        .collect();
    let path = tmp.path().join("case");
    // Each case builds a net when it gets that far: fewer cases than the string targets.
    let n = (cases() / 8).max(1);
    let first = first_seed();
    for case in first..first + n {
        let mut rng = ChaCha8Rng::seed_from_u64(case);
        let input = mutate(&native, &mut rng);
        std::fs::write(path.with_extension("safetensors"), &input).unwrap();
        let loaded = catch_unwind(AssertUnwindSafe(|| {
            let _ = cfzero_network::load_net(&path.with_extension("safetensors"), tch::Device::Cpu);
        }));
        assert!(loaded.is_ok(), "fuzz target net file: case {case} panicked");

        let plain = mutate(&lc0_plain[case as usize % 2], &mut rng);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &plain).unwrap();
        std::fs::write(path.with_extension("pb.gz"), gz.finish().unwrap()).unwrap();
        let imported = catch_unwind(AssertUnwindSafe(|| {
            let _ =
                cfzero_export::lc0::read_lc0_file(&path.with_extension("pb.gz"), tch::Device::Cpu);
        }));
        assert!(
            imported.is_ok(),
            "fuzz target lc0 net: case {case} panicked"
        );
    }
}

#[test]
fn fuzz_training_data() {
    use std::io::Read;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let gz = std::fs::read(root.join("tests/data/lc0/v6/game_000003.gz")).unwrap();
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut raw)
        .unwrap();
    // Two records raw, and the same two gzipped: mutations hit every field and the framing.
    let two = raw[..2 * cfzero_trainer::lc0_v6::V6_RECORD_BYTES].to_vec();
    let two_gz =
        cfzero_trainer::lc0_v6::encode_chunk(&cfzero_trainer::lc0_v6::decode_chunk(&two).unwrap())
            .unwrap();
    fuzz("lc0 v6 chunk", &[two, two_gz], |bytes| {
        let _ = cfzero_trainer::lc0_v6::decode_chunk(bytes);
    });
    let pgn = std::fs::read(root.join("tests/data/pgn/lichess_sample.pgn")).unwrap();
    let short: Vec<u8> = pgn[..pgn.len().min(3000)].to_vec();
    fuzz("pgn training games", &[short], |bytes| {
        let _ = cfzero_trainer::source::pgn::parse_games(
            bytes,
            cfzero_trainer::source::pgn::PgnFilters::default(),
            usize::MAX,
        );
    });
}
