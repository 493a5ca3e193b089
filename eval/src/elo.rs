//! Elo arithmetic for match results: the logistic Elo of a score, its 95% interval from
//! game pairs, and a sequential probability ratio test (SPRT) to stop a match once decided.
//!
//! Each opening is played twice with colours reversed, and the two games of a pair are
//! strongly correlated (an unbalanced opening favours the same colour twice). Treating them
//! as independent overstates the uncertainty, so the interval and the SPRT use the score of
//! each *pair* (the pentanomial model of Fishtest) when pairs are available.

/// The z value of a two-sided 95% normal interval.
pub(crate) const Z95: f64 = 1.959_963_984_540_054;

/// The smallest per-unit variance the interval and the SPRT assume: a standard deviation of
/// 0.1, well under the 0.25 of pairs that differ by one draw, so that a run of identical
/// results does not decide on its own.
const VARIANCE_FLOOR: f64 = 0.01;

/// The logistic Elo difference that gives an expected `score` in [0, 1]: −400·log10(1/s − 1).
/// A score of 0 or 1 gives minus or plus infinity.
pub fn elo_from_score(score: f64) -> f64 {
    if score <= 0.0 {
        f64::NEG_INFINITY
    } else if score >= 1.0 {
        f64::INFINITY
    } else {
        -400.0 * (1.0 / score - 1.0).log10()
    }
}

/// An Elo number as a report prints it: with its sign, rounded, or `-inf`/`+inf` for a
/// shut-out.
pub fn signed_elo(elo: f64) -> String {
    if elo.is_infinite() {
        if elo > 0.0 { "+inf" } else { "-inf" }.into()
    } else {
        format!("{elo:+.0}")
    }
}

/// The expected score of a player `elo` points stronger: 1 / (1 + 10^(−elo/400)).
pub fn score_from_elo(elo: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-elo / 400.0))
}

/// Independent units of a match: the score of each completed game pair (in [0, 1], the mean
/// of its two games), or of single games where no pairs exist.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScoreSample {
    units: Vec<f64>,
}

impl ScoreSample {
    /// A sample of independent unit scores, each in [0, 1].
    pub fn new(units: Vec<f64>) -> ScoreSample {
        ScoreSample { units }
    }

    /// The number of units.
    pub fn len(&self) -> usize {
        self.units.len()
    }

    /// Whether there is no unit.
    pub fn is_empty(&self) -> bool {
        self.units.is_empty()
    }

    /// The mean unit score; 0.5 for no units.
    pub fn mean(&self) -> f64 {
        if self.units.is_empty() {
            return 0.5;
        }
        self.units.iter().sum::<f64>() / self.units.len() as f64
    }

    /// The population variance of the unit scores.
    pub fn variance(&self) -> f64 {
        if self.units.is_empty() {
            return 0.0;
        }
        let m = self.mean();
        self.units.iter().map(|u| (u - m) * (u - m)).sum::<f64>() / self.units.len() as f64
    }

    /// The 95% interval of the score: Wilson's score interval with the sample's draw effect.
    ///
    /// The plain normal interval (mean ± 1.96 standard errors) collapses at the boundary: 100
    /// won pairs have no spread and would give [1, 1], claiming certainty from a finite match.
    /// Wilson's interval takes the variance at the candidate score instead of at the estimate,
    /// which keeps it honest there (100 of 100 gives a low end of 100 / (100 + 1.96²) = 96.3%).
    /// Pairs and draws make units less spread than wins and losses of the same mean, so the
    /// binomial variance m(1 − m) is scaled by the observed share k = var / (m(1 − m)) ≤ 1:
    /// Wilson's formula with n / k effective units. The variance is floored at `VARIANCE_FLOOR`
    /// as in the SPRT (so all-drawn pairs still leave an interval), and k is 1 where m is 0 or 1
    /// (then this is exactly Wilson's binomial interval). Between 20% and 80% the result is
    /// within half a point of the normal interval, shifted toward 50%.
    pub fn score_interval(&self) -> (f64, f64) {
        if self.units.is_empty() {
            return (0.0, 1.0);
        }
        let m = self.mean();
        let binomial = m * (1.0 - m);
        let share = if binomial > 0.0 {
            (self.variance().max(VARIANCE_FLOOR) / binomial).min(1.0)
        } else {
            1.0
        };
        let n = self.units.len() as f64 / share;
        let z2 = Z95 * Z95;
        let centre = (m + z2 / (2.0 * n)) / (1.0 + z2 / n);
        let half = Z95 / (1.0 + z2 / n) * (binomial / n + z2 / (4.0 * n * n)).sqrt();
        ((centre - half).max(0.0), (centre + half).min(1.0))
    }

