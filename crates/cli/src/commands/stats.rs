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
    /// Price the surface for this model (default: the model that wrote the
    /// session's last assistant message).
    #[arg(long)]
    model: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// `stats` and its token section together, the `--json` form.
#[derive(Debug, Serialize)]
struct Full<'a> {
    #[serde(flatten)]
    stats: &'a Stats,
    model: String,
    context_window: u64,
    tokens: &'a abridge_meter::TokenStats,
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
    let (model, lookup) = crate::model::resolve(&session, args.model.as_deref());
    let mut meter = abridge_meter::TokenMeter::for_model(&lookup.entry);
    crate::kept::load(&mut meter, &args.session);
    let tokens = abridge_meter::token_stats(&mut meter, &session, args.top);
    crate::kept::save(&mut meter, &args.session);
    if args.json {
        let full = Full {
            stats: &stats,
            model,
            context_window: lookup.entry.context_window,
            tokens: &tokens,
        };
        println!("{}", serde_json::to_string_pretty(&full)?);
    } else {
        print!("{}", render(&args.session.display().to_string(), &stats));
        print!(
            "{}",
            render_tokens(&model, lookup.entry.context_window, &tokens)
        );
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
        stats.surface_messages,
        stats.surface_bytes,
        stats.log_message_bytes,
        stats.surface_generation
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

fn render_tokens(model: &str, window: u64, tokens: &abridge_meter::TokenStats) -> String {
    let measure = &tokens.measure;
    let mut out = format!(
        "tokens for {model} (window {window})\n  surface       {} to act on ({:.1}% of the window): estimate {}, anchored {}{}\n",
        measure.tokens,
        100.0 * measure.tokens as f64 / window.max(1) as f64,
        measure.estimate,
        measure
            .anchored
            .map_or_else(|| "none".to_string(), |a| a.to_string()),
        measure
            .ratio
            .map(|r| format!(", reported/estimated {r:.2}"))
            .unwrap_or_default()
    );
    let roles: Vec<String> = tokens
        .by_role
        .iter()
        .map(|(role, count)| format!("{role} {count}"))
        .collect();
    out.push_str(&format!("  by role       {}\n", roles.join(", ")));
    if tokens.images > 0 {
        out.push_str(&format!(
            "  images        {} ({} tokens)\n",
            tokens.images, tokens.image_tokens
        ));
    }
    let mut tools: Vec<(&String, &abridge_meter::ToolTokens)> = tokens.by_tool.iter().collect();
    tools.sort_by(|a, b| {
        (b.1.call_tokens + b.1.result_tokens)
            .cmp(&(a.1.call_tokens + a.1.result_tokens))
            .then(a.0.cmp(b.0))
    });
    for (name, tool) in tools.iter().take(8) {
        out.push_str(&format!(
            "  tool {:<9}{:>7} tokens in {} results, {} tokens in {} calls\n",
            name, tool.result_tokens, tool.results, tool.call_tokens, tool.calls
        ));
    }
    if !tokens.largest.is_empty() {
        out.push_str("  costliest messages\n");
        for item in &tokens.largest {
            out.push_str(&format!(
                "    #{:<6} {:<9} {:>7} tokens {}{}\n",
                item.seq,
                item.role,
                item.tokens,
                item.tool
                    .as_ref()
                    .map(|t| format!("[{t}] "))
                    .unwrap_or_default(),
                preview(&item.preview, 60)
            ));
        }
    }
    out
}
