//! The [`Plan`]: an owned snapshot of what one compaction replaces, and
//! the figures a method reads from it.
//!
//! A method sees the plan only through accessors, so the seam can add what
//! the transaction needs without breaking a backend.

use std::sync::Arc;

use abridge_llm::SharedMessage;
use abridge_meter::TokenCounter;
use abridge_session::Seq;

use crate::details::Details;
use crate::types::FileOps;
use crate::types::Span;
use crate::types::Trigger;
use abridge_redact::Redactor;

/// The checkpoint at the head of the span, which the new one must merge.
#[derive(Debug, Clone, PartialEq)]
pub struct PreviousCheckpoint {
    /// Its seq.
    pub seq: Seq,
    /// Its summary text (from its `compaction/summary` event, or its body
    /// without framing when there is none).
    pub summary: String,
    /// Its cumulative file operations.
    pub files: FileOps,
    /// Its method's record (a digest keeps its state here to continue
    /// it); empty when unknown.
    pub details: Details,
    /// What it was made from, when its summary is only a transcript of
    /// that (snapcompact's text fallback): a method that writes its own
    /// kind of summary continues from these messages, not from the
    /// transcript. `None` for a checkpoint whose summary stands on its
    /// own.
    pub source: Option<Box<CheckpointSource>>,
}

/// The history a transcript checkpoint hid, as the log holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointSource {
    /// The checkpoint it folded in, when it folded one.
    pub earlier: Option<PreviousCheckpoint>,
    /// The messages it hid after that one, oldest first (redacted as the
    /// plan's own messages are).
    pub messages: Vec<SharedMessage>,
}

impl PreviousCheckpoint {
    /// Takes secrets out of its summary and everything it was made from.
    pub(crate) fn redact(&mut self, redactor: &Redactor) {
        self.summary = redactor.redact(&self.summary).into_owned();
        if let Some(source) = self.source.as_mut() {
            source.messages = redactor.redact_messages(&source.messages);
            if let Some(earlier) = source.earlier.as_mut() {
                earlier.redact(redactor);
            }
        }
    }
}

/// The kept part begins inside a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitTurn {
    /// Index into [`Plan::messages`] of the user message that opened the
    /// turn; `messages[turn_start..]` is the turn's hidden prefix.
    pub turn_start: usize,
}

/// Token figures of a plan, from the policy's counter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlanTokens {
    /// What the span costs now.
    pub hidden: u64,
    /// What the kept part after the span costs.
    pub kept: u64,
    /// What the leading system messages cost.
    pub head: u64,
}

/// An owned snapshot of what to compact. Holds no borrow of the session:
/// messages are shared clones, so a method can run for minutes while the
/// agent keeps appending.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Plan {
    /// The session's id.
    pub(crate) session_id: String,
    /// Surface positions to replace, inclusive.
    pub(crate) span: Span,
    /// The seqs at those positions, in order.
    pub(crate) seqs: Vec<Seq>,
    /// Their messages, in order.
    pub(crate) messages: Vec<SharedMessage>,
    /// What each of `messages` costs, by `counter`, counted when planned:
    /// the plan holds no session, so a method reads the costs here rather
    /// than counting the messages again.
    pub(crate) message_costs: Vec<u64>,
    /// Leading system/developer messages, never compacted.
    pub(crate) head: Vec<SharedMessage>,
    /// Messages after the span, kept verbatim.
    pub(crate) kept: Vec<SharedMessage>,
    /// Their seqs.
    pub(crate) kept_seqs: Vec<Seq>,
    /// What each of `kept` costs, as [`message_costs`](Self::message_costs).
    pub(crate) kept_costs: Vec<u64>,
    /// The checkpoint at the span's head, if any.
    pub(crate) previous: Option<PreviousCheckpoint>,
    /// Set when the cut falls inside a turn.
    pub(crate) split_turn: Option<SplitTurn>,
    /// Surface generation when planned.
    pub(crate) generation: u64,
    /// Token figures.
    pub(crate) tokens: PlanTokens,
    /// The most the replacing checkpoint may cost (see [`Plan::room`]).
    pub(crate) room: Option<u64>,
    /// The least a landing must reclaim (the policy's `min_reclaim`).
    pub(crate) min_reclaim: u64,
    /// The most a landing may leave (the policy's `ceiling`).
    pub(crate) ceiling: Option<u64>,
    /// Why compaction runs.
    pub(crate) trigger: Trigger,
    /// Focus instructions from the user.
    pub(crate) instructions: Option<String>,
    /// Extra context supplied by hooks while compacting.
    pub(crate) extra_context: Vec<String>,
    /// Text hooks asked to carry into the checkpoint verbatim.
    pub(crate) preserve: Vec<String>,
    /// The counter every figure came from; methods measure with it too.
    pub(crate) counter: Arc<dyn TokenCounter>,
    /// What took secrets out of the messages above, when the policy had
    /// one.
    pub(crate) redactor: Option<Arc<Redactor>>,
}

impl Plan {
    /// The session's id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Surface positions to replace, inclusive.
    pub fn span(&self) -> Span {
        self.span
    }

