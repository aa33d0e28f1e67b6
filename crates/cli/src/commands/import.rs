//! `abridge import`: another agent's session file to an abridge log.

use std::path::PathBuf;

use abridge::import;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use anyhow::Context;

/// Arguments of `abridge import`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The session file to convert.
    file: PathBuf,
    /// Where to write the abridge log (default: FILE with its extension
    /// replaced by `.abridge.jsonl`). It must not exist yet.
    #[arg(short, long)]
    out: Option<PathBuf>,
    /// The source format, when detection guesses wrong
    /// (pi, claude-code, codex, swe-agent, aider, openhands).
    #[arg(long)]
    format: Option<import::Format>,
    /// Which session of a file that holds several (aider chats, OpenHands
    /// evaluation records), counting from 1 (default: the last one with a
    /// message).
    #[arg(long, value_name = "N")]
    session: Option<usize>,
    /// Print the import report as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let out = args.out.clone().unwrap_or_else(|| default_out(&args.file));
    if out.exists() {
        anyhow::bail!(
            "{}: already exists; choose another path with -o, or remove it first (abridge never overwrites a session)",
            out.display()
        );
    }
    let progress = crate::progress::Progress::start("importing", true);
    let imported = import::read_with(
        &args.file,
        &import::ReadOptions {
            format: args.format,
            session: args.session,
            ..import::ReadOptions::default()
        },
    )?;
    let store = JsonlStore::open(&out, JsonlOptions::default())?;
    let (session, report) = imported
        .into_session(Box::new(store))
        .with_context(|| format!("cannot write {}", out.display()))?;
    // Each message is counted once, now, for the model that wrote the
    // session; later commands read the counts back instead of tokenizing.
    let mut meter =
        abridge_meter::TokenMeter::for_model(&crate::model::last_or_default(&session).entry);
    crate::kept::load(&mut meter, &out);
    meter.measure(&session);
    crate::kept::save(&mut meter, &out);
    progress.finish();
    if args.json {
        let value = serde_json::json!({
            "out": out.display().to_string(),
            "events": session.len(),
            "surface_messages": session.surface().len(),
            "report": report,
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        println!(
            "imported {} -> {} ({} events, {} messages visible)",
            args.file.display(),
            out.display(),
            session.len(),
            session.surface().len()
        );
        println!("{report}");
    }
    Ok(())
}

fn default_out(file: &std::path::Path) -> PathBuf {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".to_string());
    file.with_file_name(format!("{stem}.abridge.jsonl"))
}
