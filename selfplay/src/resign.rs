//! Resignation: when a side gives up, and how the threshold is calibrated so that the
//! share of wrong resignations stays under a target.
//!
//! A side resigns when the value of its best move ([`SearchResult::best_q`]) has been
//! below the threshold on `K` consecutive full searches of its own moves (cheap searches
//! neither count nor break the streak: their values are too noisy), or at once when the
//! search proves its loss. The root's mean value is not used: sequential halving spends
//! many simulations on single visits to weak moves, which drags the mean down in
//! positions that are fine.
//!
//! Calibration (as Lc0 and KataGo do, with games that play on past a would-be
//! resignation): for each side of such a playthrough game, its *resign score* is the
//! lowest threshold that would not have made it resign, the minimum over windows of `K`
//! consecutive full searches of the window's largest value. At threshold `t` the side
//! would have resigned iff its score is below `t`; that resignation is a false positive if
//! the side did not lose. [`ResignCalibration::threshold`] picks the highest threshold
//! whose measured false-positive rate is within the target.
//!
//! [`SearchResult::best_q`]: cfzero_mcts::search::SearchResult::best_q

use std::collections::VecDeque;

use shakmaty::Color;

/// The thresholds calibration chooses from are `k / 100` for `k` in this range: -0.99 to
/// -0.60. Above -0.6, resigning in positions that are merely bad would cut the games that
/// teach the net to defend.
const GRID_HUNDREDTHS: std::ops::RangeInclusive<i32> = -99..=-60;
/// The highest threshold calibration will ever choose.
pub const MAX_CALIBRATED_THRESHOLD: f32 = -0.6;
/// The lowest threshold calibration will choose.
const GRID_LOW: f32 = -0.99;
/// Would-be resignations needed before a threshold's false-positive rate is trusted.
pub const MIN_SAMPLES: usize = 20;
/// Playthrough sides kept for calibration (the newest).
const KEPT_SAMPLES: usize = 4000;

/// The resignation state of one game: for each side, its last `K` full-search values
/// and its resign score so far.
#[derive(Debug, Clone)]
pub struct ResignTracker {
    consecutive: usize,
    /// Last values of each side (White, Black), newest last, at most `consecutive`.
    recent: [VecDeque<f32>; 2],
    /// Each side's resign score so far (`+inf` until `consecutive` values were seen).
    score: [f32; 2],
}

fn side(c: Color) -> usize {
    match c {
        Color::White => 0,
        Color::Black => 1,
    }
}

impl ResignTracker {
    /// A tracker that needs `consecutive` (at least 1) low values in a row.
    pub fn new(consecutive: u32) -> Self {
        let k = consecutive.max(1) as usize;
        ResignTracker {
            consecutive: k,
            recent: [VecDeque::with_capacity(k), VecDeque::with_capacity(k)],
            score: [f32::INFINITY; 2],
        }
    }

    /// Records the best-move value of a full search of `mover`'s move.
    pub fn observe(&mut self, mover: Color, best_q: f32) {
        let s = side(mover);
        let recent = &mut self.recent[s];
        if recent.len() == self.consecutive {
            recent.pop_front();
        }
        recent.push_back(best_q);
        if recent.len() == self.consecutive {
            let window_max = recent.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            self.score[s] = self.score[s].min(window_max);
        }
    }

    /// Whether `mover` resigns at `threshold` now: its last `K` full-search values are all
    /// below it.
    pub fn wants_to_resign(&self, mover: Color, threshold: f32) -> bool {
        let recent = &self.recent[side(mover)];
        recent.len() == self.consecutive && recent.iter().all(|&v| v < threshold)
    }

    /// `mover`'s resign score: the lowest threshold at which it would never have resigned
    /// so far (`+inf` before `K` full searches).
    pub fn score(&self, mover: Color) -> f32 {
        self.score[side(mover)]
    }
}

/// One side of a playthrough game, for calibration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResignSample {
    /// The side's resign score ([`ResignTracker::score`]).
    pub score: f32,
    /// Whether the side lost the game (a resignation would have been right).
    pub lost: bool,
}

/// The result of a calibration: the threshold and what was measured at it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibrated {
    /// The threshold to use next.
    pub threshold: f32,
    /// Playthrough sides that would have resigned at it.
    pub would_resign: usize,
    /// Of those, the sides that did not lose.
    pub false_positives: usize,
    /// Playthrough sides measured in all.
    pub samples: usize,
}

impl Calibrated {
    /// The measured false-positive rate at the threshold (0 without would-be resignations).
    pub fn false_positive_rate(&self) -> f64 {
        if self.would_resign == 0 {
            0.0
        } else {
            self.false_positives as f64 / self.would_resign as f64
        }
    }
}

/// The newest playthrough samples of a run and the threshold they justify.
#[derive(Debug, Clone, Default)]
pub struct ResignCalibration {
    samples: VecDeque<ResignSample>,
}

impl ResignCalibration {
    /// An empty calibration.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds samples, forgetting the oldest beyond the newest few thousand (the net, and
    /// with it the meaning of its values, changes over a run).
    pub fn extend(&mut self, samples: impl IntoIterator<Item = ResignSample>) {
        for s in samples {
            if self.samples.len() == KEPT_SAMPLES {
                self.samples.pop_front();
            }
            self.samples.push_back(s);
        }
    }

