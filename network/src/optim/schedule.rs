//! Learning-rate schedule: linear warmup, then step decay.

use cfzero_settings::InvalidSetting;
use serde::{Deserialize, Serialize};

/// `lr(step)` for 0-based `step`: during warmup `peak * (step + 1) / warmup_steps`, then
/// `peak * decay_factor^k` where k is the number of `decay_steps` boundaries `<= step`. A key
/// left out takes [`LrSchedule::default`]'s value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LrSchedule {
    /// Learning rate after warmup.
    pub peak: f64,
    /// Steps of linear warmup (0: none).
    pub warmup_steps: u64,
    /// Steps at which the rate is multiplied by `decay_factor` (ascending).
    pub decay_steps: Vec<u64>,
    /// Factor applied at each decay step.
    pub decay_factor: f64,
}

impl Default for LrSchedule {
    /// 0.001 after 100 steps of warmup, no decay.
    fn default() -> LrSchedule {
        LrSchedule {
            peak: 0.001,
            warmup_steps: 100,
            decay_steps: Vec::new(),
            decay_factor: 0.1,
        }
    }
}

impl LrSchedule {
    /// Checks the ranges: a positive, finite rate and factor, and decay steps in ascending
    /// order (the schedule counts the boundaries passed, so an unsorted list would decay
    /// at the wrong steps without any sign of it).
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        InvalidSetting::in_range("peak", self.peak, 0.0, true, f64::INFINITY)?;
        InvalidSetting::in_range("decay_factor", self.decay_factor, 0.0, true, f64::INFINITY)?;
        if let Some(w) = self.decay_steps.windows(2).find(|w| w[0] >= w[1]) {
            return Err(InvalidSetting::new(
                "decay_steps",
                format!("must be strictly ascending ({} then {})", w[0], w[1]),
            ));
        }
        Ok(())
    }

    /// The learning rate of (0-based) `step`.
    pub fn lr(&self, step: u64) -> f64 {
        if step < self.warmup_steps {
            return self.peak * (step + 1) as f64 / self.warmup_steps as f64;
        }
        let k = self.decay_steps.iter().filter(|&&b| b <= step).count();
        self.peak * self.decay_factor.powi(k as i32)
    }
}
