//! Builders for the tests of this crate: sessions of tool calls and
//! results of exact token costs.

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Role;
use abridge_session::Seq;
use abridge_session::Session;
use serde_json::Value;

use abridge_compact::EstimateCounter;

/// A session being built.
pub(crate) struct Builder {
    pub(crate) session: Session,
    next_id: usize,
}

impl Builder {
    pub(crate) fn new() -> Self {
        let mut session = Session::in_memory("test");
        session.append_message(Message::user("start")).unwrap();
        Builder {
            session,
            next_id: 0,
        }
    }

    /// One call of `name` with `args`, answered by `text`; returns the
    /// result's seq.
    pub(crate) fn call(&mut self, name: &str, args: Value, text: &str) -> Seq {
        self.call_with(name, args, text, false, false)
    }

    pub(crate) fn call_with(
        &mut self,
        name: &str,
        args: Value,
        text: &str,
        is_error: bool,
        useless: bool,
    ) -> Seq {
        let id = format!("c{}", self.next_id);
        self.next_id += 1;
        self.session
            .append_message(Message {
                role: Role::Assistant,
                content: vec![Block::ToolCall {
                    id: id.clone(),
                    name: name.to_string(),
                    arguments: args,
                }],
                meta: Meta::default(),
            })
            .unwrap();
        let result = Message::tool_result(&id, text, is_error).with_meta(Meta {
            useless,
            ..Meta::default()
        });
        self.session.append_message(result).unwrap()
    }

    /// A `bash` call whose result costs exactly `tokens`.
    pub(crate) fn output(&mut self, tokens: u64) -> Seq {
        let id = format!("c{}", self.next_id);
        let text = text_for(&id, tokens);
        self.call("bash", serde_json::json!({"command": "make"}), &text)
    }

    pub(crate) fn say(&mut self, text: &str) -> Seq {
        self.session.append_message(Message::user(text)).unwrap()
    }
}

/// A text that makes a tool result for `id` cost exactly `tokens`.
pub(crate) fn text_for(id: &str, tokens: u64) -> String {
    let mut text = String::new();
    for _ in 0..tokens * 8 + 64 {
        let cost = EstimateCounter::estimate(&Message::tool_result(id, text.as_str(), false));
        if cost == tokens {
            return text;
        }
        text.push(if text.len() % 50 == 49 { '\n' } else { 'x' });
    }
    panic!("no text costs exactly {tokens} tokens for {id}");
}

/// The text of the tool result visible at `seq`.
pub(crate) fn result_text(session: &Session, seq: Seq) -> String {
    let message = session.message(seq).unwrap();
    let (_, content, _) = message.tool_result_block().unwrap();
    content
        .iter()
        .filter_map(Block::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks that every tool result on the surface answers a call made
/// before it on the surface, once, and returns the answered call ids in
/// order.
pub(crate) fn check_pairing(session: &Session) -> Vec<String> {
    let mut open: Vec<String> = Vec::new();
    let mut answered = Vec::new();
    for message in session.surface_messages() {
        for (id, _, _) in message.tool_calls() {
            open.push(id.to_string());
        }
        if message.role == Role::Tool {
            let (id, _, _) = message
                .tool_result_block()
                .expect("a tool message has a result");
            let at = open
                .iter()
                .position(|o| o == id)
                .unwrap_or_else(|| panic!("result {id} answers no open call"));
            open.remove(at);
            answered.push(id.to_string());
        }
    }
    answered
}
