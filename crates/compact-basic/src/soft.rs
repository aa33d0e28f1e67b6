//! `soft`: a checkpoint written by a [`Summarizer`] (usually a model).
//!
//! The hidden history is summarized in windows that fit the summarizer's
//! input budget, each window updating the running summary (the first
//! starts from the previous checkpoint, so nothing it recorded is lost).
//! When the summarizer reports an overflow, the window is set to half of
//! what was sent and the same stretch retried, so every retry sends less. A split turn's hidden start is summarized
//! separately and placed below, under [`TURN_PREFIX_HEADING`], when it fits
//! one window; a longer one is summarized with the history, so the
//! checkpoint keeps one set of sections.

use std::sync::Arc;

use crate::summarizer::Summarizer;
use crate::summarizer::SummaryRequest;
use abridge_compact::Capabilities;
use abridge_compact::Checkpoint;
use abridge_compact::CompactionMethod;
use abridge_compact::MethodError;
use abridge_compact::MethodOutput;
use abridge_compact::Plan;
use abridge_llm::Block;
use abridge_llm::SharedMessage;
use abridge_llm::Usage;
use abridge_meter::estimate_tokens;
use async_trait::async_trait;

use crate::files::cumulative_file_ops;
use crate::files::with_files_tree;
use crate::prompts::TURN_PREFIX_HEADING;
use crate::record::SoftRecord;
use crate::sections::fill_missing;
use crate::transcript::clip;

pub use crate::names::SOFT;

/// Knobs of the soft method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SoftConfig {
    /// Cap on each summary's length, in tokens. Default 4096.
    pub max_summary_tokens: u32,
    /// Tokens of history sent per summarizer call. Default 100000; set it
    /// below the summarizing model's window minus `max_summary_tokens`.
    pub input_window_tokens: u64,
    /// Times a window may be halved after overflows before giving up.
    /// Default 4.
    pub max_halvings: u32,
}

impl Default for SoftConfig {
    fn default() -> Self {
        SoftConfig {
            max_summary_tokens: 4096,
            input_window_tokens: 100_000,
            max_halvings: 4,
        }
    }
}

/// The shortest cap a summary is asked for, whatever the room: below it a
/// summary says too little to be worth a model call.
pub(crate) const MIN_SUMMARY_TOKENS: u32 = 256;

/// The output cap for a summary: the configured one, lowered to the room
/// the plan gives the checkpoint (never below [`MIN_SUMMARY_TOKENS`]).
fn summary_cap(configured: u32, room: Option<u64>) -> u32 {
    match room {
        Some(room) => {
            let room = u32::try_from(room).unwrap_or(u32::MAX);
            configured.min(room.max(MIN_SUMMARY_TOKENS))
        }
        None => configured,
    }
}

/// The LLM-summary compaction method.
#[derive(Debug, Clone)]
pub struct SoftMethod {
    summarizer: Arc<dyn Summarizer>,
    config: SoftConfig,
}

struct Folded {
    text: String,
    short: Option<String>,
    usage: Usage,
    model: Option<String>,
    calls: u32,
    halvings: u32,
}

impl SoftMethod {
    /// Summarizes through `summarizer` with default knobs.
    pub fn new(summarizer: Arc<dyn Summarizer>) -> Self {
        SoftMethod {
            summarizer,
            config: SoftConfig::default(),
        }
    }

    /// Sets the knobs.
    pub fn with_config(mut self, config: SoftConfig) -> Self {
        self.config = config;
        self
    }

    fn request(
        &self,
        plan: &Plan,
        messages: Vec<SharedMessage>,
        previous: Option<String>,
    ) -> SummaryRequest {
        let mut request = SummaryRequest::new(messages);
        request.previous = previous;
        request.instructions = plan.instructions().map(str::to_string);
        request.extra_context = plan.extra_context().to_vec();
        request.max_output_tokens = summary_cap(self.config.max_summary_tokens, plan.room());
        request
    }

    /// True when `messages` fit in one input window.
    fn fits_one_window(&self, plan: &Plan, messages: &[SharedMessage]) -> bool {
        let total: u64 = messages.iter().map(|m| plan.count(m)).sum();
        total <= self.config.input_window_tokens
    }

