//! Branch summaries: when navigation leaves a branch, what was tried on it
//! is summarized and appended at the target, so the work is not lost to
//! the model.

use std::sync::Arc;

use crate::summarizer::Summarizer;
use crate::summarizer::SummaryRequest;
use abridge_compact::FileOps;
use abridge_compact::TokenCounter;
use abridge_compact::host::BeforeNavigation;
use abridge_compact::host::CompactError;
use abridge_compact::host::CompactionHooks;
use abridge_compact::host::Redactor;
use abridge_compact::host::redact_with;
use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Origin;
use abridge_llm::Purpose;
use abridge_llm::Role;
use abridge_llm::SharedMessage;
use abridge_session::Draft;
use abridge_session::Navigation;
use abridge_session::Seq;
use abridge_session::Session;

use crate::digest::DigestState;
use crate::files::collect_file_ops;
use crate::files::render_files;
use crate::prompts::BRANCH_OPEN_CALL;
use crate::prompts::BRANCH_OPENING;

/// Knobs of branch summaries.
#[derive(Debug, Clone)]
pub struct BranchConfig {
    /// Tokens of the abandoned branch given to the summarizer, newest
    /// first. Default 20000.
    pub budget_tokens: u64,
    /// Cap on the summary's length. Default 1024.
    pub max_output_tokens: u32,
    /// What the abandoned branch passes through before the summarizer (or
    /// the digest) reads it, and what the summary passes through before it
    /// is appended: a branch summary leaves the process and lands on the
    /// surface like a checkpoint, so it is redacted like one. Default
    /// `None`; hosts pass the settings' redactor.
    pub redactor: Option<Arc<Redactor>>,
}

impl Default for BranchConfig {
    fn default() -> Self {
        BranchConfig {
            budget_tokens: 20_000,
            max_output_tokens: 1024,
            redactor: None,
        }
    }
}

/// The abandoned branch's messages that fit `budget` tokens, taken newest
/// first (the end of a branch says how it ended) and returned oldest first.
/// The newest message is always included.
pub fn abandoned_messages(
    session: &Session,
    navigation: &Navigation,
    counter: &dyn TokenCounter,
    budget: u64,
) -> Vec<SharedMessage> {
    let mut picked = Vec::new();
    let mut used = 0;
    for seq in navigation.abandoned.iter().rev() {
        let Some(message) = session.message(*seq) else {
            continue;
        };
        let cost = counter.seq_tokens(session, *seq);
        if !picked.is_empty() && used + cost > budget {
            break;
        }
        used += cost;
        picked.push(message.clone());
    }
    picked.reverse();
    picked
}

/// The message a branch summary is appended as: user role, origin branch
/// summary, opening with [`BRANCH_OPENING`].
pub fn branch_message(summary: &str, files: &FileOps) -> Message {
    let mut blocks = vec![
        Block::text(BRANCH_OPENING.trim_end()),
        Block::text(summary.trim()),
    ];
    let tree = render_files(files);
    if !tree.is_empty() {
        blocks.push(Block::text(tree));
    }
    Message {
        role: Role::User,
        content: blocks,
        meta: Meta {
            origin: Some(Origin::BranchSummary),
            ..Meta::default()
        },
    }
}

/// Summarizes what `navigation` abandoned and appends it at the current
/// leaf (the navigation's target). With no summarizer, or when it fails,
/// a digest of the branch is used. Returns the summary's seq, or `None`
/// when the branch had no messages.
///
/// A target inside a tool turn (the assistant's calls, or some of their
/// results) leaves calls open, and a summary after them would break the
/// pairing every provider requires. Each open call is answered first with
/// an error result ([`BRANCH_OPEN_CALL`]) pointing at the summary, in the
/// same write, as a checkpoint never splits a call from its result.
///
/// # Errors
/// [`CompactError::Persistence`] when the append fails.
pub async fn summarize_branch(
    session: &mut Session,
    navigation: &Navigation,
    summarizer: Option<&dyn Summarizer>,
    counter: &dyn TokenCounter,
    config: BranchConfig,
) -> Result<Option<Seq>, CompactError> {
    let messages = abandoned_messages(session, navigation, counter, config.budget_tokens);
    if messages.is_empty() {
        return Ok(None);
    }
    // Read outside a plan, so redacted here, through the same redactor.
    let messages = match &config.redactor {
        Some(redactor) => redactor.redact_messages(&messages),
        None => messages,
    };
    let files = collect_file_ops(&messages);
    let mut text = None;
    if let Some(summarizer) = summarizer {
        let mut request = SummaryRequest::new(messages.clone());
        request.purpose = Purpose::BranchSummary;
        request.max_output_tokens = config.max_output_tokens;
        match summarizer.summarize(&request).await {
            Ok(summary) => text = Some(summary.text),
            Err(error) => tracing::warn!(%error, "branch summary failed; using a digest"),
        }
    }
    let text = text.unwrap_or_else(|| {
        let mut state = DigestState::default();
        state.absorb(&messages);
        state.render(&FileOps::default())
    });
    // A summarizer may echo something secret-shaped; the digest cannot.
    let text = redact_with(config.redactor.as_deref(), &text).into_owned();
    let mut drafts = abridge_session::dangling_call_results(session, BRANCH_OPEN_CALL.trim_end());
    drafts.push(Draft::message(branch_message(&text, &files)));
    let seqs = session.append_batch(drafts)?;
    Ok(seqs.last().copied())
}

/// Navigates to `target` with hooks: `before_navigation` may cancel or skip
/// the summary; the abandoned branch is summarized at the target; then
/// `after_navigation` runs.
///
/// # Errors
/// A cancel ([`MethodError::Cancelled`](abridge_compact::MethodError::Cancelled),
/// wrapped) when a hook cancels; session errors as
/// [`CompactError::Persistence`].
pub async fn navigate_with_summary(
    session: &mut Session,
    target: Option<Seq>,
    summarizer: Option<Arc<dyn Summarizer>>,
    hooks: &dyn CompactionHooks,
    counter: &dyn TokenCounter,
    config: BranchConfig,
) -> Result<(Navigation, Option<Seq>), CompactError> {
    let decision = hooks.before_navigation(session.leaf(), target).await;
    if decision == BeforeNavigation::Cancel {
        return Err(CompactError::cancelled("hook (before navigation)"));
    }
    let navigation = session.navigate(target)?;
    let summary = if decision == BeforeNavigation::SkipSummary {
        None
    } else {
        summarize_branch(session, &navigation, summarizer.as_deref(), counter, config).await?
    };
    hooks.after_navigation(&navigation, summary).await;
    Ok((navigation, summary))
}
