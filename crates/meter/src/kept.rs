//! Counts kept between processes: each message's cost, keyed by seq and a
//! hash of its content, for one cost model.
//!
//! Counting a long session exactly is most of what opening and measuring
//! it costs (12.5M tokens take about a second). Events never change once
//! written, so a message's cost is computed once, kept, and read back on
//! the next open instead of tokenizing again. The kept counts live beside
//! the log, not in it (the log is append-only and its events immutable; see
//! docs/token-accounting.md, "Counts kept beside the log").
//!
//! Nothing here is trusted blindly: every kept count carries a hash of the
//! message it was counted from, and the meter uses it only when the message
//! at that seq hashes the same. A count for another cost model (another
//! tokenizer, correction or image billing) is never read: the whole set is
//! keyed by [`CostModel::kept_id`](crate::CostModel::kept_id).
//!
//! The format is text, one line per message:
//!
//! ```text
//! abridge-counts 2 o200k:openai:1
//! 0 5f1c...(32 hex digits) 12 0 -
//! 3 a0b2... 57 18 14,22
//! ```
//!
//! a header naming the format version and the cost model, then `seq`,
//! the content hash, the cost without thinking, the thinking's cost, and
//! each tool call's cost in block order (`-` for none).
//!
//! Version 1 keyed counts by a truncated SHA-256; version 2 by XXH3-128,
//! which hashes a 100 MB session in a fraction of the time. A version 1
//! file is refused like any other unreadable one and rebuilt: it is a
//! cache. The hash guards against a changed file at the same path, not
//! against an adversary (who could as well edit the counts file), so 128
//! bits of a well-mixed non-cryptographic hash are enough.

use std::io::BufRead;
use std::io::Write;

use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_llm::Message;
use abridge_session::Seq;
use xxhash_rust::xxh3::Xxh3;

/// The first word of a kept-counts file.
pub const KEPT_MAGIC: &str = "abridge-counts";

/// The format version this build reads and writes.
pub const KEPT_VERSION: u32 = 2;

/// A message's content hash: XXH3-128 over its role and every block field
/// its cost depends on, as 16 little-endian bytes.
pub type ContentHash = [u8; 16];

/// Why a kept-counts file was not read. The caller ignores the file (it is
/// a cache) and counts again; the error says what to tell the user.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeptError {
    /// The file could not be read or written.
    #[error("kept counts: {0}")]
    Io(#[from] std::io::Error),
    /// The header is not `abridge-counts <version> <cost model>`, or names
    /// a version this build does not read.
    #[error("kept counts: line 1 is not an `{KEPT_MAGIC} {KEPT_VERSION}` header: {found:?}")]
    Header {
        /// The line found.
        found: String,
    },
    /// The counts were made for another cost model.
    #[error("kept counts were made for cost model {found:?}, not {expected:?}")]
    OtherModel {
        /// The model in the file.
        found: String,
        /// The model asked for.
        expected: String,
    },
    /// A line does not parse.
    #[error("kept counts: line {line} is malformed: {reason}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// One message's kept cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeptCost {
    pub(crate) hash: ContentHash,
    /// Everything but thinking.
    pub(crate) rest: u64,
    /// Thinking and redacted thinking.
    pub(crate) thinking: u64,
    /// Each tool call block's cost, in block order.
    pub(crate) calls: Box<[u64]>,
}

/// The kept counts of one session for one cost model.
///
/// Give it to [`TokenMeter::keep_counts`](crate::TokenMeter::keep_counts):
/// the meter reads a message's cost from here when the content hash
/// matches, and records every message it counts, so the set can be written
/// back ([`write`](Self::write)) when [`changed`](Self::changed) says so.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeptCounts {
    model: String,
    /// Indexed by seq: seqs are dense from 0, so a lookup is an index, not
    /// a hash of the key.
    costs: Vec<Option<KeptCost>>,
    /// How many of `costs` are `Some`.
    len: usize,
    changed: bool,
}

impl KeptCounts {
    /// An empty set for the cost model `model` (see
    /// [`CostModel::kept_id`](crate::CostModel::kept_id)).
    pub fn new(model: impl Into<String>) -> Self {
        KeptCounts {
            model: model.into(),
            costs: Vec::new(),
            len: 0,
            changed: false,
        }
    }

    /// The cost model the counts are for.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// How many messages have a kept count.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no message has a kept count.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True when counts were added or replaced since it was read: the set
    /// should be written back.
    pub fn changed(&self) -> bool {
        self.changed
    }

