//! Progress bars: counts with rates and ETA, and a message for live statistics.
//!
//! On a terminal they are drawn in place. When stderr is not a terminal (a log file, a pipe,
//! a job scheduler) a bar cannot be drawn, so a plain line with the same figures is printed
//! every [`plain_interval`] instead, for as long as the bar lives: long work speaks even when
//! nobody watches it.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The environment variable that sets the seconds between plain progress lines.
pub const PLAIN_INTERVAL_VAR: &str = "CFZERO_PROGRESS_SECONDS";

/// Seconds between plain progress lines when stderr is not a terminal: 30, or
/// [`PLAIN_INTERVAL_VAR`].
pub fn plain_interval() -> Duration {
    std::env::var(PLAIN_INTERVAL_VAR)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(Duration::from_secs(30), Duration::from_secs_f64)
}

/// A bar of `len` units named `unit`, drawn on stderr (or told in plain lines, see the
/// module docs).
pub fn bar(len: u64, prefix: &str, unit: &str) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr_with_hz(4));
    let template = format!(
        "{{prefix:>9}} [{{bar:30}}] {{pos}}/{{len}} {unit} ({{per_sec}}, ETA {{eta}}) {{msg}}"
    );
    pb.set_style(
        ProgressStyle::with_template(&template)
            .expect("a valid template")
            .progress_chars("=> "),
    );
    pb.set_prefix(prefix.to_string());
    if !std::io::stderr().is_terminal() {
        let unit = unit.to_owned();
        plain_lines(&pb, move |pb| {
            let len = pb.length().unwrap_or(0);
            let rate = pb.per_sec();
            let eta = if rate > 0.0 {
                format!(
                    "ETA {}",
                    clock(len.saturating_sub(pb.position()) as f64 / rate)
                )
            } else {
                "ETA unknown".to_owned()
            };
            let msg = pb.message();
            format!(
                "{}: {}/{len} {unit} ({rate:.1}/s, {eta}){}{msg}",
                pb.prefix(),
                pb.position(),
                if msg.is_empty() { "" } else { " " }
            )
        });
    }
    pb
}

/// A spinner with a message, for waiting on something whose length is unknown (a plain line
/// with the time waited so far when stderr is not a terminal).
pub fn spinner(message: String) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(4));
    pb.set_style(
        ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("a valid template"),
    );
    pb.set_message(message);
    pb.enable_steady_tick(Duration::from_millis(250));
    if !std::io::stderr().is_terminal() {
        let started = Instant::now();
        plain_lines(&pb, move |pb| {
            format!(
                "{} ({})",
                pb.message(),
                clock(started.elapsed().as_secs_f64())
            )
        });
    }
    pb
}

/// Prints `line(pb)` on stderr every [`plain_interval`] until `pb` is finished or dropped.
fn plain_lines(pb: &ProgressBar, line: impl Fn(&ProgressBar) -> String + Send + 'static) {
    let weak = pb.downgrade();
    let every = plain_interval();
    let spawned = std::thread::Builder::new()
        .name("progress".into())
        .spawn(move || {
            loop {
                let started = Instant::now();
                // Short naps, so that the thread ends soon after its bar.
                while started.elapsed() < every {
                    std::thread::sleep(every.min(Duration::from_millis(200)));
                    if weak.upgrade().is_none_or(|pb| pb.is_finished()) {
                        return;
                    }
                }
                match weak.upgrade() {
                    Some(pb) if !pb.is_finished() => eprintln!("{}", line(&pb)),
                    _ => return,
                }
            }
        });
    // Without a thread there are no plain lines, and nothing else changes.
    drop(spawned);
}

/// `seconds` as `1h02m`, `3m05s` or `42s`.
pub fn clock(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, _) => format!("{h}h{m:02}m"),
    }
}

#[cfg(test)]
mod tests {
    use super::clock;

    #[test]
    fn clocks_read_as_people_write_them() {
        assert_eq!(clock(0.2), "0s");
        assert_eq!(clock(42.0), "42s");
        assert_eq!(clock(185.0), "3m05s");
        assert_eq!(clock(3720.0), "1h02m");
        assert_eq!(clock(-5.0), "0s");
    }
}
