//! `abridge pin`: keep a message or a text in front of the model through
//! every compaction (a `pin` event in the log), take a pin back (an
//! `unpin` event naming it: `--remove`), or list the live pins.

use std::path::PathBuf;

use abridge_session::Pin;
use abridge_session::Unpin;
use anyhow::Context;

use crate::open::open_session;

/// Arguments of `abridge pin`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The abridge session file.
    session: PathBuf,
    /// The seq of the message to pin (see `abridge context --json` or
    /// `abridge stats`); without it and without `--text`, the pins are
    /// listed.
    #[arg(conflicts_with_all = ["text", "remove"])]
    seq: Option<u64>,
    /// A text to pin, such as a standing instruction.
    #[arg(long, value_name = "TEXT", conflicts_with = "remove")]
    text: Option<String>,
    /// Takes back the pin written at this seq (the `pin N` a listing
    /// shows): no request carries it any more. The pin event stays in
    /// the log; an `unpin` event names it.
    #[arg(long, value_name = "PIN")]
    remove: Option<u64>,
    /// Print JSON for scripts.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    if let Some(pin) = args.remove {
        return unpin(args, pin);
    }
    let pin = match (args.seq, &args.text) {
        (Some(seq), _) => Some(Pin::message(seq, abridge::USER_PIN)),
        (None, Some(text)) => Some(Pin::text(text.clone(), abridge::USER_PIN)),
        (None, None) => None,
    };
    let (mut session, _) = open_session(&args.session, pin.is_some())?;
    let where_ = args.session.display();
    if let Some(pin) = pin {
        session
            .check_pin(&pin)
            .map_err(|reason| anyhow::anyhow!("pin refused: {reason}; nothing was written"))
            .with_context(|| format!("pinning in {where_}"))?;
        let at = session.append(pin.draft())?;
        session.sync()?;
        if args.json {
            println!("{}", serde_json::json!({"pinned": at}));
        } else {
            println!("pinned at seq {at}");
        }
        return Ok(());
    }
    let (_, lookup) = crate::model::resolve(&session, None);
    let meter = abridge_meter::TokenMeter::for_model(&lookup.entry);
    let pins = crate::commands::pins::rows(&session, meter.cost_model());
    if args.json {
        println!("{}", serde_json::to_string_pretty(&pins)?);
    } else if pins.is_empty() {
        println!("no pins in {where_}");
    } else {
        for row in &pins {
            println!("{}", row.line());
        }
    }
    Ok(())
}

/// `--remove PIN`: an unpin event, after checking it names a live pin.
fn unpin(args: &Args, pin: u64) -> anyhow::Result<()> {
    let (mut session, _) = open_session(&args.session, true)?;
    let unpin = Unpin::new(pin);
    session
        .check_unpin(&unpin)
        .map_err(|reason| anyhow::anyhow!("unpin refused: {reason}; nothing was written"))
        .with_context(|| format!("unpinning in {}", args.session.display()))?;
    let at = session.append(unpin.draft())?;
    session.sync()?;
    if args.json {
        println!("{}", serde_json::json!({"unpinned": pin, "at": at}));
    } else {
        println!("unpinned pin {pin} at seq {at}");
    }
    Ok(())
}
