//! Tool-call ids made unique within one import.
//!
//! Some agents reuse a call id across turns (SWE-agent trajectories do).
//! Every provider pairs results with calls by id and rejects a request
//! holding two calls of one id, so a history with repeats cannot be sent
//! as it is. Each repeat gets the source id plus `_dupN` (N from 2, the
//! first free one), and a result naming the id is paired with the newest
//! call that had it, the pairing the source agent meant. The names are a
//! function of the file alone, so importing twice gives the same log.

use std::collections::HashMap;
use std::collections::HashSet;

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Origin;

/// The ids given so far, and what each source id now stands for.
#[derive(Debug, Default)]
pub(crate) struct CallIds {
    /// Every id given to a call of this import.
    given: HashSet<String>,
    /// Source id -> the id of the newest call the source wrote with it.
    newest: HashMap<String, String>,
}

impl CallIds {
    /// Gives each tool call of `message` an id no earlier call has, in
    /// place. Returns the `(source id, new id)` of every call renamed.
    pub(crate) fn claim(&mut self, message: &mut Message) -> Vec<(String, String)> {
        let mut renamed = Vec::new();
        for block in &mut message.content {
            let Block::ToolCall { id, .. } = block else {
                continue;
            };
            let source = id.clone();
            if self.given.contains(&source) {
                let fresh = (2u64..)
                    .map(|n| format!("{source}_dup{n}"))
                    .find(|candidate| !self.given.contains(candidate))
                    .unwrap_or_default();
                *id = fresh.clone();
                renamed.push((source.clone(), fresh));
            }
            self.given.insert(id.clone());
            self.newest.insert(source, id.clone());
        }
        renamed
    }

    /// Points the tool result of `message` (and its `Origin::Tool`) at the
    /// newest call that had its source id. Returns the id it now names.
    pub(crate) fn resolve(&self, message: &mut Message) -> Option<String> {
        let mut resolved = None;
        for block in &mut message.content {
            if let Block::ToolResult { call_id, .. } = block {
                if let Some(newest) = self.newest.get(call_id.as_str()) {
                    if let Some(Origin::Tool { call_id: named, .. }) = &mut message.meta.origin
                        && named == call_id
                    {
                        named.clone_from(newest);
                    }
                    call_id.clone_from(newest);
                }
                resolved = Some(call_id.clone());
            }
        }
        resolved
    }
}