    /// The Elo difference of the mean score with its 95% interval (low, estimate, high).
    pub fn elo_interval(&self) -> (f64, f64, f64) {
        let (lo, hi) = self.score_interval();
        (
            elo_from_score(lo),
            elo_from_score(self.mean()),
            elo_from_score(hi),
        )
    }

    /// The log-likelihood ratio of H1 (Elo difference `elo1`) against H0 (`elo0`), in the
    /// normal approximation of the generalised SPRT: n·(s1 − s0)·(2·mean − s0 − s1) / (2·var).
    /// The variance is floored at `VARIANCE_FLOOR`, so that a few identical results do not
    /// decide a test on their own: two drawn pairs give −0.51 for [0, 50], twenty give −5.1.
    pub fn sprt_llr(&self, elo0: f64, elo1: f64) -> f64 {
        if self.units.is_empty() {
            return 0.0;
        }
        let s0 = score_from_elo(elo0);
        let s1 = score_from_elo(elo1);
        let var = self.variance().max(VARIANCE_FLOOR);
        self.units.len() as f64 * (s1 - s0) * (2.0 * self.mean() - s0 - s1) / (2.0 * var)
    }
}

/// The decision of an SPRT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SprtDecision {
    /// Keep playing.
    Continue,
    /// H0 accepted: the difference is at most `elo0`.
    H0,
    /// H1 accepted: the difference is at least `elo1`.
    H1,
}

/// An SPRT of Elo difference `elo0` against `elo1` with error rates `alpha` (false H1) and
/// `beta` (false H0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sprt {
    /// The Elo difference of the null hypothesis.
    pub elo0: f64,
    /// The Elo difference of the alternative.
    pub elo1: f64,
    /// The probability of accepting H1 when H0 holds.
    pub alpha: f64,
    /// The probability of accepting H0 when H1 holds.
    pub beta: f64,
}

impl Sprt {
    /// A test with the usual error rates of 5% each.
    pub fn new(elo0: f64, elo1: f64) -> Sprt {
        Sprt {
            elo0,
            elo1,
            alpha: 0.05,
            beta: 0.05,
        }
    }

    /// The lower and upper LLR bounds: ln(β/(1−α)) and ln((1−β)/α).
    pub fn bounds(&self) -> (f64, f64) {
        (
            (self.beta / (1.0 - self.alpha)).ln(),
            ((1.0 - self.beta) / self.alpha).ln(),
        )
    }

