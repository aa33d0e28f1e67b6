//! What the Harness does about a request the provider refused as too
//! long, or a reply cut at the output limit: promotion to a
//! larger-window model once, then a recovery pass.

use abridge_compact::Trigger;
use abridge_llm::LlmError;

use crate::Harness;
use crate::error::HarnessError;
use crate::pass::Pass;
use crate::settings::Limits;
use crate::settings::Settings;

/// What [`Harness::on_error`] did about a failed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovery {
    /// The error is not one compaction can fix; handle it as usual.
    NotHandled,
    /// Switched to a model with a larger window: retry the turn with
    /// [`Harness::model`].
    Promoted {
        /// The new model.
        model: String,
    },
    /// Compacted: retry the turn when the pass succeeded.
    Compacted(Pass),
}

/// Tokens below the threshold where speculation starts: the settings'
/// `speculative_percent` of the threshold (`0`: off).
pub(crate) fn speculative_band(settings: &Settings, limits: &Limits) -> u64 {
    settings
        .speculative_percent
        .map_or(0, |p| limits.threshold * p / 100)
}

impl Harness {
    /// A failed request: on a context overflow, promotes to the configured
    /// larger-window model once, else runs an overflow pass.
    ///
    /// # Errors
    /// Only when the session cannot be written.
    pub async fn on_error(&self, error: &LlmError) -> Result<Recovery, HarnessError> {
        if !error.is_context_overflow() {
            return Ok(Recovery::NotHandled);
        }
        self.recover(Trigger::Overflow).await
    }

    /// The reply stopped at the output limit because the context left too
    /// little room. Do not record the cut reply; call this and retry.
    ///
    /// # Errors
    /// Only when the session cannot be written.
    pub async fn on_length_stop(&self) -> Result<Recovery, HarnessError> {
        self.recover(Trigger::IncompleteOutput).await
    }

    async fn recover(&self, trigger: Trigger) -> Result<Recovery, HarnessError> {
        if let Some((model, window)) = self.promotion() {
            // The promoted model's window: its threshold, target, reserve
            // and keep, by the same rules as at build, for every later
            // pass.
            let limits = self.settings.limits(window)?;
            tracing::info!(%model, window, threshold = limits.threshold, "context promotion");
            self.maintenance
                .resize(limits, speculative_band(&self.settings, &limits));
            *self
                .model
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = model.clone();
            return Ok(Recovery::Promoted { model });
        }
        self.prime_counts().await;
        Ok(Recovery::Compacted(
            self.maintenance.run(&self.session, trigger).await?,
        ))
    }

    /// The promotion model and its window, when one is set, not yet in
    /// use, and has a larger window than the current limits.
    fn promotion(&self) -> Option<(String, u64)> {
        let target = self.settings.promotion_model.as_ref()?;
        if *target == self.model() {
            return None;
        }
        let window = self.catalog.lookup(target).entry.context_window;
        (window > self.limits().window).then(|| (target.clone(), window))
    }
}
