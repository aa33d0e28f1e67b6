//! `abridge stats`: what a session holds and what the model sees of it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use abridge_views::Stats;
use abridge_views::collect;
use abridge_views::preview;
use serde::Serialize;

use crate::limits::WindowArg;
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
    /// The context window in tokens (default: the model's); the limits
    /// printed (threshold, goal, retention) follow from it as `compact`'s
    /// do.
    #[command(flatten)]
    window: WindowArg,
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
    limits: abridge::Limits,
    tokens: &'a abridge_meter::TokenStats,
    pins: Vec<crate::commands::pins::Row>,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let (session, _) = open_session(&args.session, false)?;
    let stats = collect(&session, args.top);
    let (model, lookup) = crate::model::resolve(&session, args.model.as_deref());
    let limits = args
        .window
        .limits(&args.session, lookup.entry.context_window)?;
    let mut meter = abridge_meter::TokenMeter::for_model(&lookup.entry);
    // Read-only: the counts kept beside the session are read, and what is
    // counted anew stays in memory (only commands that write keep counts).
    crate::kept::load(&mut meter, &args.session);
    let tokens = abridge_meter::token_stats(&mut meter, &session, args.top);
    let pins = crate::commands::pins::rows(&session, meter.cost_model());
    if args.json {
        let full = Full {
            stats: &stats,
            model,
            context_window: limits.window,
            limits,
            tokens: &tokens,
            pins,
        };
        println!("{}", serde_json::to_string_pretty(&full)?);
    } else {
        print!("{}", render(&args.session.display().to_string(), &stats));
        print!("{}", render_tokens(&model, &limits, &tokens));
        print!("{}", crate::commands::pins::render(&pins));
    }
    Ok(())
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

fn render_tokens(
    model: &str,
    limits: &abridge::Limits,
    tokens: &abridge_meter::TokenStats,
) -> String {
    let measure = &tokens.measure;
    let window = limits.window;
    let mut out = format!(
        "tokens for {model} (window {window})\n  limits        threshold {}, goal {}, keep {}\n  surface       {} to act on ({:.1}% of the window): estimate {}, anchored {}{}\n",
        limits.threshold,
        limits.target,
        limits.keep,
        measure.tokens,
        100.0 * measure.tokens as f64 / window.max(1) as f64,
        measure.estimate,
        measure
            .anchored
            .map_or_else(|| "none".to_string(), |a| a.to_string()),
        measure
            .overhead
            .map(|o| format!(", overhead beyond the log {o}"))
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
