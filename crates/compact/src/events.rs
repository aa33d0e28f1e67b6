//! The log-only events a compaction writes, and reading them back.
//!
//! A compaction writes `compaction/start` when it begins, and on success
//! `compaction/summary`, the replacing message and `compaction/end` in one
//! batch; on failure only `compaction/end` with the error. None of them
//! reaches the model.

use std::collections::HashMap;

use abridge_llm::Usage;
use abridge_session::EventBody;
use abridge_session::Seq;
use abridge_session::Session;
use serde::Deserialize;
use serde::Serialize;

use crate::details::Details;
use crate::types::FileOps;
use crate::types::Span;

/// Event type that opens a compaction (the lock).
pub const TYPE_COMPACTION_START: &str = "compaction/start";
/// Event type recording what a compaction produced.
pub const TYPE_COMPACTION_SUMMARY: &str = "compaction/summary";
/// Event type that closes a compaction, successful or not.
pub const TYPE_COMPACTION_END: &str = "compaction/end";

/// Data of a `compaction/start` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartData {
    /// Unique id of this compaction; the other two events repeat it.
    pub compaction_id: String,
    /// The method about to run.
    pub method: String,
    /// Why it runs.
    pub trigger: crate::types::Trigger,
    /// Surface positions planned, inclusive.
    pub span: Span,
    /// The first and last seq of the span.
    pub first_seq: Seq,
    /// The last seq of the span.
    pub last_seq: Seq,
    /// Surface generation when planned.
    pub generation: u64,
    /// The figure to act on before compacting.
    pub tokens_before: u64,
}

/// Data of a `compaction/summary` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryData {
    /// The compaction.
    pub compaction_id: String,
    /// The method that produced it.
    pub method: String,
    /// The full summary text (empty for rewrites).
    #[serde(default)]
    pub summary: String,
    /// Two or three sentences for a UI line.
    #[serde(default)]
    pub short_summary: String,
    /// Files touched, cumulative.
    #[serde(default)]
    pub files: FileOps,
    /// What writing it cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The model that wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Tokens of what it hides (or the rewritten results' old cost).
    pub hidden_tokens: u64,
    /// Tokens of the framed checkpoint (or the rewritten results' new cost).
    pub new_tokens: u64,
    /// For rewrites: the targets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rewrites: Vec<Seq>,
    /// The method's own record, as typed sections.
    #[serde(default, skip_serializing_if = "Details::is_empty")]
    pub details: Details,
    /// The summary is a transcript of what the checkpoint hides (see
    /// [`Checkpoint::transcript`](crate::Checkpoint::transcript)).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub transcript: bool,
}

/// How a compaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndStatus {
    /// It committed.
    Ok,
    /// It failed; nothing else was written.
    Error,
    /// It was found unmatched after a crash and closed by
    /// [`close_stale`](crate::host::close_stale).
    Stale,
}

/// Data of a `compaction/end` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndData {
    /// The compaction.
    pub compaction_id: String,
    /// How it ended.
    pub status: EndStatus,
    /// The error's kind ([`CompactError::kind`](crate::host::CompactError::kind)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The error's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The checkpoint message, when one was committed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Seq>,
    /// What a failed method's model calls cost (see
    /// [`MethodError::Spent`](crate::MethodError::Spent)); a committed
    /// compaction records its cost on `compaction/summary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// A `compaction/start` with no `compaction/end`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnmatchedStart {
    /// Its id.
    pub compaction_id: String,
    /// The start event.
    pub seq: Seq,
    /// True when a live ticket in this process holds it (a compaction in
    /// flight); false when it is stale (a crash, a dropped ticket, another
    /// process that has since let go of the session) and therefore inert.
    pub live: bool,
}

fn compaction_id(data: &serde_json::Value) -> Option<&str> {
    data.get("compaction_id")
        .and_then(serde_json::Value::as_str)
}

/// Every `compaction/start` in the log with no matching end, oldest first.
///
/// Stale starts are inert: they never block [`begin`](crate::host::begin) and
/// never change the surface. Report them (a crash happened mid-compaction),
/// and optionally close them with [`close_stale`](crate::host::close_stale).
pub fn unmatched_starts(session: &Session) -> Vec<UnmatchedStart> {
    let mut open: HashMap<&str, Seq> = HashMap::new();
    for event in session.events() {
        let EventBody::Log(log) = &event.body else {
            continue;
        };
        let Some(id) = compaction_id(&log.data) else {
            continue;
        };
        match log.kind.as_str() {
            TYPE_COMPACTION_START => {
                open.insert(id, event.seq);
            }
            TYPE_COMPACTION_END => {
                open.remove(id);
            }
            _ => {}
        }
    }
    let mut out: Vec<UnmatchedStart> = open
        .into_iter()
        .map(|(id, seq)| UnmatchedStart {
            compaction_id: id.to_string(),
            seq,
            live: session.leases().is_held(id),
        })
        .collect();
    out.sort_by_key(|u| u.seq);
    out
}

/// The `compaction/summary` data of the checkpoint message at `seq`, found
/// through its sources.
pub fn summary_of_checkpoint(session: &Session, seq: Seq) -> Option<SummaryData> {
    let event = session.event(seq)?.message_event()?;
    event.sources.iter().rev().find_map(|source| {
        let log = session.event(*source)?.log()?;
        if log.kind != TYPE_COMPACTION_SUMMARY {
            return None;
        }
        serde_json::from_value(log.data.clone()).ok()
    })
}