    /// The decision for `sample`, with its LLR.
    pub fn decide(&self, sample: &ScoreSample) -> (SprtDecision, f64) {
        let llr = sample.sprt_llr(self.elo0, self.elo1);
        let (lower, upper) = self.bounds();
        let decision = if llr >= upper {
            SprtDecision::H1
        } else if llr <= lower {
            SprtDecision::H0
        } else {
            SprtDecision::Continue
        };
        (decision, llr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn elo_and_score_are_inverse_at_known_points() {
        assert_eq!(elo_from_score(0.5), 0.0);
        // 10^(-x/400) = 1/3 at a score of 0.75: x = 400·log10(3) = 190.85.
        assert!((elo_from_score(0.75) - 190.848_501_887_864_9).abs() < 1e-9);
        assert!(close(score_from_elo(-190.848_501_887_864_9), 0.25));
        assert_eq!(elo_from_score(1.0), f64::INFINITY);
        assert_eq!(elo_from_score(0.0), f64::NEG_INFINITY);
        for s in [0.1, 0.3, 0.62, 0.97] {
            assert!(close(score_from_elo(elo_from_score(s)), s));
        }
    }

    /// Four pairs scoring 1, ½, ¾, ½, worked by hand: mean 0.6875, population variance
    /// 0.04296875, binomial variance 0.21484375, share k = 0.2, so Wilson with 20 units:
    /// centre (0.6875 + z²/40) / (1 + z²/20) = 0.6572890, half 0.1884925.
    #[test]
    fn interval_of_four_pairs_matches_the_hand_computation() {
        let s = ScoreSample::new(vec![1.0, 0.5, 0.75, 0.5]);
        assert_eq!(s.len(), 4);
        assert!(close(s.mean(), 0.6875));
        assert!(close(s.variance(), 0.042_968_75));
        let (lo, hi) = s.score_interval();
        assert!(
            close(lo, 0.468_796_498) && close(hi, 0.845_781_568),
            "{lo} {hi}"
        );
        let (elo_lo, elo, elo_hi) = s.elo_interval();
        assert!((elo - 136.969_072).abs() < 1e-5, "{elo}");
        assert!(elo_lo < elo && elo < elo_hi);
        assert!(close(elo_lo, elo_from_score(lo)) && close(elo_hi, elo_from_score(hi)));
    }

    /// Win/loss units are binomial: 8 of 10 gives the textbook Wilson interval
    /// [0.4902, 0.9433] (Newcombe 1998, table I).
    #[test]
    fn binary_units_give_the_wilson_interval() {
        let s = ScoreSample::new([vec![1.0; 8], vec![0.0; 2]].concat());
        let (lo, hi) = s.score_interval();
        assert!(
            (lo - 0.4902).abs() < 5e-5 && (hi - 0.9433).abs() < 5e-5,
            "{lo} {hi}"
        );
    }

    /// A clean sweep is not certainty: 100 won pairs give 100 / (100 + z²) = 0.9630 at the low
    /// end (Elo +566), not the normal interval's [1, 1]; one pair of ¾ among them keeps the
    /// interval off 1 above; all-drawn pairs keep a width from the variance floor.
    #[test]
    fn intervals_at_the_boundary_keep_a_width() {
        let sweep = ScoreSample::new(vec![1.0; 100]);
        let (lo, hi) = sweep.score_interval();
        assert!(
            close(lo, 100.0 / (100.0 + Z95 * Z95)) && hi == 1.0,
            "{lo} {hi}"
        );
        let (elo_lo, elo, _) = sweep.elo_interval();
        assert!(
            (elo_lo - 566.2).abs() < 0.1 && elo == f64::INFINITY,
            "{elo_lo}"
        );
        let losses = ScoreSample::new(vec![0.0; 100]);
        let (lo, hi) = losses.score_interval();
        assert!(
            close(lo, 0.0) && close(hi, 1.0 - 100.0 / (100.0 + Z95 * Z95)),
            "{lo} {hi}"
        );
        let one_short = ScoreSample::new([vec![1.0; 99], vec![0.75]].concat());
        let (lo, hi) = one_short.score_interval();
        assert!(
            close(lo, 0.958_335_929) && close(hi, 0.999_855_540),
            "{lo} {hi}"
        );
        let drawn = ScoreSample::new(vec![0.5; 20]);
        let (lo, hi) = drawn.score_interval();
        assert!(
            close(lo, 0.456_341_265) && close(hi, 0.543_658_735),
            "{lo} {hi}"
        );
    }

    /// Away from the boundary the interval is the normal one to a tenth of a point: 100 pairs,
    /// 20 won, 68 drawn or split, 12 at ¼ (mean 0.57, variance 0.0526).
    #[test]
    fn intervals_away_from_the_boundary_match_the_normal_interval() {
        let units = [vec![1.0; 20], vec![0.5; 68], vec![0.25; 12]].concat();
        let s = ScoreSample::new(units);
        let m = s.mean();
        let se = (s.variance() / s.len() as f64).sqrt();
        let (lo, hi) = s.score_interval();
        assert!((lo - (m - Z95 * se)).abs() < 1e-3, "{lo}");
        assert!((hi - (m + Z95 * se)).abs() < 1e-3, "{hi}");
    }

    /// LLR of [0, 50] on the same sample: s1 = 1 / (1 + 10^(−1/8)) = 0.5714631,
    /// 4 · 0.0714631 · (1.375 − 0.5 − 0.5714631) / (2 · 0.04296875) = 1.0096497.
    #[test]
    fn sprt_llr_and_bounds_match_the_hand_computation() {
        let s = ScoreSample::new(vec![1.0, 0.5, 0.75, 0.5]);
        let sprt = Sprt::new(0.0, 50.0);
        let (decision, llr) = sprt.decide(&s);
        assert!((llr - 1.009_649_66).abs() < 1e-6, "{llr}");
        assert_eq!(decision, SprtDecision::Continue);
        let (lower, upper) = sprt.bounds();
        assert!(close(lower, -2.944_438_979) && close(upper, 2.944_438_979));
    }

    #[test]
    fn sprt_decides_clear_results_and_not_an_even_one() {
        let sprt = Sprt::new(0.0, 50.0);
        let wins = ScoreSample::new(vec![1.0; 20]);
        assert_eq!(sprt.decide(&wins).0, SprtDecision::H1);
        let losses = ScoreSample::new(vec![0.0; 20]);
        assert_eq!(sprt.decide(&losses).0, SprtDecision::H0);
        // Drawn pairs (no spread: the variance floor of 0.01) lean to H0: two are not enough,
        // 2 · 0.0714631 · (1 − 1.0714631) / 0.02 = −0.5107, twenty are, −5.107.
        let (decision, llr) = sprt.decide(&ScoreSample::new(vec![0.5; 2]));
        assert!((llr + 0.510_698).abs() < 1e-5, "{llr}");
        assert_eq!(decision, SprtDecision::Continue);
        let (decision, llr) = sprt.decide(&ScoreSample::new(vec![0.5; 20]));
        assert!((llr + 5.106_98).abs() < 1e-4, "{llr}");
        assert_eq!(decision, SprtDecision::H0);
        assert_eq!(
            sprt.decide(&ScoreSample::default()),
            (SprtDecision::Continue, 0.0)
        );
    }
}
