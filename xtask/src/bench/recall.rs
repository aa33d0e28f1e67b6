//! Recall: the index over hidden history. Build on open for the 38k-entry
//! synthetic session with everything but its last turns behind one
//! checkpoint, a query over at least 1M hidden tokens, the incremental
//! update after one more compaction, and the index's memory against the
//! log's size. The alternative is what a user does without an index: a
//! linear, case-folded substring scan over the same hidden text (`grep -c`
//! in process, with the text already rendered and lower-cased so only the
//! scan is timed).

use std::time::Duration;
use std::time::Instant;

use abridge::recall::Recall;
use abridge::recall::RecallIndex;
use abridge::recall::message_text;
use abridge::recall::query_terms;
use abridge_llm::Message;
use abridge_session::Draft;
use abridge_session::Seq;
use abridge_session::Session;

use super::Section;
use super::fmt_duration;
use super::median_time;

/// Hidden tokens the query bench needs at least (estimated at 4 bytes
/// per token).
const MIN_HIDDEN_TOKENS: usize = 1_000_000;

/// Surface messages left visible by the checkpoint.
const KEEP: usize = 6;

/// A session holding the 38k-entry session's active path, repeated until
/// its text reaches `min_tokens`, with all but the last [`KEEP`] surface
/// messages behind one checkpoint.
fn hidden_session(min_tokens: usize) -> anyhow::Result<(Session, usize)> {
    let messages = super::session::entries_38k()?.surface_messages();
    let mut session = Session::in_memory("recall-bench");
    let mut bytes = 0usize;
    let mut round = 0;
    while bytes / 4 < min_tokens || round == 0 {
        let mut drafts = Vec::with_capacity(messages.len());
        for message in &messages {
            bytes += message.content_bytes();
            drafts.push(Draft::message(Message::clone(message)));
        }
        session.append_batch(drafts)?;
        round += 1;
    }
    checkpoint(&mut session)?;
    Ok((session, bytes))
}

/// Replaces all but the last [`KEEP`] surface messages with a checkpoint.
fn checkpoint(session: &mut Session) -> anyhow::Result<Seq> {
    let seqs = session.surface().seqs().to_vec();
    let end = seqs.len().saturating_sub(KEEP + 1);
    let sources = seqs[..=end].to_vec();
    Ok(session.append(Draft::replace(
        Message::user("[checkpoint]"),
        0,
        end,
        sources,
    ))?)
}

/// The log's size as JSONL.
fn log_bytes(session: &Session) -> anyhow::Result<usize> {
    let mut total = 0;
    for event in session.events() {
        total += abridge_session::encode_event(event)?.len() + 1;
    }
    Ok(total)
}

