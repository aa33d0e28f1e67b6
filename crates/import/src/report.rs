//! What an import did, so that nothing is dropped or mended silently.

use std::collections::BTreeMap;

use crate::Format;

/// Something in the source that the importer had to work around, with the
/// place it was found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ImportWarning {
    /// A tool call had no result before the conversation moved on (an
    /// interrupted turn). An error result saying so
    /// ([`MISSING_RESULT`](crate::MISSING_RESULT)) was added after the call,
    /// as the agents themselves do when they resend such a history.
    MissingResult {
        /// Line of the call.
        line: Option<u64>,
        /// The call id.
        call_id: String,
    },
    /// A tool call at the very end of the active path has no result. Left
    /// as is: [`repair_dangling_tool_calls`](abridge_session::repair_dangling_tool_calls)
    /// answers it when the session is resumed.
    DanglingAtEnd {
        /// Line of the call.
        line: Option<u64>,
        /// The call id.
        call_id: String,
    },
    /// A tool call on a branch that is not the active one has no result.
    /// Nothing was added: the model never sees that branch unless someone
    /// navigates to it.
    UnansweredOffPath {
        /// Line of the call.
        line: Option<u64>,
        /// The call id.
        call_id: String,
    },
    /// A result names a call id that no earlier call has. It was kept as a
    /// tool message.
    OrphanResult {
        /// Line of the result.
        line: Option<u64>,
        /// The id it names.
        call_id: String,
    },
    /// A second result for a call already answered. It was kept where the
    /// source put it.
    LateResult {
        /// Line of the result.
        line: Option<u64>,
        /// The call id.
        call_id: String,
    },
    /// A call reuses the id of an earlier call. Providers reject a request
    /// with two calls of one id, so this call was given `renamed` (the id
    /// with a `_dupN` suffix, N from 2, skipping ids the source uses), and
    /// results naming the id afterwards were paired with it and renamed
    /// too ([`ImportReport::renamed_calls`] counts these).
    DuplicateCallId {
        /// Line of the repeating call.
        line: Option<u64>,
        /// The id as the source wrote it.
        call_id: String,
        /// The id it has in the log.
        renamed: String,
    },
    /// Two entries share an id (pi's v1 migration makes these). Later
    /// references resolve to the most recent entry with that id, which is
    /// what the writer meant since parents are written before children;
    /// the walk cannot loop because our parents only point backwards.
    DuplicateId {
        /// Line of the second entry.
        line: u64,
        /// The id.
        id: String,
        /// Line of the first entry with it.
        first_line: u64,
    },
    /// An entry's parent id names no earlier entry; it was attached to the
    /// entry before it in the file.
    UnknownParent {
        /// Line of the entry.
        line: u64,
        /// The parent id it names.
        parent_id: String,
    },
    /// A compaction could not be shown as recorded; see `reason`.
    Compaction {
        /// Line of the compaction.
        line: u64,
        /// What was done instead.
        reason: String,
    },
    /// Anything else worth knowing, with its line.
    Note {
        /// Line, when there is one.
        line: Option<u64>,
        /// What happened.
        what: String,
    },
}

impl std::fmt::Display for ImportWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = |line: &Option<u64>| line.map(|l| format!("line {l}: ")).unwrap_or_default();
        match self {
            ImportWarning::MissingResult { line, call_id } => {
                write!(
                    f,
                    "{}call {call_id} has no result; added an error result",
                    at(line)
                )
            }
            ImportWarning::DanglingAtEnd { line, call_id } => write!(
                f,
                "{}call {call_id} at the end has no result; left for resume repair",
                at(line)
            ),
            ImportWarning::UnansweredOffPath { line, call_id } => write!(
                f,
                "{}call {call_id} on an inactive branch has no result",
                at(line)
            ),
            ImportWarning::OrphanResult { line, call_id } => {
                write!(f, "{}result for unknown call {call_id}", at(line))
            }
            ImportWarning::LateResult { line, call_id } => {
                write!(f, "{}second result for call {call_id}", at(line))
            }
            ImportWarning::DuplicateCallId {
                line,
                call_id,
                renamed,
            } => write!(
                f,
                "{}call id {call_id} used before; renamed to {renamed}",
                at(line)
            ),
            ImportWarning::DuplicateId {
                line,
                id,
                first_line,
            } => write!(f, "line {line}: id {id} already used on line {first_line}"),
            ImportWarning::UnknownParent { line, parent_id } => write!(
                f,
                "line {line}: parent {parent_id} is not an earlier entry; attached to the previous entry"
            ),
            ImportWarning::Compaction { line, reason } => {
                write!(f, "line {line}: compaction: {reason}")
            }
            ImportWarning::Note { line, what } => write!(f, "{}{what}", at(line)),
        }
    }
}

