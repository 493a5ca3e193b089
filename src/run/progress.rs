//! Progress bars: counts with rates and ETA, and a message for live statistics.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar of `len` units named `unit`, drawn on stderr (hidden when stderr is not a terminal,
/// where the per-generation summary lines remain).
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
    pb
}

/// A spinner with a message, for waiting on something whose length is unknown.
pub fn spinner(message: String) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(4));
    pb.set_style(
        ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("a valid template"),
    );
    pb.set_message(message);
    pb.enable_steady_tick(std::time::Duration::from_millis(250));
    pb
}