    /// The kept cost at `seq` when it was counted from content hashing to
    /// `hash`; a stale entry (another hash) is `None`.
    pub(crate) fn get(&self, seq: Seq, hash: &ContentHash) -> Option<&KeptCost> {
        let index = usize::try_from(seq).ok()?;
        self.costs
            .get(index)?
            .as_ref()
            .filter(|kept| &kept.hash == hash)
    }

    /// Marks the set as needing a write (after a write that failed).
    pub(crate) fn mark_changed(&mut self) {
        self.changed = true;
    }

    /// Records the cost counted at `seq`, replacing a stale one.
    pub(crate) fn put(&mut self, seq: Seq, cost: KeptCost) {
        self.insert(seq, cost);
        self.changed = true;
    }

    fn insert(&mut self, seq: Seq, cost: KeptCost) {
        // A seq past the address space cannot be a message of a loaded
        // session; such a count could never be asked for.
        let Ok(index) = usize::try_from(seq) else {
            return;
        };
        if index >= self.costs.len() {
            self.costs.resize(index + 1, None);
        }
        if self.costs[index].replace(cost).is_none() {
            self.len += 1;
        }
    }

    /// Reads a set written by [`write`](Self::write) for the cost model
    /// `model`.
    ///
    /// # Errors
    /// [`KeptError::Header`] or [`KeptError::Line`] when the text is not
    /// this format, [`KeptError::OtherModel`] when it was made for another
    /// cost model, [`KeptError::Io`] when reading fails.
    pub fn read(mut reader: impl BufRead, model: &str) -> Result<KeptCounts, KeptError> {
        // One line buffer for the whole file: a long session's file has a
        // line per message.
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let header = line_text(&line).to_string();
        let mut words = header.splitn(3, ' ');
        let (Some(KEPT_MAGIC), Some(version), Some(found)) =
            (words.next(), words.next(), words.next())
        else {
            return Err(KeptError::Header { found: header });
        };
        if version.parse::<u32>().ok() != Some(KEPT_VERSION) {
            return Err(KeptError::Header { found: header });
        }
        if found != model {
            return Err(KeptError::OtherModel {
                found: found.to_string(),
                expected: model.to_string(),
            });
        }
        let mut kept = KeptCounts::new(model);
        let mut number = 1;
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                return Ok(kept);
            }
            number += 1;
            let (seq, cost) = parse_line(line_text(&line)).map_err(|reason| KeptError::Line {
                line: number,
                reason,
            })?;
            kept.insert(seq, cost);
        }
    }

    /// Writes the set, seqs in order, and marks it unchanged.
    ///
    /// # Errors
    /// [`KeptError::Io`] when writing fails.
    pub fn write(&mut self, mut writer: impl Write) -> Result<(), KeptError> {
        write_header(&mut writer, &self.model)?;
        for (seq, cost) in self.costs.iter().enumerate() {
            let Some(cost) = cost else { continue };
            write_line(&mut writer, seq as Seq, cost)?;
        }
        writer.flush()?;
        self.changed = false;
        Ok(())
    }
}

/// The file's first line, for cost model `model`.
pub(crate) fn write_header(mut writer: impl Write, model: &str) -> std::io::Result<()> {
    writeln!(writer, "{KEPT_MAGIC} {KEPT_VERSION} {model}")
}

/// One message's line: seq, hash, costs.
pub(crate) fn write_line(mut writer: impl Write, seq: Seq, cost: &KeptCost) -> std::io::Result<()> {
    write!(writer, "{seq} ")?;
    for byte in cost.hash {
        write!(writer, "{byte:02x}")?;
    }
    write!(writer, " {} {} ", cost.rest, cost.thinking)?;
    if cost.calls.is_empty() {
        writer.write_all(b"-")?;
    }
    for (i, call) in cost.calls.iter().enumerate() {
        if i > 0 {
            writer.write_all(b",")?;
        }
        write!(writer, "{call}")?;
    }
    writer.write_all(b"\n")
}