/// Figures and findings of one import.
///
/// `skipped` counts, by kind, every record (or notable field) of the source
/// that has no place in an abridge log: progress lines, file snapshots,
/// token-count events, turn contexts, thinking-level changes, duplicated
/// UI echoes of messages. Nothing leaves the source without being counted
/// here or imported. Serializes to JSON for `--json` output.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ImportReport {
    /// The source format.
    pub format: Format,
    /// Records read (non-blank lines; 1 for a single-document format; the
    /// lines of the chosen session for aider).
    pub records: u64,
    /// Sessions the file holds: aider chats, OpenHands evaluation records;
    /// 1 for the other formats.
    pub sessions: usize,
    /// Which of them was imported, from 1.
    pub session: usize,
    /// Message events written, by role (`user`, `assistant`, `tool`, ...).
    pub messages: BTreeMap<String, usize>,
    /// Tool calls in imported assistant messages.
    pub tool_calls: usize,
    /// Tool results imported from the source.
    pub tool_results: usize,
    /// Error results added for calls the source left unanswered mid-session.
    pub synthesized_results: usize,
    /// Compactions turned into checkpoint `replace` events.
    pub compactions: usize,
    /// Log-only events written (model changes, compaction bookkeeping,
    /// labels, extension state).
    pub log_events: usize,
    /// Branch points: events with more than one child.
    pub branch_points: usize,
    /// `leaf` events written to keep the source's current branch active.
    pub leaf_events: usize,
    /// Assistant messages that received usage from a separate record
    /// (Codex `token_count`).
    pub usage_attached: usize,
    /// Tool calls that reused an earlier call's id and were renamed, with
    /// their results (see [`ImportWarning::DuplicateCallId`]).
    pub renamed_calls: usize,
    /// Messages moved after the tool results they interrupted (Codex writes
    /// developer notes between a call and its output).
    pub reordered: usize,
    /// Source records with no place in the log, by kind.
    pub skipped: BTreeMap<String, u64>,
    /// What had to be worked around, in source order.
    pub warnings: Vec<ImportWarning>,
    /// The source line of each draft, by seq (`None` for events the
    /// importer made up), for errors found after the drafts are built.
    #[serde(skip)]
    pub(crate) lines: Vec<Option<u64>>,
}

impl ImportReport {
    /// An empty report for `format`.
    pub fn new(format: Format) -> Self {
        ImportReport {
            format,
            records: 0,
            sessions: 1,
            session: 1,
            messages: BTreeMap::new(),
            tool_calls: 0,
            tool_results: 0,
            synthesized_results: 0,
            compactions: 0,
            log_events: 0,
            branch_points: 0,
            leaf_events: 0,
            usage_attached: 0,
            renamed_calls: 0,
            reordered: 0,
            skipped: BTreeMap::new(),
            warnings: Vec::new(),
            lines: Vec::new(),
        }
    }

    /// Message events written, all roles.
    pub fn message_count(&self) -> usize {
        self.messages.values().sum()
    }

    /// Counts one skipped record of `kind`.
    pub(crate) fn skip(&mut self, kind: impl Into<String>) {
        *self.skipped.entry(kind.into()).or_default() += 1;
    }

    /// Records a warning.
    pub(crate) fn warn(&mut self, warning: ImportWarning) {
        tracing::debug!(%warning, "import warning");
        self.warnings.push(warning);
    }
}

impl std::fmt::Display for ImportReport {
    /// A short multi-line summary for people: figures first, then skipped
    /// kinds, then warnings (the first 20).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "format: {} ({} records)", self.format, self.records)?;
        if self.sessions > 1 {
            writeln!(
                f,
                "session: {} of {} in the file (choose with --session N)",
                self.session, self.sessions
            )?;
        }
        let roles: Vec<String> = self
            .messages
            .iter()
            .map(|(role, n)| format!("{role} {n}"))
            .collect();
        writeln!(
            f,
            "messages: {} ({})",
            self.message_count(),
            roles.join(", ")
        )?;
        writeln!(
            f,
            "tool calls: {}, results: {}, added error results: {}",
            self.tool_calls, self.tool_results, self.synthesized_results
        )?;
        writeln!(
            f,
            "compactions: {}, log events: {}, branch points: {}, leaf events: {}",
            self.compactions, self.log_events, self.branch_points, self.leaf_events
        )?;
        if self.usage_attached > 0 || self.reordered > 0 {
            writeln!(
                f,
                "usage attached: {}, reordered: {}",
                self.usage_attached, self.reordered
            )?;
        }
        if self.renamed_calls > 0 {
            writeln!(f, "renamed call ids: {}", self.renamed_calls)?;
        }
        if !self.skipped.is_empty() {
            let kinds: Vec<String> = self
                .skipped
                .iter()
                .map(|(kind, n)| format!("{kind} {n}"))
                .collect();
            writeln!(f, "skipped: {}", kinds.join(", "))?;
        }
        if !self.warnings.is_empty() {
            writeln!(f, "warnings: {}", self.warnings.len())?;
            for warning in self.warnings.iter().take(20) {
                writeln!(f, "  {warning}")?;
            }
            if self.warnings.len() > 20 {
                writeln!(f, "  ... and {} more", self.warnings.len() - 20)?;
            }
        }
        Ok(())
    }
}
