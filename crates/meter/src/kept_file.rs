//! The kept-counts file beside a session log: read into a meter before it
//! measures, written back after it counted something new.
//!
//! One owner for the file's place and its life, so the CLI's commands and
//! the `abridge` crate's `Harness` reopening a JSONL session treat it the
//! same way. The file is a cache: a missing one is built, one that
//! cannot be used (unreadable, malformed, another cost model) is replaced,
//! and a count whose message changed is recounted (see [`KeptCounts`]).

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::path::PathBuf;

use abridge_llm::Message;
use abridge_session::Seq;

use crate::CostModel;
use crate::KeptCounts;
use crate::KeptError;
use crate::TokenMeter;

/// The kept-counts file of one session log: the log's path with `.counts`
/// added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptFile {
    path: PathBuf,
}

/// What [`KeptFile::load`] gave the meter.
#[derive(Debug)]
#[non_exhaustive]
pub enum KeptLoad {
    /// The meter's cost model keeps no counts (a custom tokenizer, counts
    /// from a provider endpoint): nothing was read.
    NotKept,
    /// No file yet: the meter starts an empty set, written on save.
    Missing,
    /// The file was read: this many counts.
    Read(usize),
    /// The file was made for another cost model: an empty set replaces it.
    OtherModel,
    /// The file could not be used; an empty set replaces it. The error
    /// says why, for a note to the user.
    Refused(KeptError),
}

impl KeptFile {
    /// The kept-counts file of the session log at `session`.
    pub fn beside(session: &Path) -> Self {
        let mut name = session.as_os_str().to_owned();
        name.push(".counts");
        KeptFile {
            path: PathBuf::from(name),
        }
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Gives `meter` the counts in the file, or an empty set to fill when
    /// there are none or they cannot be used. Never fails: the counts are
    /// a cache, and the outcome says what happened.
    pub fn load(&self, meter: &mut TokenMeter) -> KeptLoad {
        let Some(model) = meter.cost_model().kept_id() else {
            return KeptLoad::NotKept;
        };
        let (kept, outcome) = match File::open(&self.path) {
            Ok(file) => match KeptCounts::read(BufReader::new(file), &model) {
                Ok(kept) => {
                    let len = kept.len();
                    (kept, KeptLoad::Read(len))
                }
                Err(KeptError::OtherModel { .. }) => (KeptCounts::new(model), KeptLoad::OtherModel),
                Err(error) => (KeptCounts::new(model), KeptLoad::Refused(error)),
            },
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                (KeptCounts::new(model), KeptLoad::Missing)
            }
            Err(error) => (KeptCounts::new(model), KeptLoad::Refused(error.into())),
        };
        meter.keep_counts(kept);
        outcome
    }

    /// Writes `meter`'s kept counts when it counted anything since they
    /// were loaded or last saved, whole and renamed into place (0600, via
    /// `abridge_session::write_private`), so a reader never sees half a
    /// file. Returns whether it wrote.
    ///
    /// # Errors
    /// [`KeptError::Io`] when the file cannot be written; the counts stay
    /// with the meter, marked changed, for a later try.
    pub fn save(&self, meter: &mut TokenMeter) -> Result<bool, KeptError> {
        let Some(mut kept) = meter.take_kept_counts() else {
            return Ok(false);
        };
        let written = if kept.changed() {
            let mut bytes = Vec::new();
            kept.write(&mut bytes)
                .and_then(|()| {
                    abridge_session::write_private(&self.path, &bytes).map_err(KeptError::from)
                })
                .inspect_err(|_| kept.mark_changed())
                .map(|()| true)
        } else {
            Ok(false)
        };
        meter.keep_counts(kept);
        written
    }
}

/// Counts written as a session is written, a line per message, by a
/// writer that does not hold the session (a streaming import): made once,
/// when each event is written, so the first open reads them back instead
/// of tokenizing. The lines go to a private temporary file renamed into
/// place by [`finish`](Self::finish); a writer dropped before that leaves
/// no file.
#[derive(Debug)]
pub struct KeptWriter {
    cost: CostModel,
    out: abridge_session::PrivateReplacement,
    lines: usize,
}

impl KeptFile {
    /// A writer of a fresh set of counts made with `cost`, replacing the
    /// file when it finishes; `None` when `cost` keeps no counts.
    ///
    /// # Errors
    /// [`KeptError::Io`] when the temporary file cannot be created.
    pub fn writer(&self, cost: CostModel) -> Result<Option<KeptWriter>, KeptError> {
        let Some(model) = cost.kept_id() else {
            return Ok(None);
        };
        let mut out = abridge_session::PrivateReplacement::create(&self.path)?;
        crate::kept::write_header(&mut out, &model)?;
        Ok(Some(KeptWriter {
            cost,
            out,
            lines: 0,
        }))
    }
}

