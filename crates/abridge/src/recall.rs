//! Recall: the model's way back to what compaction hid.
//!
//! A checkpoint hides messages from the model, never from the log; every
//! checkpoint and placeholder names what it hid by a
//! [`Reference`](abridge_session::Reference) (`recall://…`) or a shake
//! artifact (`artifact://…`). This module reads those back, searches the
//! hidden history, and lists what each checkpoint hides, through one tool
//! (`recall`) whose answers are plain text written for a model.
//!
//! - [`RecallIndex`]: the in-memory BM25 index over hidden text, built
//!   from the log and updated after each compaction (never written into
//!   the log).
//! - [`Recall`]: the index plus the artifact store and the page cap; its
//!   [`call`](Recall::call) is the tool's handler.
//! - [`tool_spec`]: the tool's name, description and JSON schema.
//!
//! See docs/recall.md for the references, the limits and the choices.

mod index;
mod last_read;
mod miss;
mod page;
mod read;
mod render;
mod search;
mod toc;
mod tokenize;
mod tool;

pub use index::Hit;
pub use index::RecallIndex;
pub use index::Source;
pub use index::artifact_ids;
pub use miss::RecallMiss;
pub use page::CHARS_PER_TOKEN;
pub use page::Page;
pub use read::Resolved;
pub use read::resolve_text;
pub use render::message_text;
pub use search::Found;
pub use toc::TocEntry;
pub use toc::TocTurn;
pub use toc::hidden_messages;
pub use toc::table_of_contents;
pub use tokenize::query_terms;
pub use tool::DEFAULT_PAGE_TOKENS;
pub use tool::RESULTS_PER_PAGE;
pub use tool::Recall;
pub use tool::RecallArgs;
pub use tool::RecallCall;
pub use tool::TOOL_DESCRIPTION;
pub use tool::TOOL_NAME;
pub use tool::tool_spec;

/// Starts every answer that reports a bad call, so a model (and a test)
/// tells a miss from a result.
pub const MISS_PREFIX: &str = include_str!("../prompts/recall_miss_prefix.txt");

/// The answer to an empty query.
pub const EMPTY_QUERY: &str = include_str!("../prompts/recall_empty_query.txt");

/// The answer when a search matches nothing (`{query}` is replaced).
pub const NO_MATCHES: &str = include_str!("../prompts/recall_no_matches.txt");

/// Ends a list of search results.
pub const SEARCH_FOOTER: &str = include_str!("../prompts/recall_search_footer.txt");

/// The table of contents when no checkpoint is on the surface.
pub const NOTHING_HIDDEN: &str = include_str!("../prompts/recall_nothing_hidden.txt");

/// Stands in a transcript for an earlier recall result (`{ref}` is
/// replaced), so reading back never nests old reads inside new ones.
pub const RECALLED: &str = include_str!("../prompts/recall_recalled.txt");

/// Stands in a transcript for an earlier checkpoint (`{ref}` is replaced).
pub const EARLIER_CHECKPOINT: &str = include_str!("../prompts/recall_earlier_checkpoint.txt");

/// `template` with `{ref}` replaced by `recall://SEQ`.
fn by_reference(template: &str, seq: abridge_session::Seq) -> String {
    template.replace("{ref}", &abridge_session::Reference::Event(seq).to_string())
}
