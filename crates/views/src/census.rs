//! What a session holds, counted: events, branches, messages, tools,
//! sizes. `abridge stats` prints it; the report's head table uses it.

use std::collections::BTreeMap;
use std::collections::HashMap;

use abridge_llm::Message;
use abridge_llm::Role;
use abridge_session::EventBody;
use abridge_session::Session;
use abridge_session::SurfaceOp;
use serde::Serialize;

/// Everything `stats` reports, also its `--json` form.
#[derive(Debug, Serialize)]
pub struct Stats {
    /// Events in the log.
    pub events: usize,
    /// Events per type.
    pub events_by_type: BTreeMap<String, usize>,
    /// Branch tips (leaves of the tree).
    pub branches: usize,
    /// Events on the active path.
    pub active_path_len: usize,
    /// Message events per role.
    pub messages_by_role: BTreeMap<String, usize>,
    /// Tool calls made.
    pub tool_calls: usize,
    /// Tool results appended (rewrites not counted).
    pub tool_results: usize,
    /// Tool calls per tool name.
    pub tool_calls_by_name: BTreeMap<String, usize>,
    /// Replace events (compaction checkpoints).
    pub checkpoints: usize,
    /// Rewrite events (pruned or shaken tool results).
    pub rewrites: usize,
    /// Messages the model sees.
    pub surface_messages: usize,
    /// Content bytes of those.
    pub surface_bytes: usize,
    /// The surface generation (grows on every replace or rewrite).
    pub surface_generation: u64,
    /// Content bytes of every message in the log.
    pub log_message_bytes: usize,
    /// The largest messages, biggest first.
    pub largest: Vec<Item>,
}

/// One large message.
#[derive(Debug, Serialize)]
pub struct Item {
    /// Its seq.
    pub seq: u64,
    /// Its role.
    pub role: String,
    /// The tool it calls or answers.
    pub tool: Option<String>,
    /// Content bytes.
    pub bytes: usize,
    /// True when it is on the surface.
    pub visible: bool,
    /// Its first words.
    pub preview: String,
}

/// Counts what `session` holds, listing its `top` largest messages.
pub fn collect(session: &Session, top: usize) -> Stats {
    let mut events_by_type = BTreeMap::new();
    let mut messages_by_role = BTreeMap::new();
    let mut tool_calls_by_name: BTreeMap<String, usize> = BTreeMap::new();
    let mut call_names: HashMap<String, String> = HashMap::new();
    let mut has_child = vec![false; session.len()];
    let (mut tool_calls, mut tool_results, mut checkpoints, mut rewrites) = (0, 0, 0, 0);
    let mut log_message_bytes = 0;
    let mut items = Vec::new();
    for event in session.events() {
        *events_by_type
            .entry(event.body.kind().to_string())
            .or_insert(0) += 1;
        if let Some(slot) = event.parent.and_then(|p| has_child.get_mut(p as usize)) {
            *slot = true;
        }
        let EventBody::Message(m) = &event.body else {
            continue;
        };
        match m.op {
            SurfaceOp::Replace { .. } => checkpoints += 1,
            SurfaceOp::Rewrite { .. } => rewrites += 1,
            SurfaceOp::Append => {}
        }
        let message = &m.message;
        *messages_by_role
            .entry(message.role.to_string())
            .or_insert(0) += 1;
        for (id, name, _) in message.tool_calls() {
            tool_calls += 1;
            *tool_calls_by_name.entry(name.to_string()).or_insert(0) += 1;
            call_names.insert(id.to_string(), name.to_string());
        }
        if message.role == Role::Tool && m.op == SurfaceOp::Append {
            tool_results += 1;
        }
        let bytes = message.content_bytes();
        log_message_bytes += bytes;
        items.push((event.seq, bytes));
    }
    let branches = session
        .events()
        .iter()
        .filter(|e| !has_child[e.seq as usize])
        .filter(|e| !matches!(e.body, EventBody::Leaf) || Some(e.seq) == session.leaf())
        .count();
    items.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let largest = items
        .into_iter()
        .take(top)
        .filter_map(|(seq, bytes)| {
            let message = session.message(seq)?;
            Some(Item {
                seq,
                role: message.role.to_string(),
                tool: tool_name(message, &call_names),
                bytes,
                visible: session.surface().contains(seq),
                preview: preview(&message.plain_text(), 60),
            })
        })
        .collect();
    let surface_bytes = session
        .surface_messages()
        .iter()
        .map(|m| m.content_bytes())
        .sum();
    Stats {
        events: session.len(),
        events_by_type,
        branches,
        active_path_len: session.active_path().len(),
        messages_by_role,
        tool_calls,
        tool_results,
        tool_calls_by_name,
        checkpoints,
        rewrites,
        surface_messages: session.surface().len(),
        surface_bytes,
        surface_generation: session.surface().generation(),
        log_message_bytes,
        largest,
    }
}

fn tool_name(message: &Message, call_names: &HashMap<String, String>) -> Option<String> {
    if let Some((id, _, _)) = message.tool_result_block() {
        return call_names.get(id).cloned();
    }
    let mut names: Vec<(&str, usize)> = Vec::new();
    for (_, name, _) in message.tool_calls() {
        match names.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => *count += 1,
            None => names.push((name, 1)),
        }
    }
    let listed: Vec<String> = names
        .iter()
        .map(|(name, count)| {
            if *count > 1 {
                format!("{name}x{count}")
            } else {
                (*name).to_string()
            }
        })
        .collect();
    (!listed.is_empty()).then(|| listed.join(","))
}

/// The first `width` characters of `text` on one line.
pub fn preview(text: &str, width: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .collect();
    let flat = flat.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > width {
        let cut: String = flat.chars().take(width.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        flat
    }
}
