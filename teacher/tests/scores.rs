//! The teacher's arithmetic against known answers: Lichess's win-probability formula at
//! hand-computed points and `info` lines as Stockfish prints them (the label files' own tests
//! are the `cfzero-labels` crate's).

use cfzero_teacher::info::parse_info;
use cfzero_teacher::{EngineScore, MoveValue};

/// `1 / (1 + exp(-0.00368208 cp))`, computed by hand (Python's `math.exp`, double
/// precision) for these scores.
#[test]
fn centipawns_and_mates_become_win_probabilities() {
    for (cp, want) in [
        (100, 0.591_025_897_191_612_8),
        (-250, 0.284_851_952_563_759_7),
        (0, 0.5),
        (31, 0.528_505_177_311_813_1),
    ] {
        let got = EngineScore::Cp(cp).win_probability();
        assert!((f64::from(got) - want).abs() < 1e-6, "cp {cp}: {got}");
    }
    assert_eq!(EngineScore::Mate(3).win_probability(), 1.0);
    assert_eq!(EngineScore::Mate(-1).win_probability(), 0.0);
    assert_eq!(EngineScore::Mate(0).win_probability(), 0.0);
    // The engine's W/D/L is the position's W/D/L; the move's action value is its score's
    // win probability whatever W/D/L came with it (-300 cp: 0.2489 by hand, where the W/D/L's
    // expected score would be 0.65).
    let v = MoveValue {
        score: EngineScore::Cp(-300),
        wdl: Some([400, 500, 100]),
    };
    assert_eq!(v.wdl(), [0.4, 0.5, 0.1]);
    assert!((f64::from(v.action_value()) - 0.248_874_499_061_651_6).abs() < 1e-6);
    // Stockfish's W/D/L is 1000/0/0 both seven and twelve pawns up; the action values differ.
    let won = |cp| MoveValue {
        score: EngineScore::Cp(cp),
        wdl: Some([1000, 0, 0]),
    };
    assert_eq!(won(700).wdl(), won(1200).wdl());
    assert!(won(1200).action_value() - won(700).action_value() > 0.05);
    let v = MoveValue {
        score: EngineScore::Cp(100),
        wdl: None,
    };
    let [w, d, l] = v.wdl();
    assert!((w - 0.591_026).abs() < 1e-6 && d == 0.0 && (l - 0.408_974).abs() < 1e-6);
}

#[test]
fn info_lines_as_engines_print_them() {
    let sf = "info depth 12 seldepth 16 multipv 3 score cp -27 wdl 31 905 64 nodes 52311 nps 871850 hashfull 18 tbhits 0 time 60 pv g1f3 d7d5 d2d4";
    let i = parse_info(sf).unwrap();
    assert_eq!((i.depth, i.multipv, i.first_move.as_str()), (12, 3, "g1f3"));
    assert_eq!(i.value.score, EngineScore::Cp(-27));
    assert_eq!(i.value.wdl, Some([31, 905, 64]));
    let i = parse_info("info depth 5 score mate -2 pv e8d8 a1a8").unwrap();
    assert_eq!(
        (i.multipv, i.value.score, i.value.wdl),
        (1, EngineScore::Mate(-2), None)
    );
    // Bounds are no value; lines without a score or a pv, strings and junk are nothing.
    for line in [
        "info depth 9 multipv 1 score cp 40 lowerbound nodes 10 pv e2e4",
        "info depth 9 multipv 1 score cp 40 upperbound pv e2e4",
        "info depth 9 currmove e2e4 currmovenumber 1",
        "info string NNUE evaluation using nn-ad9b42354671.nnue enabled",
        "info depth x score cp 1 pv e2e4",
        "info depth 3 score cp pv e2e4",
        "info depth 3 score cp 5 wdl 1 2 pv e2e4",
        "bestmove e2e4",
        "",
    ] {
        assert_eq!(parse_info(line), None, "{line}");
    }
}
