//! A measure over replicate training runs: its mean with a 95% interval from Student's t.
//!
//! Training runs of one setting differ by more than one match's interval says: the interval
//! of a match covers the games of one net, not the spread of the training that made it. So a
//! setting is judged by the mean of several runs, and two settings by the mean difference of
//! paired runs (run `i` of each with the same seed, one after the other), each with the t
//! interval of `n - 1` degrees of freedom.

/// Two-sided 95% quantiles of Student's t for 1 to 30 degrees of freedom.
const T95: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// The two-sided 95% quantile of Student's t with `df` degrees of freedom (at least 1): a table
/// to 30, then 1.96 + 2.4 / df (within 0.2% of the quantile). A table of thirty constants
/// is less than a statistics crate for one quantile.
pub fn t95(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => T95[df - 1],
        _ => 1.96 + 2.4 / df as f64,
    }
}

/// The mean of `values` with its 95% interval, `(low, mean, high)`: mean ± t95(n - 1) times the
/// standard error of the sample. Unbounded for one value; `None` for none.
pub fn mean_interval(values: &[f64]) -> Option<(f64, f64, f64)> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return Some((f64::NEG_INFINITY, mean, f64::INFINITY));
    }
    let variance = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1) as f64;
    let half = t95(n - 1) * (variance / n as f64).sqrt();
    Some((mean - half, mean, mean + half))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_match_the_table_and_approach_the_normal() {
        assert_eq!(t95(1), 12.706);
        assert_eq!(t95(2), 4.303);
        assert_eq!(t95(30), 2.042);
        // 2.021 at 40, 2.000 at 60, 1.980 at 120 degrees of freedom.
        for (df, t) in [(40, 2.021), (60, 2.000), (120, 1.980)] {
            assert!((t95(df) - t).abs() < 0.004, "{df}: {}", t95(df));
        }
        assert!(t95(0).is_infinite());
    }

    #[test]
    fn the_interval_of_three_runs_is_the_t_interval() {
        // Mean 2, sample standard deviation 1, standard error 1/sqrt(3), t(2) = 4.303.
        let (lo, mean, hi) = mean_interval(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(mean, 2.0);
        let half = 4.303 / 3f64.sqrt();
        assert!((hi - mean - half).abs() < 1e-12 && (mean - lo - half).abs() < 1e-12);
        // Identical runs: no spread.
        assert_eq!(mean_interval(&[0.5, 0.5]), Some((0.5, 0.5, 0.5)));
        let (lo, mean, hi) = mean_interval(&[0.3]).unwrap();
        assert_eq!(mean, 0.3);
        assert!(lo.is_infinite() && hi.is_infinite());
        assert_eq!(mean_interval(&[]), None);
    }
}
