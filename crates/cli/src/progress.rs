//! A spinner (or a bar, when the steps are known) on stderr for work that
//! can take seconds (model calls, long renders, big imports, replays).
//! Drawn only when stderr is a terminal, so pipes and tests see nothing
//! of it.

use std::io::IsTerminal;
use std::time::Duration;

/// A running spinner or bar; `finish` (or drop) clears it.
pub(crate) struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    /// Starts a spinner saying `what`, when `show` and stderr is a
    /// terminal.
    pub(crate) fn start(what: &str, show: bool) -> Self {
        if !show || !std::io::stderr().is_terminal() {
            return Progress(None);
        }
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_message(what.to_string());
        bar.enable_steady_tick(Duration::from_millis(120));
        Progress(Some(bar))
    }

    /// Starts a bar of `total` steps saying `what`, when `show` and stderr
    /// is a terminal.
    pub(crate) fn bar(what: &str, total: u64, show: bool) -> Self {
        if !show || !std::io::stderr().is_terminal() {
            return Progress(None);
        }
        let bar = indicatif::ProgressBar::new(total);
        let style =
            indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({eta} left)")
                .map(|style| style.progress_chars("=> "))
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message(what.to_string());
        Progress(Some(bar))
    }

    /// Moves a bar one step on.
    pub(crate) fn step(&self) {
        if let Some(bar) = &self.0 {
            bar.inc(1);
        }
    }

    /// Clears the spinner.
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