/// A line read with its end (`\n` or `\r\n`) taken off.
fn line_text(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

fn parse_line(line: &str) -> Result<(Seq, KeptCost), &'static str> {
    let mut words = line.split(' ');
    let mut word = |what| words.next().ok_or(what);
    let seq = word("no seq")?.parse().map_err(|_| "bad seq")?;
    let hex = word("no hash")?;
    let rest = word("no cost")?.parse().map_err(|_| "bad cost")?;
    let thinking = word("no thinking cost")?
        .parse()
        .map_err(|_| "bad thinking cost")?;
    let calls = match word("no call costs")? {
        "-" => Box::default(),
        list => list
            .split(',')
            .map(|c| c.parse().map_err(|_| "bad call cost"))
            .collect::<Result<_, _>>()?,
    };
    let mut hash = [0u8; 16];
    if hex.len() != 32 || !hex.is_ascii() {
        return Err("bad hash");
    }
    for (i, byte) in hash.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| "bad hash")?;
    }
    Ok((
        seq,
        KeptCost {
            hash,
            rest,
            thinking,
            calls,
        },
    ))
}

/// The content hash of `message`: its role and, block by block, a tag and
/// every field its cost depends on, each string length-prefixed so that no
/// two messages feed the same bytes. Ids (tool call ids) are left out:
/// they cost nothing.
pub fn content_hash(message: &Message) -> ContentHash {
    let mut hasher = Xxh3::new();
    feed_str(&mut hasher, message.role.as_str());
    for block in &message.content {
        feed_block(&mut hasher, block);
    }
    hasher.digest128().to_le_bytes()
}

fn feed_str(hasher: &mut Xxh3, text: &str) {
    hasher.update(&(text.len() as u64).to_le_bytes());
    hasher.update(text.as_bytes());
}

fn feed_json(hasher: &mut Xxh3, value: &impl serde::Serialize) {
    // Serialization into a hasher cannot fail on a Value or an ImageSource;
    // a failure would only make the hash differ, never match wrongly.
    let _ = serde_json::to_writer(HashWriter(hasher), value);
    hasher.update(&[0xff]);
}

fn feed_block(hasher: &mut Xxh3, block: &Block) {
    match block {
        Block::Text { text } => {
            hasher.update(&[1]);
            feed_str(hasher, text);
        }
        Block::Thinking {
            thinking,
            signature,
        } => {
            hasher.update(&[2]);
            feed_str(hasher, thinking);
            feed_str(hasher, signature.as_deref().unwrap_or(""));
        }
        Block::RedactedThinking { data } => {
            hasher.update(&[3]);
            feed_str(hasher, data);
        }
        Block::Native { provider, item } => {
            hasher.update(&[4]);
            feed_str(hasher, provider);
            feed_json(hasher, item);
        }
        Block::Image {
            source,
            width,
            height,
        } => {
            hasher.update(&[5]);
            match source {
                ImageSource::Base64 { media_type, data } => {
                    feed_str(hasher, media_type);
                    feed_str(hasher, data);
                }
                other => feed_json(hasher, other),
            }
            hasher.update(&width.map_or(u64::MAX, u64::from).to_le_bytes());
            hasher.update(&height.map_or(u64::MAX, u64::from).to_le_bytes());
        }
        Block::ToolCall {
            name, arguments, ..
        } => {
            hasher.update(&[6]);
            feed_str(hasher, name);
            match arguments {
                serde_json::Value::String(s) => {
                    hasher.update(&[0]);
                    feed_str(hasher, s);
                }
                other => {
                    hasher.update(&[1]);
                    feed_json(hasher, other);
                }
            }
        }
        Block::ToolResult {
            content, is_error, ..
        } => {
            hasher.update(&[7, u8::from(*is_error)]);
            hasher.update(&(content.len() as u64).to_le_bytes());
            for inner in content {
                feed_block(hasher, inner);
            }
        }
    }
}

/// Lets serde_json write straight into a hasher.
struct HashWriter<'a>(&'a mut Xxh3);

