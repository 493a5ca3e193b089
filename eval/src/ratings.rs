//! Ratings of many players from the results of their games: the maximum-likelihood logistic
//! (Bradley–Terry) Elo, player 0 held at 0, with 95% intervals from the curvature of the
//! likelihood.
//!
//! A player who won (or lost) every game would have no finite estimate, so each pair of
//! consecutive players also gets [`PRIOR_DRAWS`] virtual draws, as BayesElo's prior does;
//! with tens of real games per pair it moves a rating by a few Elo at most.

use crate::elo::Z95;

/// Virtual draws between players `i` and `i + 1`.
pub const PRIOR_DRAWS: f64 = 1.0;

/// Elo per natural unit of the logistic: 400 / ln 10.
const ELO_UNIT: f64 = 400.0 / std::f64::consts::LN_10;

/// The games between two players: A's points (1 a win, ½ a draw) out of `games`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairResult {
    /// Player A.
    pub a: usize,
    /// Player B.
    pub b: usize,
    /// Games played.
    pub games: f64,
    /// A's points.
    pub points_a: f64,
}

/// A fitted rating.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rating {
    /// Elo relative to player 0.
    pub elo: f64,
    /// Half the width of the 95% interval (0 for player 0, the reference).
    pub margin: f64,
}

/// Fits ratings to `results` for `players` players (player 0 = 0 Elo).
pub fn fit_ratings(players: usize, results: &[PairResult]) -> Vec<Rating> {
    if players == 0 {
        return Vec::new();
    }
    let mut pairs: Vec<PairResult> = results
        .iter()
        .filter(|r| r.a != r.b && r.a < players && r.b < players && r.games > 0.0)
        .copied()
        .collect();
    pairs.extend((1..players).map(|i| PairResult {
        a: i - 1,
        b: i,
        games: PRIOR_DRAWS,
        points_a: PRIOR_DRAWS / 2.0,
    }));
    // Natural units; player 0 is fixed, so the free parameters are 1..players.
    let free = players - 1;
    let mut r = vec![0.0f64; players];
    let mut info = vec![0.0f64; free * free];
    let mut gradient = vec![0.0f64; free];
    for _ in 0..100 {
        curvature(&pairs, &r, &mut gradient, &mut info);
        let Some(step) = solve(&info, &gradient, free) else {
            break;
        };
        let mut largest = 0.0f64;
        for (i, s) in step.iter().enumerate() {
            // Damped: a Newton step of more than 2 units (870 Elo) is cut to 2.
            let s = s.clamp(-2.0, 2.0);
            r[i + 1] += s;
            largest = largest.max(s.abs());
        }
        if largest < 1e-10 {
            break;
        }
    }
    curvature(&pairs, &r, &mut gradient, &mut info);
    let variances = inverse_diagonal(&info, free);
    (0..players)
        .map(|i| Rating {
            elo: r[i] * ELO_UNIT,
            margin: if i == 0 {
                0.0
            } else {
                Z95 * variances[i - 1].max(0.0).sqrt() * ELO_UNIT
            },
        })
        .collect()
}

/// The gradient of the log-likelihood and its negated Hessian (the observed information),
/// over the free parameters.
fn curvature(pairs: &[PairResult], r: &[f64], gradient: &mut [f64], info: &mut [f64]) {
    let free = gradient.len();
    gradient.iter_mut().for_each(|g| *g = 0.0);
    info.iter_mut().for_each(|h| *h = 0.0);
    for p in pairs {
        let expected = 1.0 / (1.0 + (r[p.b] - r[p.a]).exp());
        let g = p.points_a - p.games * expected;
        let w = p.games * expected * (1.0 - expected);
        let (a, b) = (p.a.checked_sub(1), p.b.checked_sub(1));
        if let Some(a) = a {
            gradient[a] += g;
            info[a * free + a] += w;
        }
        if let Some(b) = b {
            gradient[b] -= g;
            info[b * free + b] += w;
        }
        if let (Some(a), Some(b)) = (a, b) {
            info[a * free + b] -= w;
            info[b * free + a] -= w;
        }
    }
}