    /// Samples held.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether no sample is held.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Would-be resignations and false positives at `threshold`.
    fn measure(&self, threshold: f32) -> (usize, usize) {
        let resigned = self.samples.iter().filter(|s| s.score < threshold);
        resigned.fold((0, 0), |(n, fp), s| (n + 1, fp + usize::from(!s.lost)))
    }

    /// The highest threshold on a grid of hundredths from -0.99 up to
    /// [`MAX_CALIBRATED_THRESHOLD`] whose false-positive rate is at most `target`, among
    /// those with at least [`MIN_SAMPLES`] would-be resignations. Where no threshold has
    /// that many, the evidence is too thin to move: `current` stays, unless its own
    /// measured rate (with any samples at all) is over the target, in which case the
    /// highest threshold below it that is within the target (or -0.99) is taken.
    pub fn threshold(&self, current: f32, target: f64) -> Calibrated {
        let at = |threshold: f32| {
            let (would_resign, false_positives) = self.measure(threshold);
            Calibrated {
                threshold,
                would_resign,
                false_positives,
                samples: self.samples.len(),
            }
        };
        // Exact hundredths, so that a threshold equals the literal it stands for.
        let grid = GRID_HUNDREDTHS.rev().map(|k| k as f32 / 100.0);
        let trusted = grid
            .clone()
            .map(at)
            .find(|c| c.would_resign >= MIN_SAMPLES && c.false_positive_rate() <= target);
        if let Some(c) = trusted {
            return c;
        }
        let here = at(current);
        if here.false_positive_rate() <= target {
            return here;
        }
        grid.filter(|&t| t < current)
            .map(at)
            .find(|c| c.false_positive_rate() <= target)
            .unwrap_or_else(|| at(GRID_LOW))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_resigns_only_after_k_low_values_in_a_row() {
        let mut t = ResignTracker::new(3);
        for v in [-0.99, -0.99] {
            t.observe(Color::White, v);
            assert!(!t.wants_to_resign(Color::White, -0.95));
        }
        // Black's values do not count for White.
        t.observe(Color::Black, -0.99);
        assert!(!t.wants_to_resign(Color::White, -0.95));
        t.observe(Color::White, -0.98);
        assert!(t.wants_to_resign(Color::White, -0.95));
        assert!(!t.wants_to_resign(Color::Black, -0.95));
        // One value above the threshold breaks the streak.
        t.observe(Color::White, -0.5);
        assert!(!t.wants_to_resign(Color::White, -0.95));
    }

    #[test]
    fn the_score_is_the_lowest_window_maximum() {
        let mut t = ResignTracker::new(2);
        assert_eq!(t.score(Color::White), f32::INFINITY);
        for v in [-0.2, -0.9, -0.97, -0.5, -0.99] {
            t.observe(Color::White, v);
        }
        // Windows: (-0.2,-0.9) -> -0.2, (-0.9,-0.97) -> -0.9, (-0.97,-0.5) -> -0.5,
        // (-0.5,-0.99) -> -0.5: the side resigns at any threshold above -0.9.
        assert_eq!(t.score(Color::White), -0.9);
        assert!(t.wants_to_resign(Color::White, 0.0));
        assert!(!t.wants_to_resign(Color::White, -0.6));
    }

    fn samples(list: &[(f32, bool)]) -> ResignCalibration {
        let mut c = ResignCalibration::new();
        c.extend(
            list.iter()
                .map(|&(score, lost)| ResignSample { score, lost }),
        );
        c
    }

    #[test]
    fn calibration_takes_the_highest_threshold_within_the_target() {
        // 40 sides that lost with scores -0.98.. and 2 that did not, at -0.85 and -0.70.
        let mut list: Vec<(f32, bool)> =
            (0..40).map(|i| (-0.98 + 0.005 * i as f32, true)).collect();
        list.push((-0.85, false));
        list.push((-0.70, false));
        let c = samples(&list);
        // Scores of the losers reach -0.785; at t in (-0.85, -0.70] one false positive in
        // 41 (2.4%) is within 5%, and at t > -0.70 two in 42 (4.8%) still are.
        let got = c.threshold(-0.95, 0.05);
        assert!(
            (got.threshold - MAX_CALIBRATED_THRESHOLD).abs() < 1e-6,
            "{got:?}"
        );
        assert_eq!(got.false_positives, 2);
        assert_eq!(got.would_resign, 42);
        // With a 2% target only thresholds at or below -0.85 qualify.
        let got = c.threshold(-0.95, 0.02);
        assert!((got.threshold - -0.85).abs() < 1e-6, "{got:?}");
        assert_eq!(got.false_positives, 0);
        assert_eq!(got.would_resign, 26);
    }

    #[test]
    fn thin_evidence_keeps_the_current_threshold_unless_it_is_wrong() {
        let c = samples(&[(-0.99, true), (-0.98, true)]);
        assert_eq!(c.threshold(-0.95, 0.05).threshold, -0.95);
        // A false positive at the current threshold lowers it below that side's score.
        let c = samples(&[(-0.99, true), (-0.97, false)]);
        let got = c.threshold(-0.95, 0.05);
        assert!(got.threshold <= -0.97 + 1e-6, "{got:?}");
        assert_eq!(got.false_positives, 0);
        assert!(ResignCalibration::new().is_empty());
    }
}
