//! Where a surface's tokens go: by role, by tool, the largest items.
//!
//! For `abridge stats` and for anyone deciding what to prune: one pass over
//! the surface through a [`TokenMeter`], so the figures add up to the same
//! estimate the trigger uses.

use std::collections::BTreeMap;
use std::collections::HashMap;

use abridge_llm::Block;
use abridge_llm::Catalog;
use abridge_llm::Lookup;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_session::Seq;
use abridge_session::Session;
use serde::Serialize;

use crate::cost::MESSAGE_OVERHEAD;
use crate::meter::Measure;
use crate::meter::TokenMeter;

/// Tokens spent on one tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ToolTokens {
    /// Calls on the surface.
    pub calls: u64,
    /// Tokens of the call blocks (name, arguments, overhead).
    pub call_tokens: u64,
    /// Results on the surface.
    pub results: u64,
    /// Tokens of the result messages.
    pub result_tokens: u64,
}

/// One message on the surface and what it costs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Item {
    /// Its seq.
    pub seq: Seq,
    /// Its surface position.
    pub position: usize,
    /// Who speaks it.
    pub role: Role,
    /// The tool it calls or answers, when there is one.
    pub tool: Option<String>,
    /// Its cost.
    pub tokens: u64,
    /// The first characters of its text, for a person to recognise it.
    pub preview: String,
}

/// The token breakdown of a surface.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenStats {
    /// The tokenizer that counted (`o200k`, `cl100k`, `bytes/4`).
    pub tokenizer: String,
    /// Messages on the surface.
    pub messages: u64,
    /// The meter's measure (estimate, anchored, figure to act on).
    pub measure: Measure,
    /// Tokens by role name; sums to `measure.estimate`.
    pub by_role: BTreeMap<String, u64>,
    /// Tokens by tool name.
    pub by_tool: BTreeMap<String, ToolTokens>,
    /// Tokens of images and frames (included in `by_role`).
    pub image_tokens: u64,
    /// Images and frames on the surface.
    pub images: u64,
    /// The most expensive messages, largest first.
    pub largest: Vec<Item>,
}

/// Characters of text kept in [`Item::preview`].
pub const PREVIEW_CHARS: usize = 80;

/// The tool name used when a result's call cannot be found on the surface.
pub const UNKNOWN_TOOL: &str = "(unknown)";

/// Breaks down the surface of `session` as priced by `meter`, keeping the
/// `top` largest messages.
pub fn token_stats(meter: &mut TokenMeter, session: &Session, top: usize) -> TokenStats {
    let measure = meter.measure(session);
    let mut by_role: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_tool: BTreeMap<String, ToolTokens> = BTreeMap::new();
    let mut call_names: HashMap<String, String> = HashMap::new();
    let mut items = Vec::new();
    let (mut images, mut image_tokens) = (0, 0);
    let cost = meter.cost_model().clone();
    let seqs = session.surface().seqs().to_vec();
    for (position, &seq) in seqs.iter().enumerate() {
        let Some(message) = session.message(seq) else {
            continue;
        };
        // Every figure below comes from the meter's one count of this
        // message: a tool call's cost is kept beside the message's.
        let tokens = meter.seq_tokens(session, seq);
        *by_role
            .entry(message.role.as_str().to_string())
            .or_default() += tokens;
        let call_tokens = meter.call_tokens(session, seq).to_vec();
        let results = message
            .content
            .iter()
            .filter(|b| matches!(b, Block::ToolResult { .. }))
            .count();
        let mut calls_seen = 0;
        let mut tool = None;
        for block in &message.content {
            match block {
                Block::ToolCall { id, name, .. } => {
                    call_names.insert(id.clone(), name.clone());
                    let t = by_tool.entry(name.clone()).or_default();
                    t.calls += 1;
                    t.call_tokens += call_tokens.get(calls_seen).copied().unwrap_or(0);
                    calls_seen += 1;
                    tool.get_or_insert_with(|| name.clone());
                }
                Block::ToolResult { call_id, .. } => {
                    let name = match &message.meta.origin {
                        Some(Origin::Tool { name, .. }) => name.clone(),
                        _ => call_names
                            .get(call_id)
                            .cloned()
                            .unwrap_or_else(|| UNKNOWN_TOOL.to_string()),
                    };
                    let t = by_tool.entry(name.clone()).or_default();
                    t.results += 1;
                    // A tool message carries its one result: the message's
                    // cost is the result's. A message of several results
                    // (never written by abridge itself) prices each alone.
                    t.result_tokens += if results == 1 {
                        tokens
                    } else {
                        cost.block(block) + MESSAGE_OVERHEAD
                    };
                    tool.get_or_insert(name);
                }
                _ => {}
            }
            for_each_image(block, &mut |b| {
                images += 1;
                image_tokens += cost.block(b);
            });
        }
        items.push(Item {
            seq,
            position,
            role: message.role,
            tool,
            tokens,
            preview: preview(&message.plain_text()),
        });
    }
    items.sort_by(|a, b| b.tokens.cmp(&a.tokens).then(a.position.cmp(&b.position)));
    items.truncate(top);
    TokenStats {
        tokenizer: cost.tokenizer().name().to_string(),
        messages: seqs.len() as u64,
        measure,
        by_role,
        by_tool,
        image_tokens,
        images,
        largest: items,
    }
}