impl KeptWriter {
    /// Counts `message`, written at `seq`, and writes its line.
    ///
    /// # Errors
    /// [`KeptError::Io`] when writing fails.
    pub fn count(&mut self, seq: Seq, message: &Message) -> Result<(), KeptError> {
        let priced = self.cost.priced(message);
        let cost = crate::kept::KeptCost {
            hash: crate::content_hash(message),
            rest: priced.rest,
            thinking: priced.thinking,
            calls: priced.calls.into(),
        };
        crate::kept::write_line(&mut self.out, seq, &cost)?;
        self.lines += 1;
        Ok(())
    }

    /// Puts the file in place; returns how many counts it holds.
    ///
    /// # Errors
    /// [`KeptError::Io`] when it cannot be synced or renamed (no file is
    /// left then).
    pub fn finish(self) -> Result<usize, KeptError> {
        self.out.commit()?;
        Ok(self.lines)
    }
}

#[cfg(test)]
mod tests {
    use abridge_llm::Catalog;
    use abridge_llm::Message;
    use abridge_session::Session;

    use super::*;

    #[test]
    fn the_counts_file_sits_beside_the_session() {
        assert_eq!(
            KeptFile::beside(Path::new("/tmp/a.abridge.jsonl")).path(),
            Path::new("/tmp/a.abridge.jsonl.counts")
        );
    }

    #[test]
    fn counts_saved_once_are_read_back_and_saved_again_only_when_new() {
        let dir = tempfile::tempdir().unwrap();
        let file = KeptFile::beside(&dir.path().join("s.jsonl"));
        let entry = Catalog::builtin().lookup("gpt-4o").entry;
        let mut session = Session::in_memory("s");
        session
            .append_message(Message::user("hello there"))
            .unwrap();

        let mut meter = TokenMeter::for_model(&entry);
        assert!(matches!(file.load(&mut meter), KeptLoad::Missing));
        let tokens = meter.measure(&session).tokens;
        assert!(file.save(&mut meter).unwrap());
        assert!(!file.save(&mut meter).unwrap(), "nothing new to write");

        let mut again = TokenMeter::for_model(&entry);
        assert!(matches!(file.load(&mut again), KeptLoad::Read(1)));
        assert_eq!(again.measure(&session).tokens, tokens);
        assert!(!file.save(&mut again).unwrap());

        std::fs::write(file.path(), "not counts").unwrap();
        let mut third = TokenMeter::for_model(&entry);
        assert!(matches!(file.load(&mut third), KeptLoad::Refused(_)));
        assert_eq!(third.measure(&session).tokens, tokens);
        assert!(
            file.save(&mut third).unwrap(),
            "a refused file is rewritten"
        );
    }

    #[test]
    fn counts_written_as_events_go_by_are_the_ones_a_meter_makes() {
        let dir = tempfile::tempdir().unwrap();
        let file = KeptFile::beside(&dir.path().join("s.jsonl"));
        let entry = Catalog::builtin().lookup("gpt-4o").entry;
        let mut session = Session::in_memory("s");
        session
            .append_message(Message::user("read the file"))
            .unwrap();
        session
            .append_message(Message {
                role: abridge_llm::Role::Assistant,
                content: vec![abridge_llm::Block::ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: serde_json::json!({"path": "a.rs"}),
                }],
                meta: abridge_llm::Meta::default(),
            })
            .unwrap();
        session
            .append_message(Message::tool_result("c1", "fn main() {}", false))
            .unwrap();
        session.append_message(Message::assistant("done")).unwrap();

        // A writer dropped before it finishes leaves nothing behind.
        let dropped = file.writer(CostModel::for_model(&entry)).unwrap().unwrap();
        drop(dropped);
        assert!(!file.path().exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

        let mut writer = file.writer(CostModel::for_model(&entry)).unwrap().unwrap();
        for event in session.events() {
            if let Some(message) = event.message() {
                writer.count(event.seq, message).unwrap();
            }
        }
        assert_eq!(writer.finish().unwrap(), 4);

        let mut fresh = TokenMeter::for_model(&entry);
        let tokens = fresh.measure(&session).tokens;
        let mut meter = TokenMeter::for_model(&entry);
        assert!(matches!(file.load(&mut meter), KeptLoad::Read(4)));
        assert_eq!(meter.measure(&session).tokens, tokens);
        assert_eq!(
            meter.call_tokens(&session, 1),
            fresh.call_tokens(&session, 1)
        );
        assert!(
            !meter.kept_counts().unwrap().changed(),
            "every count was read, none made again"
        );
    }
}
