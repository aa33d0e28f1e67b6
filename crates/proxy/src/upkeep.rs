//! Compaction around the agent's turns, with every model call kept off
//! its path.
//!
//! An agent waiting for its reply is the proxy's caller, so no summary is
//! written while it waits. Each conversation's harness runs its
//! model-backed methods (`soft`, `handoff`, `remote`) only through
//! speculation ([`abridge::HarnessBuilder::background_models`]):
//!
//! - **After a reply is logged**, when the context is inside the
//!   speculative band (`speculative_percent` of the threshold below it,
//!   [`DEFAULT_SPECULATIVE_PERCENT`] unless the settings say) or already
//!   past the threshold, the first ready model-backed method of the order
//!   starts summarizing in a background task. The agent has its reply by
//!   then.
//! - **On a later request past the threshold**, the threshold pass commits
//!   that summary when it is finished: a plan of the span it covered and
//!   a log write, no model call.
//! - **While it is still being written**, the request is not held for it.
//!   As long as the request still leaves the reply at least half the
//!   reserve (the line past which Maintenance treats a request as one that
//!   would overflow), it goes upstream as it is and the summary lands on a
//!   later request: an LLM checkpoint is worth a turn or two above the
//!   threshold, and a model-free one landed now would change the history
//!   the summary covers and throw it away. Past that line the pass runs
//!   now and the model-free methods of the order (`digest` last) land,
//!   in milliseconds; the model-backed ones are passed over as
//!   unavailable, never waited for.
//! - **With no summary at all** (none could start, or it failed), a pass
//!   past the threshold lands the model-free methods, the same way. A
//!   failed summary counts against its method's breaker in Maintenance,
//!   so a summarizer that keeps failing is not started after every reply.

use abridge::Harness;
use abridge::Limits;
use abridge::compact::Trigger;

/// `speculative_percent` when the settings leave it out: in the proxy the
/// model-backed methods run only in the background, so without a band
/// they would never run. 15: the band starts at 85% of the threshold,
/// above where a pass ends (`target_percent`, 80 by default), so a
/// landing does not start the next summary at once.
pub const DEFAULT_SPECULATIVE_PERCENT: u64 = 15;

/// The settings every conversation gets: the band is always on.
pub(crate) fn proxy_settings(mut settings: abridge::Settings) -> abridge::Settings {
    if settings.speculative_percent.is_none() {
        settings.speculative_percent = Some(DEFAULT_SPECULATIVE_PERCENT);
    }
    settings
}

/// After the reply of session `id` is logged: starts the next
/// checkpoint's summary in the background when it is due.
pub(crate) fn after_reply(harness: &Harness, id: &str) {
    let maintenance = harness.maintenance();
    if !maintenance.speculation_running() && maintenance.speculate(harness.session()) {
        tracing::debug!(session = %id, tokens = harness.tokens(), "a checkpoint is being summarized in the background");
    }
}

/// Before the request of session `id` goes upstream, its new messages
/// logged: the threshold pass, unless a summary still being written
/// can land on a later request instead (see the module docs).
pub(crate) async fn before_request(harness: &Harness, id: &str) {
    let maintenance = harness.maintenance();
    // Measured only while a summary runs: the pass measures anyway.
    if maintenance.speculation_running() {
        let tokens = harness.tokens();
        if maintenance.needed(Trigger::Threshold, tokens)
            && leaves_half_the_reserve(&maintenance.limits(), tokens)
        {
            tracing::info!(session = %id, tokens, "past the threshold while its checkpoint is summarized in the background: sent as it is, the checkpoint lands on a later request");
            return;
        }
    }
    if let Err(error) = harness.after_turn().await {
        tracing::warn!(session = %id, %error, "maintenance failed");
    }
}

/// Whether a request of `tokens` still leaves the reply at least half the
/// reserve.
fn leaves_half_the_reserve(limits: &Limits, tokens: u64) -> bool {
    tokens <= limits.window.saturating_sub(limits.reserve / 2)
}
