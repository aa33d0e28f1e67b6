//! The inverted index over hidden history, ranked with BM25 (the BM25+
//! variant).
//!
//! What is indexed: every message a checkpoint's `replace` lists in its
//! `sources`, every original a `rewrite` replaced, and every shake artifact
//! a rewrite's text names (when an artifact store is given). Results of the
//! recall tool itself are left out (see [`super::render::is_recall_result`]).
//!
//! The index lives in memory only: it is built from the log on open and
//! brought up to date by [`RecallIndex::update`], which scans only the
//! events written since the last scan. The log stays the one source of
//! truth; documents keep no text, only where to find it.

use std::collections::HashMap;
use std::collections::HashSet;
use std::hash::BuildHasherDefault;
use std::hash::Hasher;

use abridge_prune::ARTIFACT_SCHEME;
use abridge_prune::ArtifactId;
use abridge_prune::ArtifactStore;
use abridge_session::EventBody;
use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::SurfaceOp;

use super::render::is_recall_result;
use super::render::message_text;
use super::tokenize::terms;

/// BM25 term-frequency saturation.
const K1: f32 = 1.2;
/// BM25 length normalisation.
const B: f32 = 0.75;
/// BM25+'s floor (Lv and Zhai, 2011): a term present in a long document
/// still counts, so a rare identifier inside a long tool result outranks
/// short messages that only share its common pieces.
const DELTA: f32 = 1.0;

/// Where an indexed document's text lives.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Source {
    /// A hidden message event (`recall://SEQ`).
    Event(Seq),
    /// A shake artifact (`artifact://ID`).
    Artifact(ArtifactId),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Event(seq) => write!(f, "{}{seq}", abridge_session::RECALL_SCHEME),
            Source::Artifact(id) => write!(f, "{ARTIFACT_SCHEME}{id}"),
        }
    }
}

/// One ranked result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The document.
    pub source: Source,
    /// Its BM25 score (higher is better).
    pub score: f32,
}

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    tf: u32,
}

#[derive(Debug, Clone)]
struct Doc {
    source: Source,
    len: u32,
}

/// FNV-1a: terms are short, and the default hasher's DoS resistance buys
/// nothing for an index of one's own history.
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for byte in bytes {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = hash;
    }
}

type FnvMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

/// An inverted index over what compaction hid in one session.
#[derive(Debug, Default, Clone)]
pub struct RecallIndex {
    terms: FnvMap<Box<str>, u32>,
    postings: Vec<Vec<Posting>>,
    docs: Vec<Doc>,
    seen: HashSet<Source>,
    scanned: usize,
    total_len: u64,
}

impl RecallIndex {
    /// Indexes everything `session` hides (and the artifacts its rewrites
    /// name, read from `artifacts`).
    pub fn build(session: &Session, artifacts: Option<&dyn ArtifactStore>) -> Self {
        let mut index = RecallIndex::default();
        index.update(session, artifacts);
        index
    }

    /// Indexes what the events written since the last scan hide (after a
    /// compaction commits: its checkpoint or rewrites); returns how many
    /// documents were added.
    pub fn update(&mut self, session: &Session, artifacts: Option<&dyn ArtifactStore>) -> usize {
        let before = self.docs.len();
        let events = session.events();
        let start = self.scanned.min(events.len());
        for event in &events[start..] {
            let EventBody::Message(m) = &event.body else {
                continue;
            };
            match m.op {
                SurfaceOp::Append => {}
                SurfaceOp::Replace { .. } => {
                    for &seq in &m.sources {
                        self.add_event(session, seq);
                    }
                }
                SurfaceOp::Rewrite { target } => {
                    self.add_event(session, target);
                    if let Some(store) = artifacts {
                        let text = m.message.plain_text();
                        for id in artifact_ids(&text) {
                            self.add_artifact(store, &id);
                        }
                    }
                }
            }
        }
        self.scanned = events.len();
        self.docs.len() - before
    }

    fn add_event(&mut self, session: &Session, seq: Seq) {
        if self.seen.contains(&Source::Event(seq)) {
            return;
        }
        let Some(message) = session.message(seq) else {
            return;
        };
        if is_recall_result(session, seq) {
            return;
        }
        let text = message_text(seq, message);
        self.add(Source::Event(seq), &text);
    }

    fn add_artifact(&mut self, store: &dyn ArtifactStore, id: &ArtifactId) {
        let source = Source::Artifact(id.clone());
        if self.seen.contains(&source) {
            return;
        }
        match store.get(id) {
            Ok(bytes) => self.add(source, &String::from_utf8_lossy(&bytes)),
            Err(error) => tracing::debug!(%id, %error, "artifact not indexed"),
        }
    }

    fn add(&mut self, source: Source, text: &str) {
        let doc = u32::try_from(self.docs.len()).unwrap_or(u32::MAX);
        let mut counts: FnvMap<u32, u32> = FnvMap::default();
        let mut len = 0u32;
        terms(text, |term, _| {
            len += 1;
            let id = match self.terms.get(term) {
                Some(&id) => id,
                None => {
                    let id = u32::try_from(self.postings.len()).unwrap_or(u32::MAX);
                    self.terms.insert(term.into(), id);
                    self.postings.push(Vec::new());
                    id
                }
            };
            *counts.entry(id).or_default() += 1;
        });
        for (term, tf) in counts {
            self.postings[term as usize].push(Posting { doc, tf });
        }
        self.total_len += u64::from(len);
        self.seen.insert(source.clone());
        self.docs.push(Doc { source, len });
    }

