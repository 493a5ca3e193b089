//! The wall-clock limit of a run (`--minutes`): a thread that sets the run's stop flag, the
//! one Ctrl-C sets, when the time is up. Self-play and training look at that flag after each
//! move and each step, so a run ends within seconds of its limit with only complete work
//! kept, just as after a Ctrl-C.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Result;
use crossbeam_channel::{RecvTimeoutError, Sender};

use crate::user_bail;

/// Checks a `--minutes` value: a positive, finite number of minutes (fractions allowed).
pub fn parse_minutes(minutes: f64) -> Result<Duration> {
    if !(minutes.is_finite() && minutes > 0.0) {
        user_bail!("--minutes {minutes}: expected a positive number of minutes, e.g. 0.5 or 60");
    }
    match Duration::try_from_secs_f64(minutes * 60.0) {
        Ok(limit) => Ok(limit),
        Err(_) => user_bail!("--minutes {minutes}: too large"),
    }
}

/// A running limit: sets the stop flag when it expires, unless it is dropped first (the
/// run ended on its own), which also ends its thread.
#[derive(Debug)]
pub struct Deadline {
    /// Dropping the sender wakes the thread and tells it to give up.
    cancel: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
    fired: Arc<AtomicBool>,
}

impl Deadline {
    /// Sets `stop` once `limit` has passed from now.
    pub fn start(limit: Duration, stop: Arc<AtomicBool>) -> Deadline {
        let (cancel, wait) = crossbeam_channel::bounded::<()>(0);
        let fired = Arc::new(AtomicBool::new(false));
        let flag = fired.clone();
        let thread = std::thread::Builder::new()
            .name("deadline".into())
            .spawn(move || {
                if wait.recv_timeout(limit) == Err(RecvTimeoutError::Timeout) {
                    flag.store(true, Ordering::SeqCst);
                    stop.store(true, Ordering::SeqCst);
                    eprintln!(
                        "\ntime limit of {} minutes reached: finishing cleanly (complete games are kept)",
                        limit.as_secs_f64() / 60.0
                    );
                }
            })
            .expect("spawning the deadline thread");
        Deadline {
            cancel: Some(cancel),
            thread: Some(thread),
            fired,
        }
    }

    /// Starts a limit of `minutes` when one is given (checked with [`parse_minutes`]).
    pub fn start_minutes(minutes: Option<f64>, stop: &Arc<AtomicBool>) -> Result<Option<Deadline>> {
        Ok(match minutes {
            Some(m) => Some(Deadline::start(parse_minutes(m)?, stop.clone())),
            None => None,
        })
    }

    /// Whether the limit expired (and set the stop flag).
    pub fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        drop(self.cancel.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_sets_the_flag_once_the_time_is_up() {
        let stop = Arc::new(AtomicBool::new(false));
        let deadline = Deadline::start(Duration::from_millis(20), stop.clone());
        std::thread::sleep(Duration::from_millis(500));
        assert!(stop.load(Ordering::SeqCst));
        assert!(deadline.fired());
    }

    #[test]
    fn a_dropped_deadline_sets_nothing_and_ends_its_thread() {
        let stop = Arc::new(AtomicBool::new(false));
        let started = std::time::Instant::now();
        let deadline = Deadline::start(Duration::from_secs(3600), stop.clone());
        assert!(!deadline.fired());
        drop(deadline);
        assert!(started.elapsed() < Duration::from_secs(60));
        assert!(!stop.load(Ordering::SeqCst));
    }

    #[test]
    fn minutes_must_be_positive_and_finite() {
        assert_eq!(parse_minutes(0.5).unwrap(), Duration::from_secs(30));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e300] {
            assert!(parse_minutes(bad).is_err(), "{bad}");
        }
    }
}
