//! Redaction of messages: every text a model or a reader could see (text,
//! visible reasoning, tool arguments, tool results), with unchanged
//! messages shared rather than copied.

use std::borrow::Cow;
use std::sync::Arc;

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::SharedMessage;
use serde_json::Value;

use super::Redactor;

impl Redactor {
    /// `message` with its secrets replaced, or `None` when it holds none.
    /// Images, opaque reasoning and provider-native items are left as they
    /// are: they are not text a summarizer reads.
    pub fn redact_message(&self, message: &Message) -> Option<Message> {
        let content = self.redact_blocks(&message.content)?;
        Some(Message {
            role: message.role,
            content,
            meta: message.meta.clone(),
        })
    }

    /// `message` redacted, sharing the original when it holds no secret.
    pub fn redact_shared(&self, message: &SharedMessage) -> SharedMessage {
        match self.redact_message(message) {
            Some(redacted) => Arc::new(redacted),
            None => Arc::clone(message),
        }
    }

    /// Every message of `messages` redacted, as [`redact_shared`](Self::redact_shared).
    pub fn redact_messages(&self, messages: &[SharedMessage]) -> Vec<SharedMessage> {
        messages.iter().map(|m| self.redact_shared(m)).collect()
    }

    /// `value` with every string in it redacted, or `None` when none held
    /// a secret. Object keys are kept.
    pub fn redact_json(&self, value: &Value) -> Option<Value> {
        match value {
            Value::String(text) => match self.redact(text) {
                Cow::Owned(redacted) => Some(Value::String(redacted)),
                Cow::Borrowed(_) => None,
            },
            Value::Array(items) => {
                let redacted: Vec<Option<Value>> =
                    items.iter().map(|v| self.redact_json(v)).collect();
                redacted.iter().any(Option::is_some).then(|| {
                    Value::Array(
                        redacted
                            .into_iter()
                            .zip(items)
                            .map(|(new, old)| new.unwrap_or_else(|| old.clone()))
                            .collect(),
                    )
                })
            }
            Value::Object(map) => {
                let mut changed = false;
                let redacted = map
                    .iter()
                    .map(|(key, v)| {
                        let new = self.redact_json(v);
                        changed |= new.is_some();
                        (key.clone(), new.unwrap_or_else(|| v.clone()))
                    })
                    .collect();
                changed.then_some(Value::Object(redacted))
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => None,
        }
    }

    /// `blocks` redacted, or `None` when none held a secret.
    fn redact_blocks(&self, blocks: &[Block]) -> Option<Vec<Block>> {
        let redacted: Vec<Option<Block>> = blocks.iter().map(|b| self.redact_block(b)).collect();
        if redacted.iter().all(Option::is_none) {
            return None;
        }
        Some(
            redacted
                .into_iter()
                .zip(blocks)
                .map(|(new, old)| new.unwrap_or_else(|| old.clone()))
                .collect(),
        )
    }

    fn redact_block(&self, block: &Block) -> Option<Block> {
        match block {
            Block::Text { text } => match self.redact(text) {
                Cow::Owned(text) => Some(Block::Text { text }),
                Cow::Borrowed(_) => None,
            },
            // A signature covers the original reasoning; it cannot vouch
            // for the redacted text, so it goes with the change.
            Block::Thinking { thinking, .. } => match self.redact(thinking) {
                Cow::Owned(thinking) => Some(Block::Thinking {
                    thinking,
                    signature: None,
                }),
                Cow::Borrowed(_) => None,
            },
            Block::ToolCall {
                id,
                name,
                arguments,
            } => self
                .redact_json(arguments)
                .map(|arguments| Block::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments,
                }),
            Block::ToolResult {
                call_id,
                content,
                is_error,
            } => self
                .redact_blocks(content)
                .map(|content| Block::ToolResult {
                    call_id: call_id.clone(),
                    content,
                    is_error: *is_error,
                }),
            _ => None,
        }
    }
}