pub(crate) fn run() -> anyhow::Result<Vec<Section>> {
    let mut section = Section::new(
        "Recall: index over hidden history",
        "The 38k-entry synthetic session's active path (the session bench's), repeated until its text is at least 1M tokens (bytes/4), everything but the last six surface messages behind one checkpoint. Build: `RecallIndex::build` from the log (what opening does). Query: BM25+ top 8 for each of a rare identifier, a common word, a two-word phrase and a word that is absent; the median over all. Update: `RecallIndex::update` after a second checkpoint hides one more turn. Memory: the index's heap (counted from its tables) against the log's JSONL size. The alternative for a query is a linear case-folded substring scan over the same hidden text, already rendered and lower-cased.",
        &[
            "measure",
            "abridge",
            "alternative (linear scan)",
            "ratio",
            "target",
        ],
    );
    let (mut session, hidden_bytes) = hidden_session(MIN_HIDDEN_TOKENS)?;
    let started = Instant::now();
    let index = RecallIndex::build(&session, None);
    let first_build = started.elapsed();
    let build = median_time(Duration::from_secs(3), || {
        RecallIndex::build(&session, None).len()
    })
    .min(first_build);
    section.row(vec![
        format!(
            "build on open ({} docs, {} events, ~{} hidden tokens)",
            index.len(),
            session.len(),
            hidden_bytes / 4
        ),
        fmt_duration(build),
        "-".into(),
        "-".into(),
        "-".into(),
    ]);

    // The same hidden text, for the scan.
    let texts: Vec<String> = session
        .events()
        .iter()
        .filter_map(|e| {
            e.message()
                .map(|m| message_text(e.seq, m).to_ascii_lowercase())
        })
        .collect();
    // Query words drawn from the hidden text itself: one that a single
    // message holds (rare), the most frequent one (common), and a phrase.
    let mut df: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for text in &texts {
        let mut words: Vec<&str> = text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.len() >= 4 && w.len() <= 40)
            .collect();
        words.sort_unstable();
        words.dedup();
        for word in words {
            *df.entry(word).or_default() += 1;
        }
    }
    let mut by_df: Vec<(&str, usize)> = df.into_iter().collect();
    by_df.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let common = by_df.first().map_or("error", |(w, _)| *w).to_string();
    let second = by_df.get(1).map_or("test", |(w, _)| *w).to_string();
    let rare = by_df
        .iter()
        .rev()
        .find(|(w, n)| *n == 1 && w.bytes().any(|b| b.is_ascii_alphabetic()))
        .map_or("compaction", |(w, _)| *w)
        .to_string();
    let phrase = format!("{common} {second}");
    let queries: [&str; 4] = [
        rare.as_str(),
        common.as_str(),
        phrase.as_str(),
        "zyxwvut_absent",
    ];
    let mut times = Vec::new();
    let mut scans = Vec::new();
    for query in queries {
        let terms = query_terms(query);
        times.push(median_time(Duration::from_millis(500), || {
            index.search(&terms, 8).len()
        }));
        let words: Vec<String> = terms.iter().map(|(t, _)| t.clone()).collect();
        scans.push(median_time(Duration::from_millis(500), || {
            texts
                .iter()
                .filter(|t| words.iter().any(|w| t.contains(w.as_str())))
                .count()
        }));
    }
    times.sort();
    scans.sort();
    let query = times[times.len() / 2];
    let scan = scans[scans.len() / 2];
    section.row(vec![
        format!(
            "query, median of 4 (`{rare}` in 1 message, `{common}` the most frequent word, `{phrase}`, an absent word)"
        ),
        fmt_duration(query),
        fmt_duration(scan),
        format!(
            "{:.0}x faster",
            scan.as_secs_f64() / query.as_secs_f64().max(1e-12)
        ),
        "< 10 ms median".into(),
    ]);
    // With snippets, as the tool answers (reads the top hits' text).
    let recall = Recall::open(&session, None);
    let with_snippets = median_time(Duration::from_millis(500), || {
        recall
            .search(&session, &rare, 1)
            .map(|f| f.len())
            .unwrap_or(0)
    });
    section.row(vec![
        "query with snippets (the tool's answer)".into(),
        fmt_duration(with_snippets),
        "-".into(),
        "-".into(),
        "< 10 ms median".into(),
    ]);

    // One more compaction: a turn appended, then hidden.
    let mut updates = Vec::new();
    for i in 0..5 {
        let mut before = index.clone();
        before.update(&session, None);
        let base = session.len();
        session.append_message(Message::user(format!("another request {i}")))?;
        session.append_message(Message::assistant(format!("another answer {i}")))?;
        checkpoint(&mut session)?;
        let t = Instant::now();
        let added = before.update(&session, None);
        updates.push(t.elapsed());
        anyhow::ensure!(
            added >= 1,
            "update after compaction {i} indexed nothing (from {base})"
        );
    }
    updates.sort();
    let update = updates[updates.len() / 2];
    section.row(vec![
        "incremental update after one compaction".into(),
        fmt_duration(update),
        format!("{} (rebuild)", fmt_duration(build)),
        format!(
            "{:.0}x faster",
            build.as_secs_f64() / update.as_secs_f64().max(1e-12)
        ),
        "-".into(),
    ]);

    let log = log_bytes(&session)?;
    let heap = index.heap_bytes();
    section.row(vec![
        "index memory vs log size".into(),
        format!("{:.1} MB", heap as f64 / 1e6),
        format!("{:.1} MB log", log as f64 / 1e6),
        format!("{:.2}x the log", heap as f64 / log as f64),
        "-".into(),
    ]);
    section.note(format!(
        "Query target (< 10 ms median over >= 1M hidden tokens): {}.",
        if query < Duration::from_millis(10) {
            "met"
        } else {
            "missed"
        }
    ));
    Ok(vec![section])
}
