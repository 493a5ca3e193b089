//! Elo arithmetic for match results: the logistic Elo of a score, its 95% interval from
//! game pairs, and a sequential probability ratio test (SPRT) to stop a match once decided.
//!
//! Each opening is played twice with colours reversed, and the two games of a pair are
//! strongly correlated (an unbalanced opening favours the same colour twice). Treating them
//! as independent overstates the uncertainty, so the interval and the SPRT use the score of
//! each *pair* (the pentanomial model of Fishtest) when pairs are available.

/// The z value of a two-sided 95% normal interval.
const Z95: f64 = 1.959_963_984_540_054;

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

    /// The 95% interval of the score: mean ± 1.96 standard errors, clamped to [0, 1].
    pub fn score_interval(&self) -> (f64, f64) {
        let m = self.mean();
        if self.units.is_empty() {
            return (0.0, 1.0);
        }
        let se = (self.variance() / self.units.len() as f64).sqrt();
        ((m - Z95 * se).max(0.0), (m + Z95 * se).min(1.0))
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
    /// The variance is floored at 0.01 (a standard deviation of 0.1 per unit, well under the
    /// 0.25 of pairs that differ by one draw), so that a few identical results do not decide
    /// a test on their own: two drawn pairs give −0.51 for [0, 50], twenty give −5.1.
    pub fn sprt_llr(&self, elo0: f64, elo1: f64) -> f64 {
        if self.units.is_empty() {
            return 0.0;
        }
        let s0 = score_from_elo(elo0);
        let s1 = score_from_elo(elo1);
        let var = self.variance().max(0.01);
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
    /// 0.171875 / 4, standard error sqrt(0.04296875 / 4) = 0.1036445.
    #[test]
    fn interval_of_four_pairs_matches_the_hand_computation() {
        let s = ScoreSample::new(vec![1.0, 0.5, 0.75, 0.5]);
        assert_eq!(s.len(), 4);
        assert!(close(s.mean(), 0.6875));
        assert!(close(s.variance(), 0.042_968_75));
        let (lo, hi) = s.score_interval();
        assert!(
            close(lo, 0.484_360_464) && close(hi, 0.890_639_536),
            "{lo} {hi}"
        );
        let (elo_lo, elo, elo_hi) = s.elo_interval();
        assert!((elo - 136.969_072).abs() < 1e-5, "{elo}");
        assert!(elo_lo < elo && elo < elo_hi);
        assert!(close(elo_lo, elo_from_score(lo)) && close(elo_hi, elo_from_score(hi)));
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
