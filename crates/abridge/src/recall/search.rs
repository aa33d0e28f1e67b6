//! Search results with snippets: the index ranks, this cuts a window of
//! text around the best hit and names it by a reference that reads back
//! exactly that window.

use abridge_prune::ArtifactStore;
use abridge_session::Reference;
use abridge_session::Session;

use super::index::RecallIndex;
use super::index::Source;
use super::render::clip_line;
use super::render::message_text;
use super::render::speaker;

/// Characters of context on each side of the hit in a snippet.
pub(super) const SNIPPET_RADIUS: usize = 90;

/// One search result as the model and the CLI see it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Found {
    /// The whole document (`recall://SEQ` or `artifact://ID`).
    pub source: String,
    /// The snippet's own reference (`recall://SEQ#START-END`, or an
    /// artifact byte range).
    pub reference: String,
    /// What the document is (`tool result of grep`).
    pub kind: String,
    /// BM25 score.
    pub score: f32,
    /// The text around the hit, on one line.
    pub snippet: String,
}

/// The results ranked `skip..skip + limit` for `terms`.
pub(super) fn search(
    index: &RecallIndex,
    session: &Session,
    artifacts: Option<&dyn ArtifactStore>,
    terms: &[(String, f32)],
    skip: usize,
    limit: usize,
) -> Vec<Found> {
    let hits = index.search(terms, skip + limit);
    // The rarest terms first: the snippet centres on the most telling one.
    let mut by_rarity: Vec<&String> = terms.iter().map(|(t, _)| t).collect();
    by_rarity.sort_by(|a, b| index.idf(b).total_cmp(&index.idf(a)));
    hits.into_iter()
        .skip(skip)
        .filter_map(|hit| {
            // Whether a part of the text can be named: parts count the
            // message's plain text, which the rendered text equals unless
            // the message holds calls or images.
            let mut addressable = true;
            let (text, kind) = match &hit.source {
                Source::Event(seq) => {
                    let event = session.event(*seq)?;
                    let message = event.message()?;
                    let text = message_text(*seq, message);
                    addressable = text == message.plain_text();
                    (text, speaker(session, event))
                }
                Source::Artifact(id) => {
                    let bytes = artifacts?.get(id).ok()?;
                    (
                        String::from_utf8_lossy(&bytes).into_owned(),
                        "shaken artifact".to_string(),
                    )
                }
            };
            let (start, end) = window(&text, &by_rarity);
            let reference = match &hit.source {
                Source::Event(seq) => {
                    let start_char = text[..start].chars().count();
                    let end_char = start_char + text[start..end].chars().count();
                    if !addressable || (start == 0 && end == text.len()) {
                        Reference::Event(*seq).to_string()
                    } else {
                        Reference::Part {
                            seq: *seq,
                            start: start_char,
                            end: end_char.max(start_char + 1),
                        }
                        .to_string()
                    }
                }
                Source::Artifact(_) => format!("{}#{start}-{end}", hit.source),
            };
            Some(Found {
                source: hit.source.to_string(),
                reference,
                kind,
                score: hit.score,
                snippet: clip_line(&text[start..end], SNIPPET_RADIUS * 3),
            })
        })
        .collect()
}

/// The byte range of the snippet: around the first occurrence of the
/// rarest term found (ASCII case folded, which keeps byte offsets), else
/// the start of the text.
fn window(text: &str, terms: &[&String]) -> (usize, usize) {
    let folded = text.to_ascii_lowercase();
    let at = terms
        .iter()
        .find_map(|term| folded.find(term.as_str()))
        .unwrap_or(0);
    let start = back_chars(text, at, SNIPPET_RADIUS);
    let end = forward_chars(text, at, SNIPPET_RADIUS * 2);
    (start, end)
}

fn back_chars(text: &str, at: usize, n: usize) -> usize {
    text[..at]
        .char_indices()
        .rev()
        .nth(n.saturating_sub(1))
        .map_or(0, |(i, _)| i)
}

fn forward_chars(text: &str, at: usize, n: usize) -> usize {
    text[at..]
        .char_indices()
        .nth(n)
        .map_or(text.len(), |(i, _)| at + i)
}

/// The results as text for the model.
pub(super) fn render(query: &str, found: &[Found], skip: usize) -> String {
    if found.is_empty() {
        return super::NO_MATCHES.replace("{query}", query);
    }
    let mut out = format!("Hidden history matching \"{query}\", best first:\n");
    for (i, f) in found.iter().enumerate() {
        out.push_str(&format!(
            "{}. {} · {} · score {:.2}\n   {}\n",
            skip + i + 1,
            f.reference,
            f.kind,
            f.score,
            f.snippet
        ));
    }
    out.push_str(super::SEARCH_FOOTER);
    out
}
