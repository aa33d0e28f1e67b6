//! `abridge recall`: read back, search or list what compaction hid, as the
//! model's `recall` tool would answer, or as JSON for scripts.

use std::path::PathBuf;
use std::sync::Arc;

use abridge::recall::Recall;
use abridge_prune::ArtifactStore;
use abridge_prune::DirArtifactStore;
use anyhow::Context;

use crate::open::open_session;

/// Arguments of `abridge recall`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["reference", "query", "toc", "path"])))]
pub(crate) struct Args {
    /// The abridge session file.
    session: PathBuf,
    /// Read a reference: recall://SEQ, recall://FIRST-LAST,
    /// recall://SEQ#START-END or artifact://ID#START-END.
    #[arg(long = "ref", value_name = "REF")]
    reference: Option<String>,
    /// Search the hidden history for these words.
    #[arg(long, value_name = "WORDS", num_args = 1.., value_delimiter = None)]
    query: Option<Vec<String>>,
    /// List what each checkpoint on the surface hides, one line per turn.
    #[arg(long)]
    toc: bool,
    /// What the last successful read of this file returned, and whether
    /// a later call wrote it (the tool's `{"path": ...}`).
    #[arg(long, value_name = "FILE")]
    path: Option<String>,
    /// Which page of a long answer.
    #[arg(long, default_value_t = 1)]
    page: usize,
    /// Print JSON for scripts.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let (session, _) = open_session(&args.session, false)?;
    let dir = DirArtifactStore::dir_beside(&args.session);
    let artifacts: Option<Arc<dyn ArtifactStore>> = if dir.is_dir() {
        Some(Arc::new(DirArtifactStore::open(&dir).with_context(
            || format!("cannot open the artifact store {}", dir.display()),
        )?))
    } else {
        None
    };
    // As the model's tool answers: redacted unless the settings beside the
    // session allow the originals (`recall_originals`).
    let settings = abridge::Settings::beside_using(&args.session, crate::registry::registry())?
        .unwrap_or_default();
    let recall = Recall::open(&session, artifacts).with_redactor(settings.recall_redactor()?);
    let where_ = args.session.display();
    if let Some(reference) = &args.reference {
        let (title, page) = recall
            .read(&session, reference, args.page)
            .with_context(|| format!("--ref {reference} in {where_}"))?;
        if args.json {
            let value = serde_json::json!({
                "reference": reference.trim(), "title": title,
                "page": page.page, "pages": page.pages, "text": page.text,
            });
            println!("{}", serde_json::to_string_pretty(&value)?);
        } else {
            println!("{title} · page {} of {}", page.page, page.pages);
            print!("{}", page.text);
            if !page.text.ends_with('\n') {
                println!();
            }
        }
    } else if let Some(path) = &args.path {
        let arguments = serde_json::json!({"path": path, "page": args.page});
        let text = recall
            .answer(&session, &arguments)
            .with_context(|| format!("--path {path} in {where_}"))?;
        if args.json {
            let value = serde_json::json!({"path": path, "page": args.page, "text": text});
            println!("{}", serde_json::to_string_pretty(&value)?);
        } else {
            print!("{text}");
            if !text.ends_with('\n') {
                println!();
            }
        }
    } else if let Some(words) = &args.query {
        let query = words.join(" ");
        let found = recall
            .search(&session, &query, args.page)
            .with_context(|| format!("--query {query:?} in {where_}"))?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&found)?);
        } else if found.is_empty() {
            println!("nothing hidden in {where_} matches {query:?}");
        } else {
            for (i, f) in found.iter().enumerate() {
                println!(
                    "{}. {} · {} · score {:.2}",
                    i + 1,
                    f.reference,
                    f.kind,
                    f.score
                );
                println!("   {}", f.snippet);
            }
        }
    } else if args.json {
        let entries = abridge::recall::table_of_contents(&session);
        println!("{}", serde_json::to_string_pretty(&entries)?);
    } else {
        let page = recall
            .toc(&session, args.page)
            .with_context(|| format!("--toc of {where_}"))?;
        print!("{}", page.text);
    }
    Ok(())
}
