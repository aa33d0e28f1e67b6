//! One agent conversation: its abridge session (through a [`Harness`]),
//! the agent's history items as first seen, and which log messages each
//! run of items became. From these the outgoing history is rebuilt after
//! a compaction: every item whose messages are all still on the surface
//! goes out as the agent wrote it (the same bytes each turn, so the
//! compacted prefix stays cacheable), and what abridge wrote instead
//! (a checkpoint, a pruned result, the hidden pins: `pins.rs`) goes out
//! through abridge-llm's encoder.

use std::collections::HashMap;
use std::collections::HashSet;
use std::ops::Range;

use abridge::Harness;
use abridge::HarnessError;
use abridge_llm::Message;
use abridge_session::Seq;
use serde_json::Value;

use crate::decode::item_messages;
use crate::dialect::Dialect;
use crate::encode::Encoders;
use crate::pins::HiddenPins;

mod branch;

pub use branch::TYPE_PROXY_BRANCH;

/// A run of history items and the log messages it stands for.
#[derive(Debug)]
struct Group {
    items: Range<usize>,
    seqs: Vec<Seq>,
}

/// One conversation's state; the registry keeps it behind an async lock
/// held from a request's arrival until its reply is recorded.
#[derive(Debug)]
pub(crate) struct Conversation {
    pub(crate) id: String,
    dialect: Dialect,
    harness: Harness,
    items: Vec<Value>,
    groups: Vec<Group>,
    group_of: HashMap<Seq, usize>,
    /// The last reply recorded, until the agent's next request shows its
    /// copy of it.
    pending_reply: Option<Seq>,
    /// Replies the agent did not send back (a retry, an abandoned turn):
    /// left out of rebuilt requests.
    dropped: HashSet<Seq>,
    /// `hashes[k]` names the head and the first `k + 1` items, as the
    /// registry hashed them ([`crate::identity`]): what a request is
    /// compared with to find where it leaves this conversation.
    hashes: Vec<u64>,
}

impl Conversation {
    pub(crate) fn new(id: String, dialect: Dialect, harness: Harness) -> Self {
        Conversation {
            id,
            dialect,
            harness,
            items: Vec::new(),
            groups: Vec::new(),
            group_of: HashMap::new(),
            pending_reply: None,
            dropped: HashSet::new(),
            hashes: Vec::new(),
        }
    }

    /// How many of the agent's items are known.
    pub(crate) fn known(&self) -> usize {
        self.items.len()
    }

    pub(crate) fn harness(&self) -> &Harness {
        &self.harness
    }

    /// Takes in the items after the known prefix: the agent's copy of the
    /// last reply is tied to the reply already logged; the rest is
    /// appended to the log.
    ///
    /// # Errors
    /// When the log refuses a message.
    pub(crate) fn absorb(&mut self, new: &[Value]) -> Result<(), HarnessError> {
        let mut taken = 0;
        if let Some(reply) = self.pending_reply.take() {
            let parts = new
                .iter()
                .take_while(|item| self.dialect.is_reply_part(item))
                .count();
            let parts = if self.dialect.reply_spans_items() {
                parts
            } else {
                parts.min(1)
            };
            if parts == 0 || !self.is_copy_of(reply, &new[..parts]) {
                self.dropped.insert(reply);
                self.leave_reply(reply);
            } else {
                self.push_group(&new[..parts], vec![reply]);
                taken = parts;
            }
        }
        for item in &new[taken..] {
            let mut seqs = Vec::new();
            for message in item_messages(self.dialect, item) {
                seqs.push(crate::pins::append_marked(&self.harness, message)?);
            }
            self.push_group(std::slice::from_ref(item), seqs);
        }
        Ok(())
    }

    /// Whether `items` (the agent's copy of the last reply) make the same
    /// tool calls as the reply logged at `reply`. An agent that sends back
    /// other calls than the model made (it edited its history, or the
    /// upstream answered a different turn) gets its own version logged, so
    /// the results that follow answer calls the log holds.
    fn is_copy_of(&self, reply: Seq, items: &[Value]) -> bool {
        let logged: Vec<String> = {
            let session = self
                .harness
                .session()
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match session.message(reply) {
                Some(message) => message
                    .tool_calls()
                    .map(|(id, _, _)| id.to_string())
                    .collect(),
                None => return false,
            }
        };
        let sent: Vec<String> = items
            .iter()
            .flat_map(|item| item_messages(self.dialect, item))
            .flat_map(|message| {
                message
                    .tool_calls()
                    .map(|(id, _, _)| id.to_string())
                    .collect::<Vec<_>>()
            })
            .collect();
        logged == sent
    }

