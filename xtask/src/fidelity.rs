//! `cargo xtask eval fidelity [SESSION...] [--window N] [--block NAME] [--probes] [--check]`:
//! what the model still knows after a compaction, model-free.
//!
//! For each session, a compaction point (where its own agent compacted,
//! else where the threshold fires; see `point`), an answer key drawn from
//! the history before it (`key`), and, for each method and the default
//! order, every probe graded as in context, one recall away or lost
//! (`score`). Where the session holds its agent's own compaction, that
//! summary is graded on the same key. Tables per session and pooled
//! (`report`); `--check` compares the pooled figures with the floors in
//! `check` and fails below them.

use std::path::Path;
use std::path::PathBuf;

use anyhow::Context;
use anyhow::bail;

mod check;
mod key;
#[cfg(test)]
mod key_tests;
mod point;
mod probe;
mod report;
mod run;
mod score;
mod text;

use report::SessionResult;

/// The command's options.
#[derive(Debug, Default)]
struct Options {
    sessions: Vec<PathBuf>,
    window: Option<u64>,
    block: Option<String>,
    check: bool,
    probes: bool,
}

fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut options = Options::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--check" => options.check = true,
            "--probes" => options.probes = true,
            "--window" => {
                let value = args.next().context("--window needs a number of tokens")?;
                options.window = Some(
                    value
                        .parse()
                        .with_context(|| format!("--window {value}: not a number of tokens"))?,
                );
            }
            "--block" => {
                options.block = Some(args.next().context("--block needs a name")?.clone());
            }
            flag if flag.starts_with("--") => bail!("unknown option {flag}"),
            path => options.sessions.push(PathBuf::from(path)),
        }
    }
    Ok(options)
}

/// The bundled sessions, sorted by name.
fn bundled(root: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let dir = root.join("assets/sessions");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl" || x == "traj"))
        .collect();
    paths.sort();
    Ok(paths)
}

/// Runs the command.
pub(crate) fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let options = parse(args)?;
    let paths = if options.sessions.is_empty() {
        bundled(root)?
    } else {
        options.sessions.clone()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut results = Vec::new();
    for path in &paths {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        println!("fidelity: {name} ...");
        let point = point::find(path, options.window)?;
        let key = key::derive(&point.prefix);
        if options.probes {
            for probe in &key.probes {
                println!("  {}: {}", probe.category, probe.text);
            }
        }
        let how = point.how.clone();
        let window = point.window;
        let graded = run::run_all(&runtime, point, &key)?;
        results.push(SessionResult {
            name,
            how,
            window,
            key,
            graded,
        });
    }
    let mut sections: Vec<_> = results.iter().map(report::session_section).collect();
    let mut methods: Vec<&str> = run::METHODS.iter().map(|(name, _)| *name).collect();
    methods.push(run::REAL);
    sections.push(report::pooled_section(&results, &methods));
    sections.push(report::targets_section(&results));
    for section in &sections {
        print!("{}", section.to_markdown());
    }
    if let Some(block) = &options.block {
        let command = format!("cargo xtask eval fidelity --block {block}");
        let title = format!("Fidelity after compaction (`{block}`)");
        crate::write_report(root, block, &title, &command, &sections)?;
    }
    if options.check {
        let failures = check::failures(&results);
        if !failures.is_empty() {
            for failure in &failures {
                eprintln!("fidelity: {failure}");
            }
            bail!("{} fidelity figure(s) below their floor", failures.len());
        }
        println!("fidelity: every figure at or above its floor");
    }
    Ok(())
}
