//! The `recall` tool: its schema, and the handler that keeps the index up
//! to date and answers each call with plain text for the model.

use std::borrow::Cow;
use std::sync::Arc;

use abridge_llm::ToolSpec;
use abridge_prune::ArtifactStore;
use abridge_session::Session;
use serde::Deserialize;

use super::index::RecallIndex;
use super::miss::RecallMiss;
use super::page::CHARS_PER_TOKEN;
use super::page::Page;
use super::page::page_of;
use super::read::resolve_text;
use super::search::Found;
use super::search::search;
use super::toc::table_of_contents;
use super::tokenize::query_terms;

/// The tool's name: the one the placeholders name (`abridge_prune::RECALL_TOOL`).
pub const TOOL_NAME: &str = abridge_prune::RECALL_TOOL;

/// Tokens one call returns at most (estimated at [`CHARS_PER_TOKEN`]).
pub const DEFAULT_PAGE_TOKENS: usize = 2_000;

/// Search results per page.
pub const RESULTS_PER_PAGE: usize = 8;

/// What the model is told the tool does.
pub const TOOL_DESCRIPTION: &str = include_str!("../../prompts/recall_tool_description.txt");

/// The tool as offered to a model.
pub fn tool_spec() -> ToolSpec {
    ToolSpec {
        name: TOOL_NAME.to_string(),
        description: TOOL_DESCRIPTION.to_string(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "ref": {
                    "type": "string",
                    "description": "A reference to read: recall://SEQ, recall://FIRST-LAST, recall://SEQ#START-END or artifact://ID#START-END."
                },
                "query": {
                    "type": "string",
                    "description": "Words or identifiers to search the hidden history for."
                },
                "toc": {
                    "type": "boolean",
                    "description": "true: list what each checkpoint hides, one line per turn."
                },
                "path": {
                    "type": "string",
                    "description": "A file path: what its last read in this session returned, and whether it was changed since."
                },
                "page": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Which page of a long answer (default 1)."
                }
            },
            "additionalProperties": false
        }),
    }
}

/// The arguments of one call, as the schema describes them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    /// A reference to read.
    #[serde(default, rename = "ref")]
    pub reference: Option<String>,
    /// Words to search for.
    #[serde(default)]
    pub query: Option<String>,
    /// List what the checkpoints hide.
    #[serde(default)]
    pub toc: Option<bool>,
    /// A file whose last read to show.
    #[serde(default)]
    pub path: Option<String>,
    /// Page, from 1.
    #[serde(default)]
    pub page: Option<usize>,
}

/// What a call asks for, once its arguments are checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecallCall {
    /// Read a reference.
    Read(String),
    /// Search.
    Query(String),
    /// The table of contents.
    Toc,
    /// The last read of a file.
    Path(String),
}

impl RecallArgs {
    /// Parses a call's JSON arguments.
    ///
    /// # Errors
    /// [`RecallMiss::BadArguments`] naming what does not fit the schema.
    pub fn parse(arguments: &serde_json::Value) -> Result<Self, RecallMiss> {
        let arguments = match arguments {
            // Some models send the arguments as a JSON string.
            serde_json::Value::String(text) => serde_json::from_str(text).map_err(|e| {
                RecallMiss::BadArguments(format!("the arguments are not JSON ({e})"))
            })?,
            other => other.clone(),
        };
        serde_json::from_value(arguments).map_err(|e| RecallMiss::BadArguments(e.to_string()))
    }

    /// The one thing asked for.
    ///
    /// # Errors
    /// [`RecallMiss::BadArguments`] for none or several of ref/query/toc/path.
    pub fn call(&self) -> Result<RecallCall, RecallMiss> {
        let toc = self.toc == Some(true);
        match (&self.reference, &self.query, toc, &self.path) {
            (Some(r), None, false, None) => Ok(RecallCall::Read(r.clone())),
            (None, Some(q), false, None) => Ok(RecallCall::Query(q.clone())),
            (None, None, true, None) => Ok(RecallCall::Toc),
            (None, None, false, Some(p)) => Ok(RecallCall::Path(p.clone())),
            (None, None, false, None) => Err(RecallMiss::BadArguments("none was given".into())),
            _ => Err(RecallMiss::BadArguments("more than one was given".into())),
        }
    }
}

/// One session's recall: the index over its hidden history, the artifact
/// store shake wrote to, and the page size.
///
/// # Contract
/// Call [`refresh`](Self::refresh) (or [`call`](Self::call), which does)
/// after compactions so new hidden history is searchable; reads always see
/// the current log whether refreshed or not.
#[derive(Debug)]
pub struct Recall {
    index: RecallIndex,
    artifacts: Option<Arc<dyn ArtifactStore>>,
    page_chars: usize,
    redactor: Option<Arc<abridge_compact::host::Redactor>>,
}

impl Recall {
    /// Builds the index from the log.
    pub fn open(session: &Session, artifacts: Option<Arc<dyn ArtifactStore>>) -> Self {
        let index = RecallIndex::build(session, artifacts.as_deref());
        Recall {
            index,
            artifacts,
            page_chars: DEFAULT_PAGE_TOKENS * CHARS_PER_TOKEN,
            redactor: None,
        }
    }

    /// Reads, search snippets and the table of contents go through
    /// `redactor` (the settings' `recall_originals` off), or show the
    /// logged originals (`None`).
    pub fn with_redactor(mut self, redactor: Option<Arc<abridge_compact::host::Redactor>>) -> Self {
        self.redactor = redactor;
        self
    }

