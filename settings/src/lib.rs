//! [`InvalidSetting`]: a config setting out of its range, or inconsistent with another. Every
//! crate that validates its own settings (search, optimiser, self-play, trainer) returns it, so
//! none of them depends on another for an error type. [`auto`]: counts a config may leave to
//! the machine.

pub mod auto;

/// A config setting out of its range, or inconsistent with another: the key (relative to its
/// table; dotted for a nested table) and why. Callers that know the file add the table's
/// name and the line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{key}` {reason}")]
pub struct InvalidSetting {
    /// The key, e.g. `simulations` or `lr.peak`.
    pub key: String,
    /// What is wrong with its value, e.g. `must be at least 1 (got 0)`.
    pub reason: String,
}

impl InvalidSetting {
    /// An error for `key`.
    pub fn new(key: impl Into<String>, reason: impl Into<String>) -> Self {
        InvalidSetting {
            key: key.into(),
            reason: reason.into(),
        }
    }

    /// The same error with `prefix.` before the key (for a nested table).
    pub fn within(self, prefix: &str) -> Self {
        InvalidSetting {
            key: format!("{prefix}.{}", self.key),
            ..self
        }
    }

    /// Checks that a share lies in [0, 1): where a share of 1 would leave nothing to the
    /// rest (every game held out, no position trained for its policy).
    pub fn below_one(key: &str, value: f64) -> Result<(), InvalidSetting> {
        if (0.0..1.0).contains(&value) {
            return Ok(());
        }
        Err(Self::new(key, format!("must be in [0, 1) (got {value})")))
    }

    /// Checks that an integer setting is at least `min`.
    pub fn at_least(key: &str, value: u64, min: u64) -> Result<(), InvalidSetting> {
        if value < min {
            return Err(Self::new(
                key,
                format!("must be at least {min} (got {value})"),
            ));
        }
        Ok(())
    }

    /// Checks that a float setting lies in `[lo, hi]` (`hi` may be infinite; NaN never
    /// passes). With `open_low`, `lo` itself is excluded.
    pub fn in_range(
        key: &str,
        value: f64,
        lo: f64,
        open_low: bool,
        hi: f64,
    ) -> Result<(), InvalidSetting> {
        let low_ok = if open_low { value > lo } else { value >= lo };
        // An infinite value is never meant, even where there is no upper bound: it turns
        // into NaN in the arithmetic that uses it.
        if low_ok && value <= hi && value.is_finite() {
            return Ok(());
        }
        let left = if open_low { '(' } else { '[' };
        let range = if hi.is_infinite() {
            if open_low && lo == 0.0 {
                "must be above 0".to_string()
            } else if lo == 0.0 {
                "must be 0 or more".to_string()
            } else {
                format!("must be in {left}{lo}, inf)")
            }
        } else {
            format!("must be in {left}{lo}, {hi}]")
        };
        Err(Self::new(key, format!("{range} (got {value})")))
    }
}