/// Solves `m x = v` (`m` is `n x n`, row-major) by Gaussian elimination with partial
/// pivoting; `None` if `m` is singular.
fn solve(m: &[f64], v: &[f64], n: usize) -> Option<Vec<f64>> {
    let mut a = m.to_vec();
    let mut x = v.to_vec();
    for col in 0..n {
        let pivot =
            (col..n).max_by(|&i, &j| a[i * n + col].abs().total_cmp(&a[j * n + col].abs()))?;
        if a[pivot * n + col].abs() < 1e-12 {
            return None;
        }
        for k in 0..n {
            a.swap(col * n + k, pivot * n + k);
        }
        x.swap(col, pivot);
        for row in col + 1..n {
            let f = a[row * n + col] / a[col * n + col];
            for k in col..n {
                a[row * n + k] -= f * a[col * n + k];
            }
            x[row] -= f * x[col];
        }
    }
    for col in (0..n).rev() {
        let tail: f64 = (col + 1..n).map(|k| a[col * n + k] * x[k]).sum();
        x[col] = (x[col] - tail) / a[col * n + col];
    }
    Some(x)
}

/// The diagonal of `m`'s inverse (variances when `m` is the information).
fn inverse_diagonal(m: &[f64], n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let mut unit = vec![0.0; n];
            unit[i] = 1.0;
            solve(m, &unit, n).map_or(f64::INFINITY, |x| x[i])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elo::score_from_elo;

    /// Results with exactly the expected score of `truth` for `games` games per pair.
    fn ideal(truth: &[f64], pairs: &[(usize, usize)], games: f64) -> Vec<PairResult> {
        pairs
            .iter()
            .map(|&(a, b)| PairResult {
                a,
                b,
                games,
                points_a: games * score_from_elo(truth[a] - truth[b]),
            })
            .collect()
    }

    #[test]
    fn known_ratings_are_recovered_from_ideal_results() {
        let truth = [0.0, 120.0, 200.0, 450.0, 430.0];
        let pairs = [(1, 0), (2, 1), (3, 2), (4, 3), (2, 0), (4, 0), (3, 1)];
        let fit = fit_ratings(5, &ideal(&truth, &pairs, 10_000.0));
        for (f, t) in fit.iter().zip(truth) {
            assert!((f.elo - t).abs() < 1.0, "{} for {t}", f.elo);
        }
        assert_eq!(fit[0].margin, 0.0);
        // More games, narrower intervals: 100 times the games, a tenth of the margin.
        let few = fit_ratings(5, &ideal(&truth, &pairs, 100.0));
        let ratio = few[3].margin / fit[3].margin;
        assert!((ratio - 10.0).abs() < 0.5, "{ratio}");
    }

    /// Two players, n games at score s: the fit is the Elo of the score (moved by the prior
    /// draw), and the margin is 1.96 / sqrt(n s (1 − s)) natural units.
    #[test]
    fn two_players_match_the_closed_form() {
        let n = 400.0;
        let results = [PairResult {
            a: 1,
            b: 0,
            games: n,
            points_a: 300.0,
        }];
        let fit = fit_ratings(2, &results);
        // With the prior: 300.5 points of 401 games.
        let s: f64 = 300.5 / 401.0;
        let elo = -400.0 * (1.0 / s - 1.0).log10();
        assert!((fit[1].elo - elo).abs() < 1e-6, "{} vs {elo}", fit[1].elo);
        let margin = 1.959_963_984_540_054 / (401.0 * s * (1.0 - s)).sqrt() * ELO_UNIT;
        assert!((fit[1].margin - margin).abs() < 1e-6);
    }

    #[test]
    fn a_clean_sweep_stays_finite_and_no_games_means_wide_intervals() {
        let results = [PairResult {
            a: 1,
            b: 0,
            games: 20.0,
            points_a: 20.0,
        }];
        let fit = fit_ratings(3, &results);
        assert!(
            fit[1].elo.is_finite() && fit[1].elo > 400.0,
            "{}",
            fit[1].elo
        );
        // Player 2 only has the prior draw with player 1.
        assert!((fit[2].elo - fit[1].elo).abs() < 1e-6);
        assert!(fit[2].margin > fit[1].margin);
        assert!(fit_ratings(0, &[]).is_empty());
    }
}
