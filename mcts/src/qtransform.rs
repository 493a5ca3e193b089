//! From a node's children to `sigma(completedQ)`: the value term that the Gumbel search adds
//! to the logits, at the root and below it.
//!
//! completedQ(a) is the Q of a visited action and `v_mix` for an unvisited one; it is then
//! mapped to [0, 1] ([`QNormalization`]) and scaled by `(c_visit + max_b N(b)) * c_scale`.

use crate::config::{QNormalization, SearchConfig};
use crate::tree::{NodeId, Tree};

/// Values closer than this count as equal when rescaling by min and max.
const MIN_RANGE: f32 = 1e-8;

/// `v_mix` of `node`: its network value mixed with the prior-weighted Q of its visited
/// children, `(v + N * sum_visited(p * q) / sum_visited(p)) / (1 + N)`, N = sum of child visits.
pub fn v_mix<M: Copy>(tree: &Tree<M>, node: NodeId) -> f32 {
    let n = &tree.nodes[node as usize];
    let mut visits = 0u64;
    let mut weighted = 0.0f64;
    let mut weight = 0.0f64;
    for e in n.edge_range() {
        if let Some(child) = tree.child(e).filter(|c| c.visits > 0) {
            visits += u64::from(child.visits);
            let p = f64::from(tree.edges[e].prior);
            weighted += p * -f64::from(child.value());
            weight += p;
        }
    }
    if visits == 0 || weight <= 0.0 {
        // Without visited children (or if their priors vanished) only the network speaks.
        return n.raw_value;
    }
    let visits = visits as f64;
    ((f64::from(n.raw_value) + visits * weighted / weight) / (1.0 + visits)) as f32
}

/// Writes `sigma(completedQ(a))` for every edge of `node` to `out` (in edge order) and
/// returns the largest child visit count.
pub fn sigma_completed_q<M: Copy>(
    tree: &Tree<M>,
    node: NodeId,
    config: &SearchConfig,
    out: &mut Vec<f32>,
) -> u32 {
    out.clear();
    let n = &tree.nodes[node as usize];
    let mix = v_mix(tree, node);
    let mut max_visits = 0;
    for e in n.edge_range() {
        max_visits = max_visits.max(tree.edge_visits(e));
        out.push(tree.edge_q(e).unwrap_or(mix));
    }
    normalize(out, config.q_normalization, config.q_range_floor);
    let scale = (config.c_visit + max_visits as f32) * config.c_scale;
    for q in out.iter_mut() {
        *q *= scale;
    }
    max_visits
}

/// Maps Q values in [-1, 1] to [0, 1] in place; under min-max a spread below `floor` is
/// divided by `floor` instead ([`SearchConfig::q_range_floor`]).
pub fn normalize(q: &mut [f32], mode: QNormalization, floor: f32) {
    match mode {
        QNormalization::Fixed => q.iter_mut().for_each(|x| *x = (*x + 1.0) / 2.0),
        QNormalization::MinMax => {
            let lo = q.iter().copied().fold(f32::INFINITY, f32::min);
            let hi = q.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let range = (hi - lo).max(floor).max(MIN_RANGE);
            q.iter_mut().for_each(|x| *x = (*x - lo) / range);
        }
    }
}

/// Softmax of `logits + sigma` into `out` (the improved policy pi').
pub fn improved_policy(logits: impl Iterator<Item = f32>, sigma: &[f32], out: &mut Vec<f32>) {
    out.clear();
    out.extend(logits.zip(sigma).map(|(l, s)| l + s));
    softmax_in_place(out);
}

