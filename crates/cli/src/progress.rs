//! A spinner on stderr for work that can take seconds (model calls, long
//! renders, big imports). Drawn only when stderr is a terminal, so pipes
//! and tests see nothing of it.

use std::io::IsTerminal;
use std::time::Duration;

/// A running spinner; `finish` (or drop) clears it.
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
