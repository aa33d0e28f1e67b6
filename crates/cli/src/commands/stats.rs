//! `abridge stats`: what a session holds and what the model sees of it.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::path::PathBuf;

use abridge_llm::Message;
use abridge_llm::Role;
use abridge_session::EventBody;
use abridge_session::Session;
use abridge_session::SurfaceOp;
use serde::Serialize;

use crate::open::open_session;

/// Arguments of `abridge stats`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The abridge session file.
    session: PathBuf,
    /// How many of the largest items to list.
    #[arg(long, default_value_t = 5)]
    top: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Everything `stats` reports, also its `--json` form.
#[derive(Debug, Serialize)]
pub(crate) struct Stats {
    pub(crate) events: usize,
    pub(crate) events_by_type: BTreeMap<String, usize>,
    pub(crate) branches: usize,
    pub(crate) active_path_len: usize,
    pub(crate) messages_by_role: BTreeMap<String, usize>,
    pub(crate) tool_calls: usize,
    pub(crate) tool_results: usize,
    pub(crate) tool_calls_by_name: BTreeMap<String, usize>,
    pub(crate) checkpoints: usize,
    pub(crate) rewrites: usize,
    pub(crate) surface_messages: usize,
    pub(crate) surface_bytes: usize,
    pub(crate) surface_generation: u64,
    pub(crate) log_message_bytes: usize,
    pub(crate) largest: Vec<Item>,
}

/// One large message.
#[derive(Debug, Serialize)]
pub(crate) struct Item {
    pub(crate) seq: u64,
    pub(crate) role: String,
    pub(crate) tool: Option<String>,
    pub(crate) bytes: usize,
    pub(crate) visible: bool,
    pub(crate) preview: String,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let (session, _) = open_session(&args.session, false)?;
    let stats = collect(&session, args.top);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&stats)?);
    } else {
        print!("{}", render(&args.session.display().to_string(), &stats));
    }
    Ok(())
}

pub(crate) fn collect(session: &Session, top: usize) -> Stats {
    let mut events_by_type = BTreeMap::new();
    let mut messages_by_role = BTreeMap::new();
    let mut tool_calls_by_name: BTreeMap<String, usize> = BTreeMap::new();
    let mut call_names: HashMap<String, String> = HashMap::new();
    let mut has_child = vec![false; session.len()];
    let (mut tool_calls, mut tool_results, mut checkpoints, mut rewrites) = (0, 0, 0, 0);
    let mut log_message_bytes = 0;
    let mut items = Vec::new();
    for event in session.events() {
        *events_by_type.entry(event.body.kind().to_string()).or_insert(0) += 1;
        if let Some(parent) = event.parent {
            if let Some(slot) = has_child.get_mut(parent as usize) {
                *slot = true;
            }
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
        *messages_by_role.entry(message.role.to_string()).or_insert(0) += 1;
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
        .map(|(name, count)| if *count > 1 { format!("{name}x{count}") } else { (*name).to_string() })
        .collect();
    (!listed.is_empty()).then(|| listed.join(","))
}

/// The first `width` characters of `text` on one line.
pub(crate) fn preview(text: &str, width: usize) -> String {
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

fn render(name: &str, stats: &Stats) -> String {
    let mut out = format!("session {name}\n");
    let join = |map: &BTreeMap<String, usize>| {
        map.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    out.push_str(&format!(
        "  events        {} ({})\n",
        stats.events,
        join(&stats.events_by_type)
    ));
    out.push_str(&format!(
        "  branches      {} (active path {} events)\n",
        stats.branches, stats.active_path_len
    ));
    out.push_str(&format!(
        "  messages      {}\n",
        join(&stats.messages_by_role)
    ));
    out.push_str(&format!(
        "  tool calls    {} calls, {} results\n",
        stats.tool_calls, stats.tool_results
    ));
    let mut by_name: Vec<(&String, &usize)> = stats.tool_calls_by_name.iter().collect();
    by_name.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    if !by_name.is_empty() {
        let top: Vec<String> = by_name
            .iter()
            .take(8)
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        out.push_str(&format!("  by tool       {}\n", top.join(", ")));
    }
    out.push_str(&format!(
        "  compactions   {} checkpoints, {} rewrites\n",
        stats.checkpoints, stats.rewrites
    ));
    out.push_str(&format!(
        "  surface       {} messages, {} bytes (log holds {} bytes of messages), generation {}\n",
        stats.surface_messages, stats.surface_bytes, stats.log_message_bytes, stats.surface_generation
    ));
    if !stats.largest.is_empty() {
        out.push_str("  largest items\n");
        for item in &stats.largest {
            out.push_str(&format!(
                "    #{:<6} {:<9} {:>9} bytes{} {}{}\n",
                item.seq,
                item.role,
                item.bytes,
                if item.visible { "" } else { " (hidden)" },
                item.tool
                    .as_ref()
                    .map(|t| format!("[{t}] "))
                    .unwrap_or_default(),
                item.preview
            ));
        }
    }
    out
}