    /// The seqs of the span's messages, in order: what rewrites target.
    pub fn seqs(&self) -> &[Seq] {
        &self.seqs
    }

    /// The span's messages, in order.
    pub fn messages(&self) -> &[SharedMessage] {
        &self.messages
    }

    /// What each of [`messages`](Self::messages) costs, counted when
    /// planned: a method reads costs here rather than counting again.
    pub fn message_costs(&self) -> &[u64] {
        &self.message_costs
    }

    /// Leading system and developer messages, never compacted: the
    /// standing instructions a summarizer may need to understand the span.
    pub fn head(&self) -> &[SharedMessage] {
        &self.head
    }

    /// The messages after the span, kept verbatim.
    pub fn kept(&self) -> &[SharedMessage] {
        &self.kept
    }

    /// The seqs of [`kept`](Self::kept).
    pub fn kept_seqs(&self) -> &[Seq] {
        &self.kept_seqs
    }

    /// What each of [`kept`](Self::kept) costs.
    pub fn kept_costs(&self) -> &[u64] {
        &self.kept_costs
    }

    /// The checkpoint at the span's head, which a new checkpoint must
    /// fold in.
    pub fn previous(&self) -> Option<&PreviousCheckpoint> {
        self.previous.as_ref()
    }

    /// Set when the cut falls inside a turn.
    pub fn split_turn(&self) -> Option<SplitTurn> {
        self.split_turn
    }

    /// Token figures of the span, the kept part and the head.
    pub fn tokens(&self) -> PlanTokens {
        self.tokens
    }

    /// The most the replacing checkpoint may cost, in tokens, for the
    /// pass to reach its goal: the goal minus the fixed part (the overhead
    /// a usage report counts and the leading system messages), the kept
    /// part and the checkpoint framing the commit adds. `None` when the policy has no goal. A method that can
    /// size its output (frames, a summary's length) sizes it to this; zero
    /// means the goal cannot be reached by this plan whatever it writes.
    pub fn room(&self) -> Option<u64> {
        self.room
    }

    /// The least a landing must reclaim, in tokens (the commit refuses
    /// less; see [`CompactError::TooLittle`](crate::host::CompactError::TooLittle)).
    pub fn min_reclaim(&self) -> u64 {
        self.min_reclaim
    }

    /// The most the context may hold after a landing, in tokens (the
    /// commit refuses more; see
    /// [`CompactError::OverWindow`](crate::host::CompactError::OverWindow)).
    pub fn ceiling(&self) -> Option<u64> {
        self.ceiling
    }

    /// Why compaction runs.
    pub fn trigger(&self) -> Trigger {
        self.trigger
    }

    /// What the user asked the checkpoint to focus on.
    pub fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }

    /// Extra context hooks supplied while compacting, for the prompt.
    pub fn extra_context(&self) -> &[String] {
        &self.extra_context
    }

    /// Text hooks asked to carry into the checkpoint verbatim.
    pub fn preserve(&self) -> &[String] {
        &self.preserve
    }

    /// The counter every figure came from; methods measure with it too.
    pub fn counter(&self) -> &Arc<dyn TokenCounter> {
        &self.counter
    }

    /// Surface generation when planned: commit compares it to detect a
    /// surface that changed under the method.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// What took secrets out of this plan's messages, when anything did:
    /// a method that builds text from anywhere else (a file, a tool)
    /// passes it through [`redact`](Self::redact) too.
    pub fn redactor(&self) -> Option<&Arc<Redactor>> {
        self.redactor.as_ref()
    }

    /// `text` through the plan's redactor (unchanged without one).
    pub fn redact<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        abridge_redact::redact_with(self.redactor.as_deref(), text)
    }

    /// Adds context for the prompt (what a `while` hook supplies),
    /// redacted like the messages.
    pub fn add_extra_context(&mut self, context: impl Into<String>) {
        let context = context.into();
        let context = self.redact(&context).into_owned();
        self.extra_context.push(context);
    }

    /// Adds text to carry into the checkpoint verbatim (after redaction).
    pub fn add_preserve(&mut self, text: impl Into<String>) {
        let text = text.into();
        let text = self.redact(&text).into_owned();
        self.preserve.push(text);
    }

    /// The hidden messages after the previous checkpoint and before a split
    /// turn's prefix: what an update summary adds to the previous one.
    pub fn history(&self) -> &[SharedMessage] {
        let from = usize::from(self.previous.is_some());
        let to = self
            .split_turn
            .map_or(self.messages.len(), |s| s.turn_start)
            .max(from);
        &self.messages[from..to]
    }

    /// The hidden start of a split turn (empty when the turn is not split).
    pub fn turn_prefix(&self) -> &[SharedMessage] {
        match self.split_turn {
            Some(split) => &self.messages[split.turn_start..],
            None => &[],
        }
    }

    /// Tokens `message` would cost, counted as the plan counts (uncached:
    /// for messages the plan does not hold a cost for).
    pub fn count(&self, message: &abridge_llm::Message) -> u64 {
        self.counter.message_tokens(message)
    }
}
