//! Short-term value targets on hand-made sequences, checked against numbers worked out by
//! hand: `st[t] = (1 - theta) * root_q[t] - theta * st[t + 1]`, `st[n] = final_value`,
//! every value from the point of view of the side to move in its own position.

use cfzero_selfplay::targets::{SHORT_TERM_THETA, short_term_targets};

fn targets(root_q: &[f32], final_value: f32, theta: f32) -> Vec<f32> {
    let mut out = vec![123.0; 7]; // stale contents must not leak into the result
    short_term_targets(root_q, final_value, theta, &mut out);
    out
}

fn assert_close(got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (t, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!((f64::from(g) - w).abs() < 1e-6, "st[{t}] = {g}, want {w}");
    }
}

/// White mates on the third ply: plies 0 and 2 are White's, ply 1 is Black's, and the final
/// position has Black to move, mated: `final_value = -1`. theta = 5/6, 1 - theta = 1/6.
///
/// ```text
/// st[2] = 0.9/6  - (5/6)(-1)        = 3/20 + 5/6     = 59/60     =  0.983333…
/// st[1] = -0.4/6 - (5/6)(59/60)     = -1/15 - 59/72  = -319/360  = -0.886111…
/// st[0] = 0.2/6  - (5/6)(-319/360)  = 1/30 + 319/432 = 1667/2160 =  0.771759…
/// ```
/// Unrolled, `st[0] = 1/6 (0.2 + (5/6) 0.4 + (5/6)^2 0.9) + (5/6)^3 = 0.033333 + 0.055556
/// + 0.104167 + 0.578704 = 0.771759`: the weights 1/6, 5/36, 25/216, 125/216 sum to one.
#[test]
fn checkmate_with_the_production_theta() {
    assert!((SHORT_TERM_THETA - 5.0 / 6.0).abs() < 1e-7);
    let st = targets(&[0.2, -0.4, 0.9], -1.0, SHORT_TERM_THETA);
    assert_close(&st, &[1667.0 / 2160.0, -319.0 / 360.0, 59.0 / 60.0]);
}

/// Five plies ending in a draw (`final_value = 0`), theta = 1/2:
///
/// ```text
/// st[4] = 0.5(-0.2) - 0.5(0)      = -0.1
/// st[3] = 0.5(0.3)  - 0.5(-0.1)   =  0.15 + 0.05   =  0.2
/// st[2] = 0.5(0.0)  - 0.5(0.2)    = -0.1
/// st[1] = 0.5(-0.6) - 0.5(-0.1)   = -0.3 + 0.05    = -0.25
/// st[0] = 0.5(0.4)  - 0.5(-0.25)  =  0.2 + 0.125   =  0.325
/// ```
#[test]
fn draw_with_theta_one_half() {
    let st = targets(&[0.4, -0.6, 0.0, 0.3, -0.2], 0.0, 0.5);
    assert_close(&st, &[0.325, -0.25, -0.1, 0.2, -0.1]);
}

/// Black resigns after its own move (ply 3 is Black's): the final position has White to
/// move and White wins, `final_value = +1`. theta = 3/4:
///
/// ```text
/// st[3] = 0.25(-0.8) - 0.75(1)      = -0.2 - 0.75     = -0.95
/// st[2] = 0.25(0.6)  - 0.75(-0.95)  =  0.15 + 0.7125  =  0.8625
/// st[1] = 0.25(-0.2) - 0.75(0.8625) = -0.05 - 0.646875 = -0.696875
/// st[0] = 0.25(0.1)  - 0.75(-0.696875) = 0.025 + 0.52265625 = 0.54765625
/// ```
#[test]
fn resignation_with_theta_three_quarters() {
    let st = targets(&[0.1, -0.2, 0.6, -0.8], 1.0, 0.75);
    assert_close(&st, &[0.54765625, -0.696875, 0.8625, -0.95]);
}

/// The limits: theta = 0 keeps the search values; theta = 1 is the game's outcome from each
/// position's side to move (alternating signs back from the end); a search that already
/// knew the outcome at every ply gets its own values back for any theta.
#[test]
fn limits_and_a_consistent_game() {
    let q = [0.3, -0.7, 0.1, 0.5];
    assert_close(&targets(&q, -1.0, 0.0), &[0.3, -0.7, 0.1, 0.5]);
    // Four plies before a final position worth -1 to its mover: ply 3 sees +1, ply 2 -1, ...
    assert_close(&targets(&q, -1.0, 1.0), &[-1.0, 1.0, -1.0, 1.0]);
    let knew = [1.0, -1.0, 1.0, -1.0];
    for theta in [0.25, 0.5, SHORT_TERM_THETA] {
        assert_close(&targets(&knew, 1.0, theta), &[1.0, -1.0, 1.0, -1.0]);
    }
}

#[test]
fn an_empty_game_has_no_targets() {
    assert!(targets(&[], 1.0, SHORT_TERM_THETA).is_empty());
}
