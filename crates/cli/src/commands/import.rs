//! `abridge import`: another agent's session file to an abridge log.

use std::path::PathBuf;

use std::cell::RefCell;
use std::rc::Rc;

use abridge::import;
use abridge_meter::CostModel;
use abridge_meter::KeptError;
use abridge_meter::KeptFile;
use abridge_meter::KeptWriter;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::Seq;
use anyhow::Context;
use serde::Serialize;

/// Arguments of `abridge import`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The session file to convert.
    file: PathBuf,
    /// Where to write the abridge log (default: FILE with its extension
    /// replaced by `.abridge.jsonl`). It must not exist yet.
    #[arg(short, long)]
    out: Option<PathBuf>,
    /// The source format, for a file whose format detection cannot tell
    /// (pi, claude-code, codex, swe-agent, aider, openhands); a file that
    /// reads as another format is refused, naming the one found.
    #[arg(long)]
    format: Option<import::Format>,
    /// Which session of a file that holds several (aider chats, OpenHands
    /// evaluation records), counting from 1 (default: the last one with a
    /// message).
    #[arg(long, value_name = "N")]
    session: Option<usize>,
    /// List the sessions the file holds (number, start time, messages,
    /// tokens) instead of importing one; writes nothing.
    #[arg(long, conflicts_with_all = ["out", "session"])]
    list: bool,
    /// Most pixels an image may claim, by its header or its stated size
    /// (default 50,000,000). An image past it stops the import, naming
    /// the line; raise it for a session that holds very large
    /// screenshots. The cap is there because an image's header can claim
    /// far more pixels than its bytes, and decoding it would take that
    /// much memory.
    #[arg(long, value_name = "PIXELS")]
    max_image_pixels: Option<u64>,
    /// Print the import report as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    if args.list {
        return list(args);
    }
    let out = args.out.clone().unwrap_or_else(|| default_out(&args.file));
    if out.exists() {
        anyhow::bail!(
            "{}: already exists; choose another path with -o, or remove it first (abridge never overwrites a session)",
            out.display()
        );
    }
    let progress = crate::progress::Progress::start("importing", true);
    let options = read_options(args);
    // Read once for the header, the report and the model; then again,
    // each event written as it comes, never all held at once.
    let checked = import::check_with(&args.file, &options).map_err(|error| match error {
        import::ImportError::ImageTooLarge { .. } => {
            anyhow::anyhow!("{error}; raise the cap with --max-image-pixels")
        }
        other => other.into(),
    })?;
    let store = JsonlStore::open(&out, JsonlOptions::default())?;
    // Each message is counted once, now, for the model that wrote the
    // session; later commands read the counts back instead of tokenizing.
    let entry = crate::model::named_or_default(checked.last_model.as_deref()).entry;
    let counts = KeptFile::beside(&out);
    let counting = Rc::new(RefCell::new(Counting::start(&counts, &entry)));
    let watch = {
        let counting = Rc::clone(&counting);
        move |seq, draft: &abridge_session::Draft| counting.borrow_mut().count(seq, draft)
    };
    let written = checked
        .write(Box::new(store), watch)
        .with_context(|| format!("cannot write {}", out.display()))?;
    counting.borrow_mut().finish(&counts);
    progress.finish();
    let report = written.report;
    if args.json {
        let value = serde_json::json!({
            "out": out.display().to_string(),
            "events": written.events,
            "surface_messages": written.surface_messages,
            "report": report,
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        println!(
            "imported {} -> {} ({} events, {} messages visible)",
            args.file.display(),
            out.display(),
            written.events,
            written.surface_messages
        );
        println!("{report}");
    }
    Ok(())
}

fn read_options(args: &Args) -> import::ReadOptions {
    import::ReadOptions {
        format: args.format,
        session: args.session,
        max_image_pixels: args
            .max_image_pixels
            .unwrap_or(abridge_llm::DEFAULT_MAX_IMAGE_PIXELS),
        ..import::ReadOptions::default()
    }
}

/// One session of a file, as `--list` shows it.
#[derive(Debug, Serialize)]
struct Listed {
    /// Its number, for `--session`.
    session: usize,
    /// When it started, as the file says (the import's time when it says
    /// nothing).
    started: String,
    /// Messages it holds.
    messages: usize,
    /// What its history costs the model that wrote it (the conservative
    /// default model when it names none), as `stats` counts it.
    tokens: u64,
}

/// `--list`: every session of the file, read one at a time, written
/// nowhere.
fn list(args: &Args) -> anyhow::Result<()> {
    let mut listed = Vec::new();
    let options = read_options(args);
    import::each_session(&args.file, &options, &mut |imported| {
        let session = imported.report.session.max(1);
        let started = imported.header.created.clone();
        let messages = imported.report.message_count();
        let tokens = tokens_of(imported);
        listed.push(Listed {
            session,
            started,
            messages,
            tokens,
        });
        Ok(())
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&listed)?);
        return Ok(());
    }
    println!(
        "{:>7}  {:<25}  {:>8}  {:>9}",
        "session", "started", "messages", "tokens"
    );
    for row in &listed {
        println!(
            "{:>7}  {:<25}  {:>8}  {:>9}",
            row.session, row.started, row.messages, row.tokens
        );
    }
    Ok(())
}

/// The tokens of an imported session's history, for the model that wrote
/// it; 0 for a session the log refuses (its import would fail the same
/// way, and say why).
fn tokens_of(imported: import::Imported) -> u64 {
    let Ok((session, _)) = imported.into_session(Box::new(abridge_session::MemoryStore::new()))
    else {
        return 0;
    };
    let model = crate::model::last_model(&session);
    let entry = crate::model::named_or_default(model.as_deref()).entry;
    abridge::compact::host::MeterCounter::for_model(&entry)
        .measure(&session)
        .tokens
}

/// The counts file being written as the events go by. A failure is a
/// note, not an error: the counts are a cache, made again on first use.
enum Counting {
    Writing(KeptWriter),
    /// Not kept for this model, or given up after a failure.
    Off(Option<KeptError>),
}

impl Counting {
    fn start(file: &KeptFile, entry: &abridge_llm::ModelEntry) -> Self {
        match file.writer(CostModel::for_model(entry)) {
            Ok(Some(writer)) => Counting::Writing(writer),
            Ok(None) => Counting::Off(None),
            Err(error) => Counting::Off(Some(error)),
        }
    }

    /// Counts `draft`, written at `seq`.
    fn count(&mut self, seq: Seq, draft: &abridge_session::Draft) {
        let Counting::Writing(writer) = self else {
            return;
        };
        if let abridge_session::EventBody::Message(event) = &draft.body
            && let Err(error) = writer.count(seq, &event.message)
        {
            *self = Counting::Off(Some(error));
        }
    }

    fn finish(&mut self, file: &KeptFile) {
        let failed = match std::mem::replace(self, Counting::Off(None)) {
            Counting::Writing(writer) => writer.finish().err(),
            Counting::Off(error) => error,
        };
        if let Some(error) = failed {
            eprintln!("note: {}: {error}; counts not kept", file.path().display());
        }
    }
}

fn default_out(file: &std::path::Path) -> PathBuf {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".to_string());
    file.with_file_name(format!("{stem}.abridge.jsonl"))
}