impl Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn cost(hash: ContentHash, calls: &[u64]) -> KeptCost {
        KeptCost {
            hash,
            rest: 40,
            thinking: 7,
            calls: calls.into(),
        }
    }

    #[test]
    fn a_written_set_reads_back_for_its_model_only() {
        let mut kept = KeptCounts::new("o200k:openai:1");
        kept.put(3, cost([1; 16], &[11, 12]));
        kept.put(0, cost([2; 16], &[]));
        assert!(kept.changed());
        let mut bytes = Vec::new();
        kept.write(&mut bytes).unwrap();
        assert!(!kept.changed());
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.starts_with("abridge-counts 2 o200k:openai:1\n0 0202"));
        assert_eq!(text.lines().count(), 3, "a header and the two seqs kept");
        let back = KeptCounts::read(bytes.as_slice(), "o200k:openai:1").unwrap();
        assert_eq!(back, kept);
        assert!(matches!(
            KeptCounts::read(bytes.as_slice(), "cl100k:openai:1"),
            Err(KeptError::OtherModel { .. })
        ));
    }

    #[test]
    fn corrupt_files_are_refused_naming_the_line() {
        let bad = "abridge-counts 2 m\n0 zz 1 2 -\n";
        assert_eq!(
            KeptCounts::read(bad.as_bytes(), "m")
                .unwrap_err()
                .to_string(),
            "kept counts: line 2 is malformed: bad hash"
        );
        let third = format!(
            "abridge-counts 2 m\r\n0 {} 1 2 -\r\n1 {} x 2 -\n",
            "ab".repeat(16),
            "cd".repeat(16)
        );
        assert_eq!(
            KeptCounts::read(third.as_bytes(), "m")
                .unwrap_err()
                .to_string(),
            "kept counts: line 3 is malformed: bad cost"
        );
        assert!(matches!(
            KeptCounts::read("garbage".as_bytes(), "m"),
            Err(KeptError::Header { .. })
        ));
        assert!(matches!(
            KeptCounts::read("abridge-counts 9 m\n".as_bytes(), "m"),
            Err(KeptError::Header { .. })
        ));
    }

    #[test]
    fn a_file_of_the_sha_256_version_is_refused_so_it_is_rebuilt() {
        let old = format!("abridge-counts 1 m\n0 {} 1 2 -\n", "ab".repeat(16));
        assert!(matches!(
            KeptCounts::read(old.as_bytes(), "m"),
            Err(KeptError::Header { .. })
        ));
    }

    #[test]
    fn replacing_a_count_keeps_one_per_seq() {
        let mut kept = KeptCounts::new("m");
        assert!(kept.is_empty());
        kept.put(5, cost([1; 16], &[]));
        kept.put(5, cost([2; 16], &[]));
        kept.put(2, cost([3; 16], &[]));
        assert_eq!(kept.len(), 2);
        assert!(
            kept.get(5, &[1; 16]).is_none(),
            "the first count was replaced"
        );
        assert!(kept.get(5, &[2; 16]).is_some());
        let mut bytes = Vec::new();
        kept.write(&mut bytes).unwrap();
        let seqs: Vec<&str> = std::str::from_utf8(&bytes)
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| l.split(' ').next().unwrap())
            .collect();
        assert_eq!(seqs, ["2", "5"]);
        assert_eq!(KeptCounts::read(bytes.as_slice(), "m").unwrap(), kept);
    }

    #[test]
    fn the_hash_is_xxh3_128_of_the_fed_fields() {
        // The role "user" length-prefixed, then a text block (tag 1) "hi"
        // length-prefixed: a change of hash function or feeding order
        // changes this, and needs a new KEPT_VERSION.
        let mut fed = Vec::new();
        fed.extend_from_slice(&4u64.to_le_bytes());
        fed.extend_from_slice(b"user");
        fed.push(1);
        fed.extend_from_slice(&2u64.to_le_bytes());
        fed.extend_from_slice(b"hi");
        assert_eq!(
            content_hash(&Message::user("hi")),
            xxhash_rust::xxh3::xxh3_128(&fed).to_le_bytes()
        );
    }

    #[test]
    fn a_stale_entry_is_not_returned() {
        let mut kept = KeptCounts::new("m");
        kept.put(1, cost([9; 16], &[]));
        assert!(kept.get(1, &[9; 16]).is_some());
        assert!(kept.get(1, &[8; 16]).is_none());
        assert!(kept.get(2, &[9; 16]).is_none());
    }

    #[test]
    fn the_hash_follows_what_the_cost_depends_on() {
        let a = Message::user("hello");
        assert_eq!(content_hash(&a), content_hash(&Message::user("hello")));
        assert_ne!(content_hash(&a), content_hash(&Message::user("hellp")));
        assert_ne!(content_hash(&a), content_hash(&Message::assistant("hello")));
        let call = |args: serde_json::Value| {
            let mut m = Message::assistant("");
            m.content.push(Block::ToolCall {
                id: "c1".into(),
                name: "read".into(),
                arguments: args,
            });
            m
        };
        assert_ne!(
            content_hash(&call(serde_json::json!({"path": "a"}))),
            content_hash(&call(serde_json::json!({"path": "b"})))
        );
        // Two texts "ab" + "c" and "a" + "bc" differ.
        let mut split1 = Message::user("ab");
        split1.content.push(Block::Text { text: "c".into() });
        let mut split2 = Message::user("a");
        split2.content.push(Block::Text { text: "bc".into() });
        assert_ne!(content_hash(&split1), content_hash(&split2));
    }
}
