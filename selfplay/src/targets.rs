//! Targets computed once a game is over.

/// Weight of the future in the short-term value: each ply further away counts 5/6 as much.
pub const SHORT_TERM_THETA: f32 = 5.0 / 6.0;

/// Short-term value targets of a game's positions.
///
/// `root_q[t]` is the search value of position `t` for its side to move; `final_value` is
/// the game's outcome for the side to move in the position after the last move (the
/// terminal one, or the resigned one). The target is an exponential moving average over
/// the future, each value turned to the point of view of position `t` (signs alternate):
/// `st[t] = (1 - theta) * root_q[t] + theta * (-st[t + 1])`, with `st[n] = final_value`.
/// Unrolled, `st[t]` weights ply `t + k` by `(1 - theta) theta^k` and the outcome by
/// `theta^(n - t)`, so the weights sum to one.
pub fn short_term_targets(root_q: &[f32], final_value: f32, theta: f32, out: &mut Vec<f32>) {
    out.clear();
    out.resize(root_q.len(), 0.0);
    let mut next = final_value;
    for t in (0..root_q.len()).rev() {
        let st = (1.0 - theta) * root_q[t] - theta * next;
        out[t] = st;
        next = st;
    }
}
