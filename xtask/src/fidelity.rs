//! `cargo xtask eval fidelity [SESSION...] [--window N] [--block NAME] [--probes] [--check]`:
//! what the model still knows after a compaction, model-free.
//! With `--llm URL --llm-model NAME [--methods a,b]`, the LLM mode (`llm`):
//! the probes are asked of that model over each method's context.
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

mod ask;
#[cfg(test)]
mod ask_tests;
mod check;
mod counting;
mod key;
#[cfg(test)]
mod key_tests;
mod llm;
mod llm_report;
mod point;
mod probe;
mod report;
mod run;
mod score;
mod text;

pub(crate) use llm::LlmOptions;
pub(crate) use llm_report::LlmSessionResult;
use report::SessionResult;

/// The command's options.
#[derive(Debug, Default)]
struct Options {
    sessions: Vec<PathBuf>,
    window: Option<u64>,
    block: Option<String>,
    check: bool,
    probes: bool,
    /// The LLM mode's endpoint (`--llm`), model and knobs.
    llm: Option<String>,
    llm_model: Option<String>,
    methods: Option<Vec<String>>,
    api_key_env: Option<String>,
    llm_input_tokens: Option<u64>,
    llm_max_output: Option<u32>,
    llm_timeout: Option<u64>,
    messages: Option<usize>,
}

/// The value after `flag`, parsed.
fn value<T: std::str::FromStr>(
    args: &mut std::slice::Iter<'_, String>,
    flag: &str,
    what: &str,
) -> anyhow::Result<T> {
    let value = args
        .next()
        .with_context(|| format!("{flag} needs {what}"))?;
    value
        .parse()
        .map_err(|_| anyhow::anyhow!("{flag} {value}: not {what}"))
}

impl Options {
    /// The LLM mode's options, when `--llm` was given.
    fn llm(&self) -> anyhow::Result<Option<LlmOptions>> {
        let Some(url) = &self.llm else {
            if self.llm_model.is_some() || self.methods.is_some() || self.messages.is_some() {
                bail!(
                    "--llm-model, --methods and --messages belong to the LLM mode: pass --llm URL too"
                );
            }
            return Ok(None);
        };
        let model = self
            .llm_model
            .as_deref()
            .context("--llm needs --llm-model NAME")?;
        if self.check {
            bail!(
                "--check compares the model-free figures with their floors; the LLM mode has none"
            );
        }
        let mut options = LlmOptions::new(url, model);
        options.api_key_env = self.api_key_env.clone();
        options.methods = self.methods.clone();
        options.input_tokens = self.llm_input_tokens;
        options.max_output = self.llm_max_output;
        options.messages = self.messages;
        if let Some(secs) = self.llm_timeout {
            options.timeout = std::time::Duration::from_secs(secs.max(1));
        }
        options.selected()?;
        Ok(Some(options))
    }
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
            "--llm" => options.llm = Some(value(&mut args, arg, "a URL")?),
            "--llm-model" => options.llm_model = Some(value(&mut args, arg, "a model name")?),
            "--api-key-env" => {
                options.api_key_env = Some(value(&mut args, arg, "a variable name")?);
            }
            "--methods" => {
                let list: String = value(&mut args, arg, "a list of methods")?;
                options.methods = Some(list.split(',').map(|m| m.trim().to_string()).collect());
            }
            "--llm-input-tokens" => {
                options.llm_input_tokens = Some(value(&mut args, arg, "a number of tokens")?);
            }
            "--llm-max-output" => {
                options.llm_max_output = Some(value(&mut args, arg, "a number of tokens")?);
            }
            "--messages" => {
                options.messages = Some(value(&mut args, arg, "a number of messages")?);
            }
            "--llm-timeout" => {
                options.llm_timeout = Some(value(&mut args, arg, "a number of seconds")?);
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
    if let Some(llm) = options.llm()? {
        let results = run_llm(&paths, options.window, &llm)?;
        let sections = llm_report::sections(&results, &llm.model);
        for section in &sections {
            print!("{}", section.to_markdown());
        }
        if let Some(block) = &options.block {
            let command = format!(
                "cargo xtask eval fidelity --llm URL --llm-model {} --block {block}",
                llm.model
            );
            let title = format!("Fidelity asked of a model (`{block}`)");
            crate::write_report(root, block, &title, &command, &sections)?;
        }
        return Ok(());
    }
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

/// The LLM mode over `paths`: each session's point and key, every
/// selected method run and asked through `options`' endpoint.
pub(crate) fn run_llm(
    paths: &[PathBuf],
    window: Option<u64>,
    options: &LlmOptions,
) -> anyhow::Result<Vec<LlmSessionResult>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let client = options.client()?;
    let mut results = Vec::new();
    for path in paths {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        println!("fidelity --llm {}: {name} ...", options.model);
        let point = match options.messages {
            Some(cut) => point::find_cut(path, window, cut)?,
            None => point::find(path, window)?,
        };
        let key = key::derive(&point.prefix);
        let how = point.how.clone();
        let window = point.window;
        let graded = runtime.block_on(llm::run_all(point, &key, options, &client))?;
        results.push(LlmSessionResult {
            name,
            how,
            window,
            key,
            graded,
        });
    }
    Ok(results)
}

/// Categories of `key` that have probes: one question each.
pub(crate) fn categories_asked(key: &key::Key) -> usize {
    probe::Category::ALL
        .iter()
        .filter(|c| key.of(**c).next().is_some())
        .count()
}

/// The LLM mode's tables for `results`, asked of `model`.
pub(crate) fn llm_sections(
    results: &[LlmSessionResult],
    model: &str,
) -> Vec<crate::bench::Section> {
    llm_report::sections(results, model)
}