/// Softmax in place; the maximum is subtracted first so that large sigma cannot overflow.
pub fn softmax_in_place(x: &mut [f32]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut total = 0.0;
    for v in x.iter_mut() {
        *v = (*v - max).exp();
        total += *v;
    }
    for v in x.iter_mut() {
        *v /= total;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::Terminal;

    /// A root with three moves (priors 0.5, 0.25, 0.25), network value 0.2; the first child
    /// visited twice with mean 0.5 for the child (Q = -0.5), the second never.
    fn small_tree() -> Tree<u8> {
        let mut tree = Tree::new();
        tree.reset();
        let ln2 = std::f32::consts::LN_2;
        tree.expand(0, &[0, 1, 2], &[ln2, 0.0, 0.0], 0.2);
        tree.nodes[0].visits = 1;
        let c = tree.add_child(0);
        tree.nodes[c as usize].visits = 2;
        tree.nodes[c as usize].value_sum = 1.0;
        let t = tree.add_child(2);
        tree.set_terminal(t, Terminal::Loss);
        tree.nodes[t as usize].visits = 1;
        tree.nodes[t as usize].value_sum = -1.0;
        tree
    }

    #[test]
    fn v_mix_by_hand() {
        let tree = small_tree();
        // Visited: a0 (p 0.5, q -0.5, 2 visits) and a2 (p 0.25, q 1, 1 visit).
        // weighted q = (0.5 * -0.5 + 0.25 * 1) / 0.75 = 0; v_mix = (0.2 + 3 * 0) / 4 = 0.05.
        assert!((v_mix(&tree, 0) - 0.05).abs() < 1e-6);
    }

    #[test]
    fn sigma_by_hand() {
        let tree = small_tree();
        let mut out = Vec::new();
        let config = SearchConfig {
            q_normalization: QNormalization::MinMax,
            ..SearchConfig::default()
        };
        let max = sigma_completed_q(&tree, 0, &config, &mut out);
        assert_eq!(max, 2);
        // completed q = [-0.5, 0.05, 1]; minmax -> [0, 0.55 / 1.5, 1]; scale (50 + 2) * 0.1.
        let scale = 5.2;
        let expected = [0.0, 0.55 / 1.5 * scale, scale];
        for (a, b) in out.iter().zip(expected) {
            assert!((a - b).abs() < 1e-5, "{out:?}");
        }
        let fixed = SearchConfig {
            q_normalization: QNormalization::Fixed,
            ..config
        };
        sigma_completed_q(&tree, 0, &fixed, &mut out);
        let expected = [0.25 * scale, 0.525 * scale, scale];
        for (a, b) in out.iter().zip(expected) {
            assert!((a - b).abs() < 1e-5, "{out:?}");
        }
    }

    #[test]
    fn a_range_floor_keeps_a_small_spread_small() {
        // completed q = [-0.5, 0.05, 1] as above: a spread of 1.5.
        let tree = small_tree();
        let sigma = |q_range_floor| {
            let config = SearchConfig {
                q_range_floor,
                ..SearchConfig::default()
            };
            let mut out = Vec::new();
            sigma_completed_q(&tree, 0, &config, &mut out);
            out
        };
        let scale = 5.2;
        // A floor below the spread changes nothing.
        assert_eq!(sigma(1.0), sigma(0.0));
        // A floor of 2: divided by 2, as fixed bounds, up to a constant.
        let floored = sigma(2.0);
        let expected = [0.0, 0.55 / 2.0 * scale, 1.5 / 2.0 * scale];
        for (a, b) in floored.iter().zip(expected) {
            assert!((a - b).abs() < 1e-5, "{floored:?}");
        }
        let fixed = {
            let config = SearchConfig {
                q_normalization: QNormalization::Fixed,
                ..SearchConfig::default()
            };
            let mut out = Vec::new();
            sigma_completed_q(&tree, 0, &config, &mut out);
            out
        };
        for (f, x) in floored.iter().zip(&fixed) {
            assert!(
                (x - f - fixed[0]).abs() < 1e-5,
                "{floored:?} against {fixed:?}"
            );
        }
        // Flat values stay flat at any floor.
        let mut flat = [0.3f32, 0.3, 0.3];
        normalize(&mut flat, QNormalization::MinMax, 0.1);
        assert_eq!(flat, [0.0, 0.0, 0.0]);
        // A spread of 0.02 under a floor of 0.1: a fifth of the scale, not all of it.
        let mut close = [0.0f32, 0.01, 0.02];
        normalize(&mut close, QNormalization::MinMax, 0.1);
        for (a, b) in close.iter().zip([0.0, 0.1, 0.2]) {
            assert!((a - b).abs() < 1e-5, "{close:?}");
        }
        // Past the range of a value, or below 0, it is refused.
        for bad in [-0.1f32, 2.5, f32::NAN] {
            let config = SearchConfig {
                q_range_floor: bad,
                ..SearchConfig::default()
            };
            let err = config.validate().unwrap_err().to_string();
            assert!(err.contains("q_range_floor"), "{bad}: {err}");
        }
    }

    #[test]
    fn softmax_sums_to_one_with_huge_inputs() {
        let mut x = vec![1000.0, 999.0, -1000.0];
        softmax_in_place(&mut x);
        assert!((x.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(x[0] > x[1] && x[1] > x[2]);
    }
}