    fn push_group(&mut self, items: &[Value], seqs: Vec<Seq>) {
        let start = self.items.len();
        self.items.extend_from_slice(items);
        let index = self.groups.len();
        for seq in &seqs {
            self.group_of.insert(*seq, index);
        }
        self.groups.push(Group {
            items: start..self.items.len(),
            seqs,
        });
    }

    /// Logs the model's reply. It is synced with the rest of the log by
    /// the store's interval ([`crate::open_stores`]), not here: a sync per
    /// turn would hold the conversation's lock, and so the agent's next
    /// request, for the disk's latency.
    ///
    /// # Errors
    /// When the log refuses it.
    pub(crate) fn record(&mut self, reply: Message) -> Result<(), HarnessError> {
        let seq = self.harness.append(reply)?;
        if let Some(earlier) = self.pending_reply.replace(seq) {
            self.dropped.insert(earlier);
        }
        crate::upkeep::after_reply(&self.harness, &self.id);
        Ok(())
    }

    /// Whether abridge has changed the history: then the agent's request
    /// is rebuilt; until then it goes out byte for byte.
    pub(crate) fn compacted(&self) -> bool {
        let session = self
            .harness
            .session()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        session.surface().generation() > 0
    }

    /// The history to send instead of the agent's: the surface, item by
    /// item where the agent's items are intact, encoded where abridge
    /// wrote something. Intact items are taken from `current`, the
    /// agent's request (the same history as first seen, up to where its
    /// cache marks now are), so the request carries the agent's marks
    /// and no stale ones.
    ///
    /// # Errors
    /// When a message abridge wrote cannot be encoded.
    pub(crate) fn rebuilt_items(
        &self,
        current: &[Value],
        encoders: &Encoders,
    ) -> Result<Vec<Value>, abridge_llm::LlmError> {
        let (surface, messages, mut pins): (Vec<Seq>, HashMap<Seq, Message>, HiddenPins) = {
            let session = self
                .harness
                .session()
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let surface = session.surface().seqs().to_vec();
            let messages = surface
                .iter()
                .filter(|seq| !self.group_of.contains_key(seq))
                .filter_map(|seq| session.message(*seq).map(|m| (*seq, (**m).clone())))
                .collect();
            (surface, messages, HiddenPins::of(&session))
        };
        let visible: HashSet<Seq> = surface.iter().copied().collect();
        let mut out = Vec::new();
        let mut loose = Vec::new();
        let mut sent = HashSet::new();
        for (index, seq) in surface.iter().enumerate() {
            pins.before(index, &mut loose);
            if self.dropped.contains(seq) {
                continue;
            }
            let intact = self
                .group_of
                .get(seq)
                .filter(|g| self.groups[**g].seqs.iter().all(|s| visible.contains(s)));
            match intact {
                Some(group) => {
                    if sent.insert(*group) {
                        out.extend(encode_loose(
                            encoders,
                            self.dialect,
                            std::mem::take(&mut loose),
                        )?);
                        let range = self.groups[*group].items.clone();
                        let from = current.get(range.clone()).unwrap_or(&self.items[range]);
                        out.extend(from.iter().cloned());
                    }
                }
                None => {
                    let session_message = messages.get(seq).cloned().or_else(|| self.logged(*seq));
                    loose.extend(session_message);
                }
            }
        }
        pins.rest(&mut loose);
        out.extend(encode_loose(encoders, self.dialect, loose)?);
        Ok(out)
    }

    fn logged(&self, seq: Seq) -> Option<Message> {
        let session = self
            .harness
            .session()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        session.message(seq).map(|m| (**m).clone())
    }
}

fn encode_loose(
    encoders: &Encoders,
    dialect: Dialect,
    loose: Vec<Message>,
) -> Result<Vec<Value>, abridge_llm::LlmError> {
    if loose.is_empty() {
        return Ok(Vec::new());
    }
    encoders.items(dialect, loose)
}