    /// Sets the per-call cap in tokens.
    pub fn with_page_tokens(mut self, tokens: usize) -> Self {
        self.page_chars = tokens.max(1) * CHARS_PER_TOKEN;
        self
    }

    /// The index.
    pub fn index(&self) -> &RecallIndex {
        &self.index
    }

    /// Indexes what was hidden since the last refresh; returns how many
    /// documents were added.
    pub fn refresh(&mut self, session: &Session) -> usize {
        self.index.update(session, self.artifacts.as_deref())
    }

    /// Page `page` of what `reference` names.
    ///
    /// # Errors
    /// A [`RecallMiss`] naming what was wrong.
    pub fn read(
        &self,
        session: &Session,
        reference: &str,
        page: usize,
    ) -> Result<(String, Page), RecallMiss> {
        let resolved = resolve_text(session, self.artifacts.as_deref(), reference)?;
        let text = self.redacted(&resolved.text);
        let page = page_of(&text, page, self.page_chars, reference.trim())?;
        Ok((resolved.title, page))
    }

    /// Page `page` of the search results for `query`.
    ///
    /// # Errors
    /// [`RecallMiss::EmptyQuery`] when the query has no searchable word.
    pub fn search(
        &self,
        session: &Session,
        query: &str,
        page: usize,
    ) -> Result<Vec<Found>, RecallMiss> {
        let terms = query_terms(query);
        if terms.is_empty() {
            return Err(RecallMiss::EmptyQuery);
        }
        let skip = page.saturating_sub(1) * RESULTS_PER_PAGE;
        let mut found = search(
            &self.index,
            session,
            self.artifacts.as_deref(),
            &terms,
            skip,
            RESULTS_PER_PAGE,
        );
        for hit in &mut found {
            if let Cow::Owned(snippet) = self.redacted(&hit.snippet) {
                hit.snippet = snippet;
            }
        }
        Ok(found)
    }

    /// `text` as recall may show it: redacted unless the settings allow
    /// the originals.
    fn redacted<'t>(&self, text: &'t str) -> Cow<'t, str> {
        abridge_compact::host::redact_with(self.redactor.as_deref(), text)
    }

    /// Page `page` of the table of contents as text.
    ///
    /// # Errors
    /// [`RecallMiss::NoPage`] past its last page.
    pub fn toc(&self, session: &Session, page: usize) -> Result<Page, RecallMiss> {
        let text = super::toc::render(&table_of_contents(session));
        let text = self.redacted(&text);
        page_of(&text, page, self.page_chars, "the table of contents")
    }

    /// Answers one tool call with text for the model: the result, or what
    /// was wrong with the call (never an error that ends the turn).
    pub fn call(&mut self, session: &Session, arguments: &serde_json::Value) -> String {
        self.refresh(session);
        self.answer(session, arguments)
            .unwrap_or_else(|miss| format!("{}{miss}", super::MISS_PREFIX))
    }

    /// What [`call`](Self::call) answers, with a miss as an error rather
    /// than text for the model (for the command line, which exits with
    /// it). Reads the index as it was last refreshed.
    ///
    /// # Errors
    /// The [`RecallMiss`] `call` would have put into words.
    pub fn answer(
        &self,
        session: &Session,
        arguments: &serde_json::Value,
    ) -> Result<String, RecallMiss> {
        let args = RecallArgs::parse(arguments)?;
        let page = args.page.unwrap_or(1);
        match args.call()? {
            RecallCall::Read(reference) => {
                let (title, body) = self.read(session, &reference, page)?;
                Ok(paged(
                    &title,
                    &body,
                    &format!(
                        "{{\"ref\": \"{}\", \"page\": {}}}",
                        reference.trim(),
                        page + 1
                    ),
                ))
            }
            RecallCall::Query(query) => {
                let found = self.search(session, &query, page)?;
                let skip = page.saturating_sub(1) * RESULTS_PER_PAGE;
                Ok(super::search::render(query.trim(), &found, skip))
            }
            RecallCall::Path(path) => {
                let seen = super::last_read::last_read(session, path.trim())?;
                let reference = format!("recall://{}", seen.result);
                let (_, body) = self.read(session, &reference, page)?;
                let changed = match seen.changed_after {
                    Some(seq) => format!("; changed since, by recall://{seq}"),
                    None => "; not changed since in this session".to_string(),
                };
                Ok(paged(
                    &format!("last read of {} ({reference}{changed})", path.trim()),
                    &body,
                    &format!("{{\"path\": \"{}\", \"page\": {}}}", path.trim(), page + 1),
                ))
            }
            RecallCall::Toc => {
                let body = self.toc(session, page)?;
                Ok(paged(
                    "Table of contents",
                    &body,
                    &format!("{{\"toc\": true, \"page\": {}}}", page + 1),
                ))
            }
        }
    }
}

/// A page with its header and, when more follow, how to ask for the next.
fn paged(title: &str, page: &Page, next: &str) -> String {
    let mut out = format!(
        "{title} · page {} of {}\n{}",
        page.page, page.pages, page.text
    );
    if !out.ends_with('\n') {
        out.push('\n');
    }
    if page.page < page.pages {
        out.push_str(&format!(
            "[page {} of {}; next: {next}]\n",
            page.page, page.pages
        ));
    }
    out
}