/// A surface's breakdown for the model named `model_id`, as `abridge stats
/// --model` shows it: the catalog lookup (so a caller can warn when the
/// figures are the conservative default) and the stats counted with that
/// model's tokenizer and image billing.
pub fn model_token_stats(
    catalog: &Catalog,
    model_id: &str,
    session: &Session,
    top: usize,
) -> (Lookup, TokenStats) {
    let lookup = catalog.lookup(model_id);
    let mut meter = TokenMeter::for_model(&lookup.entry);
    let stats = token_stats(&mut meter, session, top);
    (lookup, stats)
}

fn for_each_image(block: &Block, f: &mut impl FnMut(&Block)) {
    match block {
        Block::Image { .. } => f(block),
        Block::ToolResult { content, .. } => {
            for b in content {
                for_each_image(b, f);
            }
        }
        _ => {}
    }
}

fn preview(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(PREVIEW_CHARS) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use abridge_llm::ImageBilling;
    use abridge_llm::ImageSource;
    use abridge_llm::Message;
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::cost::CostModel;
    use crate::tokenizer::Estimate;

    #[test]
    fn breakdown_adds_up_and_names_tools() {
        let mut s = Session::in_memory("t");
        s.append_message(Message::system("be brief")).unwrap();
        s.append_message(Message::user("read it")).unwrap();
        let mut call = Message::assistant("reading");
        call.content.push(Block::ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: serde_json::json!({"path": "a.rs"}),
        });
        s.append_message(call).unwrap();
        let mut result = Message::tool_result("c1", "x".repeat(400), false);
        if let Block::ToolResult { content, .. } = &mut result.content[0] {
            content.push(Block::Image {
                source: ImageSource::Url { url: "u".into() },
                width: Some(1568),
                height: Some(1568),
            });
        }
        let r = s.append_message(result).unwrap();
        s.append_message(Message::tool_result("zz", "orphan", true))
            .unwrap();
        let mut meter =
            TokenMeter::new(CostModel::new(Arc::new(Estimate), ImageBilling::Anthropic));
        let stats = token_stats(&mut meter, &s, 2);
        assert_eq!(stats.messages, 5);
        assert_eq!(stats.by_role.values().sum::<u64>(), stats.measure.estimate);
        assert_eq!(stats.by_tool["read"].calls, 1);
        assert_eq!(stats.by_tool["read"].results, 1);
        assert_eq!(stats.by_tool[UNKNOWN_TOOL].results, 1);
        assert_eq!(stats.images, 1);
        assert_eq!(stats.image_tokens, 3293 + 2);
        assert_eq!(stats.largest.len(), 2);
        assert_eq!(stats.largest[0].seq, r);
        assert_eq!(stats.largest[0].tool.as_deref(), Some("read"));
        assert!(stats.largest[0].preview.ends_with('…'));
        assert_eq!(stats.tokenizer, "bytes/4");
    }

    #[test]
    fn model_stats_use_the_model_and_say_how_it_was_found() {
        let mut s = Session::in_memory("t");
        s.append_message(Message::user("模型的上下文窗口是有限的"))
            .unwrap();
        let catalog = abridge_llm::Catalog::builtin();
        let (lookup, stats) = model_token_stats(&catalog, "gpt-4-0613", &s, 5);
        assert_eq!(lookup.entry.id, "gpt-4");
        assert_eq!(stats.tokenizer, "cl100k");
        let (unknown, _) = model_token_stats(&catalog, "who-knows", &s, 5);
        assert!(unknown.is_default());
    }
}