    /// Documents indexed.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether nothing is indexed (nothing is hidden yet).
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Terms (words) indexed, counting repeats: about the hidden tokens.
    pub fn total_terms(&self) -> u64 {
        self.total_len
    }

    /// Whether `source` is indexed.
    pub fn contains(&self, source: &Source) -> bool {
        self.seen.contains(source)
    }

    /// An estimate of the heap the index holds, in bytes.
    pub fn heap_bytes(&self) -> usize {
        let terms: usize = self.terms.keys().map(|k| k.len() + 16 + 8).sum();
        let postings: usize = self
            .postings
            .iter()
            .map(|p| p.capacity() * std::mem::size_of::<Posting>() + 24)
            .sum();
        let docs = self.docs.capacity() * std::mem::size_of::<Doc>();
        let seen = self.seen.len() * (std::mem::size_of::<Source>() + 8);
        terms + postings + docs + seen
    }

    /// The `limit` best documents for weighted `query` terms (lower-case,
    /// as [`super::tokenize::query_terms`] gives them), best first; ties go
    /// to the earlier document.
    pub fn search(&self, query: &[(String, f32)], limit: usize) -> Vec<Hit> {
        if self.docs.is_empty() || limit == 0 {
            return Vec::new();
        }
        let n = self.docs.len() as f32;
        let average = (self.total_len as f32 / n).max(1.0);
        let mut scores = vec![0f32; self.docs.len()];
        let mut touched: Vec<u32> = Vec::new();
        for (term, weight) in query {
            let Some(&id) = self.terms.get(term.as_str()) else {
                continue;
            };
            let postings = &self.postings[id as usize];
            let idf = weight * inverse_frequency(n, postings.len() as f32);
            for posting in postings {
                let len = self.docs[posting.doc as usize].len as f32;
                let tf = posting.tf as f32;
                let score =
                    idf * (tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / average)) + DELTA);
                let slot = &mut scores[posting.doc as usize];
                if *slot == 0.0 {
                    touched.push(posting.doc);
                }
                *slot += score;
            }
        }
        let by_score = |a: &u32, b: &u32| {
            scores[*b as usize]
                .total_cmp(&scores[*a as usize])
                .then(a.cmp(b))
        };
        if touched.len() > limit {
            touched.select_nth_unstable_by(limit - 1, by_score);
            touched.truncate(limit);
        }
        touched.sort_by(by_score);
        touched
            .into_iter()
            .map(|doc| Hit {
                source: self.docs[doc as usize].source.clone(),
                score: scores[doc as usize],
            })
            .collect()
    }

    /// How rare `term` is: its inverse document frequency (0 when absent).
    pub fn idf(&self, term: &str) -> f32 {
        let Some(&id) = self.terms.get(term) else {
            return 0.0;
        };
        inverse_frequency(
            self.docs.len() as f32,
            self.postings[id as usize].len() as f32,
        )
    }
}

/// BM25's inverse document frequency of a term in `df` of `n` documents
/// (never negative).
fn inverse_frequency(n: f32, df: f32) -> f32 {
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// The artifact ids named in `text` (`artifact://` then 32 hex digits).
pub fn artifact_ids(text: &str) -> Vec<ArtifactId> {
    text.match_indices(ARTIFACT_SCHEME)
        .filter_map(|(at, scheme)| {
            let rest = &text[at + scheme.len()..];
            let end = rest
                .find(|c: char| !c.is_ascii_hexdigit())
                .unwrap_or(rest.len());
            ArtifactId::parse(&rest[..end]).ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use abridge_llm::Message;
    use abridge_session::Draft;

    use super::*;
    use crate::recall::tokenize::query_terms;

    fn hidden_session() -> Session {
        let mut session = Session::in_memory("t");
        session
            .append_message(Message::user("build the parser"))
            .unwrap();
        session
            .append_message(Message::assistant("the lexer handles tokens"))
            .unwrap();
        session
            .append_message(Message::assistant("parse_frame_header fails on tokens"))
            .unwrap();
        session
            .append(Draft::replace(
                Message::user("[summary]"),
                0,
                2,
                vec![0, 1, 2],
            ))
            .unwrap();
        session
    }

    #[test]
    fn ranks_the_rare_identifier_first_and_updates_incrementally() {
        let mut session = hidden_session();
        let mut index = RecallIndex::build(&session, None);
        assert_eq!(index.len(), 3);
        let hits = index.search(&query_terms("parse_frame_header"), 3);
        assert_eq!(hits[0].source, Source::Event(2));
        assert_eq!(hits.len(), 1);
        assert!(index.search(&query_terms("nothing-like-it"), 3).is_empty());

        session
            .append_message(Message::user("zebra stripes"))
            .unwrap();
        assert_eq!(
            index.update(&session, None),
            0,
            "visible text is not indexed"
        );
        session
            .append(Draft::replace(Message::user("[again]"), 0, 1, vec![3, 4]))
            .unwrap();
        assert_eq!(
            index.update(&session, None),
            2,
            "the old checkpoint and the new message"
        );
        assert_eq!(
            index.search(&query_terms("zebra"), 3)[0].source,
            Source::Event(4)
        );
    }

    #[test]
    fn finds_artifact_ids_in_placeholders() {
        let id = "0123456789abcdef0123456789abcdef";
        let text = format!("[moved: artifact://{id}#0-10 and artifact://nothex]");
        assert_eq!(artifact_ids(&text), vec![ArtifactId::parse(id).unwrap()]);
    }
}
