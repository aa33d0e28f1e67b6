//! `abridge branch`: list a session's branches, or move to one (appending a
//! `leaf` event, so the move survives a restart), optionally leaving a
//! summary of the branch left behind.

use std::path::PathBuf;

use abridge::basic::BranchConfig;
use abridge::compact::host::MeterCounter;
use abridge::compact::host::NoHooks;
use abridge::session::EventBody;
use abridge::session::Seq;
use abridge::session::Session;
use serde::Serialize;

use crate::model;
use crate::open::open_session;
use crate::redaction::RedactArgs;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    session: PathBuf,
    /// Move to the branch ending at this event's seq.
    #[arg(long, value_name = "SEQ")]
    to: Option<Seq>,
    /// With --to: append a summary of the branch left behind (model-free
    /// digest) where the new branch continues.
    #[arg(long, requires = "to")]
    summary: bool,
    /// The model to count tokens for (default: the session's last).
    #[arg(long)]
    model: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    redact: RedactArgs,
}

/// One branch: the tip event and what it holds.
#[derive(Debug, Serialize)]
struct Branch {
    tip: Seq,
    active: bool,
    events: usize,
    messages: usize,
    last_message: String,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let (mut session, _) = open_session(&args.session, args.to.is_some())?;
    if let Some(target) = args.to {
        anyhow::ensure!(
            session.event(target).is_some(),
            "--to {target}: the session has events 0..{}",
            session.len()
        );
        let (_, lookup) = model::resolve(&session, args.model.as_deref());
        let counter = MeterCounter::for_model(&lookup.entry);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let summary = if args.summary {
            let (_, summary) = runtime.block_on(abridge::basic::navigate_with_summary(
                &mut session,
                Some(target),
                None,
                &NoHooks,
                &counter,
                BranchConfig {
                    redactor: args.redact.redactor(&args.session)?,
                    ..BranchConfig::default()
                },
            ))?;
            summary
        } else {
            session.navigate(Some(target))?;
            None
        };
        session.sync()?;
        if !args.json {
            match summary {
                Some(seq) => {
                    println!("moved to {target}; the branch left behind is summarized at {seq}")
                }
                None => println!("moved to {target}"),
            }
        }
    }
    let branches = branches(&session);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&branches)?);
        return Ok(());
    }
    println!(
        "{:>6}  {:>6}  {:>8}  {:<6}  last message",
        "tip", "events", "messages", ""
    );
    for b in &branches {
        println!(
            "{:>6}  {:>6}  {:>8}  {:<6}  {}",
            b.tip,
            b.events,
            b.messages,
            if b.active { "active" } else { "" },
            b.last_message
        );
    }
    Ok(())
}

/// Every branch tip (an event nothing continues from; navigation markers
/// other than the current one are not tips), oldest first.
fn branches(session: &Session) -> Vec<Branch> {
    let events = session.events();
    let mut has_child = vec![false; events.len()];
    for event in events {
        if let Some(parent) = event.parent
            && let Some(slot) = has_child.get_mut(parent as usize)
        {
            *slot = true;
        }
    }
    let active_leaf = session.leaf();
    events
        .iter()
        .filter(|e| !has_child[e.seq as usize])
        .filter(|e| !matches!(e.body, EventBody::Leaf) || Some(e.seq) == active_leaf)
        .map(|tip| {
            let path = session.path_to(Some(tip.seq));
            let messages: Vec<Seq> = path
                .iter()
                .copied()
                .filter(|s| session.message(*s).is_some())
                .collect();
            let last_message = messages
                .last()
                .and_then(|s| session.message(*s))
                .map(|m| {
                    let text = m.plain_text().replace('\n', " ");
                    let short: String = text.chars().take(60).collect();
                    format!("{}: {short}", m.role)
                })
                .unwrap_or_default();
            Branch {
                tip: tip.seq,
                active: Some(tip.seq) == active_leaf,
                events: path.len(),
                messages: messages.len(),
                last_message,
            }
        })
        .collect()
}