    /// Summarizes `messages` window by window, starting from `previous`.
    /// Each window after the first is sent with the running summary, so
    /// the summarizer merges rather than restarts.
    async fn fold(
        &self,
        plan: &Plan,
        messages: &[SharedMessage],
        previous: Option<String>,
        prefix_mode: bool,
    ) -> Result<Folded, MethodError> {
        let mut window = self.config.input_window_tokens.max(1);
        let mut folded = Folded {
            text: previous.unwrap_or_default(),
            short: None,
            usage: Usage::default(),
            model: None,
            calls: 0,
            halvings: 0,
        };
        let mut at = 0;
        while at < messages.len() {
            let running_cost = estimate_tokens(folded.text.len());
            let room = window.saturating_sub(running_cost).max(1);
            let mut end = at;
            let mut used = 0u64;
            while end < messages.len() {
                let cost = plan.count(&messages[end]);
                if end > at && used + cost > room {
                    break;
                }
                used += cost;
                end += 1;
            }
            let chunk = messages[at..end].to_vec();
            // Every window after the first updates the running summary, so
            // the windows end as one summary rather than one per window
            // (nine "## Goal" sections were seen on a long single turn).
            // Only a prefix's first window gets the turn-prefix prompt.
            let previous = (!folded.text.is_empty()).then(|| folded.text.clone());
            let mut request = self.request(plan, Vec::new(), previous);
            if prefix_mode && request.previous.is_none() {
                request.turn_prefix = chunk;
            } else {
                request.messages = chunk;
            }
            match self.summarizer.summarize(&request).await {
                Ok(summary) => {
                    folded.calls += 1;
                    // The running summary goes back out with the next
                    // window: a model that echoed a secret must not get
                    // it sent again.
                    folded.text = plan.redact(summary.text.trim()).into_owned();
                    folded.short = summary.short.or(folded.short);
                    if let Some(usage) = summary.usage {
                        folded.usage.add(&usage);
                    }
                    folded.model = summary.model.or(folded.model);
                    at = end;
                }
                Err(MethodError::Overflow { message, .. }) => {
                    if folded.halvings >= self.config.max_halvings || window <= 1 {
                        return Err(MethodError::Overflow {
                            method: SOFT.to_string(),
                            message: format!(
                                "{message} (still too large after halving the window {} times, to {window} tokens)",
                                folded.halvings
                            ),
                        });
                    }
                    // Halve what was sent, not the nominal window: a
                    // history smaller than half the window would otherwise
                    // be resent unchanged until the halvings caught up.
                    window = window.min(used + running_cost) / 2;
                    folded.halvings += 1;
                    tracing::debug!(window, "summarizer overflowed; halving the window");
                }
                Err(error) => return Err(error),
            }
        }
        Ok(folded)
    }
}

#[async_trait]
impl CompactionMethod for SoftMethod {
    fn name(&self) -> &str {
        SOFT
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::model_backed()
    }

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        let previous = plan.previous().map(|p| p.summary.clone());
        // A turn prefix too long for one window is folded with the history
        // as one span: a separate prefix summary would merge its windows
        // through the update prompt and carry a second Goal under the
        // prefix heading.
        let whole: Vec<SharedMessage>;
        let (history, prefix) = if self.fits_one_window(plan, plan.turn_prefix()) {
            (plan.history(), plan.turn_prefix())
        } else {
            whole = plan
                .history()
                .iter()
                .chain(plan.turn_prefix())
                .cloned()
                .collect();
            (whole.as_slice(), &[][..])
        };
        let mut usage = Usage::default();
        let mut model = None;
        let mut calls = 0;
        let mut halvings = 0;
        let (mut text, mut short) = (previous.clone().unwrap_or_default(), None);
        if !history.is_empty() {
            let folded = self.fold(plan, history, previous.clone(), false).await?;
            usage.add(&folded.usage);
            model = folded.model;
            calls += folded.calls;
            halvings += folded.halvings;
            text = folded.text;
            short = folded.short;
        }
        if !prefix.is_empty() {
            let folded = self.fold(plan, prefix, None, true).await?;
            usage.add(&folded.usage);
            model = folded.model.or(model);
            calls += folded.calls;
            halvings += folded.halvings;
            text = if text.trim().is_empty() {
                format!("{TURN_PREFIX_HEADING}\n{}", folded.text)
            } else {
                format!(
                    "{}\n\n{TURN_PREFIX_HEADING}\n{}",
                    text.trim_end(),
                    folded.text
                )
            };
        }
        if text.trim().is_empty() {
            return Err(MethodError::Summary {
                method: SOFT.to_string(),
                reason: "nothing was summarized".to_string(),
            });
        }
        // What the model wrote is checked for the sections its prompt
        // asks for; the missing ones are filled without a model rather
        // than the summary refused.
        let mut filled = Vec::new();
        if calls > 0 {
            let span: Vec<SharedMessage> = history.iter().chain(prefix).cloned().collect();
            let (checked, names) = fill_missing(&text, previous.as_deref(), &span);
            if !names.is_empty() {
                tracing::debug!(?names, "soft summary lacked sections; filled by digest");
                text = plan.redact(&checked).into_owned();
                filled = names;
            }
        }
        let files = cumulative_file_ops(plan);
        let content = with_files_tree(&text, &files);
        let short_summary = short.unwrap_or_else(|| clip(&text.replace('\n', " "), 300));
        let mut checkpoint = Checkpoint::new(text)
            .with_content(vec![Block::text(content)])
            .with_short_summary(short_summary)
            .with_files(files)
            .with_usage((!usage.is_zero()).then_some(usage))
            .with_section(&SoftRecord {
                summarizer: Some(self.summarizer.name().to_string()),
                calls,
                halvings,
                filled,
            })?;
        checkpoint.model = model;
        Ok(MethodOutput::Checkpoint(checkpoint))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_is_capped_at_the_room_the_plan_gives_it() {
        assert_eq!(summary_cap(4096, None), 4096);
        assert_eq!(summary_cap(4096, Some(100_000)), 4096);
        assert_eq!(summary_cap(4096, Some(1_500)), 1_500);
        assert_eq!(summary_cap(4096, Some(10)), MIN_SUMMARY_TOKENS);
    }
}
