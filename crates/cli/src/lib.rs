//! The `abridge` command line: inspect, import, compact and render agent
//! sessions.
//!
//! The `abridge` binary is [`main_with`] over the built-in methods. A
//! binary that embeds the command line with its own compaction methods
//! registers them and calls the same function; they can then be named in
//! `--method`, settings files, `compact`, `simulate` and `serve`:
//!
//! ```no_run
//! use std::process::ExitCode;
//! use std::sync::Arc;
//! # use abridge::compact::{CompactionMethod, MethodError, MethodOutput, Plan};
//! # #[derive(Debug)]
//! # struct KeepEnds { n: usize }
//! # #[async_trait::async_trait]
//! # impl CompactionMethod for KeepEnds {
//! #     fn name(&self) -> &str { "keep-ends" }
//! #     async fn run(&self, _: &Plan) -> Result<MethodOutput, MethodError> { unimplemented!() }
//! # }
//!
//! fn main() -> ExitCode {
//!     let mut registry = abridge::MethodRegistry::builtin();
//!     // `KeepEnds` is the method of docs/writing-a-compaction-method.md.
//!     let added = registry.register("keep-ends", |_| Ok(Arc::new(KeepEnds { n: 2 })));
//!     if let Err(error) = added {
//!         eprintln!("error: {error}");
//!         return ExitCode::FAILURE;
//!     }
//!     abridge_cli::main_with(registry)
//! }
//! ```

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod commands;
mod error_line;
mod kept;
mod limits;
mod methods;
mod model;
mod open;
mod progress;
mod redaction;
mod registry;

use clap::Parser;
use clap::Subcommand;

/// Keep long LLM agent sessions usable: convert another agent's session to
/// an abridge log, then inspect, shrink and replay it with the commands
/// below.
// The summary is this comment, not the package description: a list of
// commands there went stale as commands were added.
#[derive(Debug, Parser)]
#[command(name = "abridge", version, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log verbosity for diagnostics on stderr (error, warn, info, debug,
    /// trace, or a filter such as `abridge_serve=debug`). Without it,
    /// `RUST_LOG` is read; without that, `info` for `serve` (its access
    /// log) and `error` for the rest.
    #[arg(long, global = true)]
    log: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Convert another agent's session file (pi, Claude Code, Codex,
    /// SWE-agent, aider, OpenHands) into an abridge log, or list the
    /// sessions it holds.
    Import(commands::import::Args),
    /// Summarize a session: events, branches, messages, tools, sizes and
    /// tokens.
    Stats(commands::stats::Args),
    /// Compact a session with one or more methods (tried in turn), appending
    /// the result.
    Compact(Box<commands::compact::Args>),
    /// Print exactly the messages the model would receive next.
    Context(commands::context::Args),
    /// Read back, search or list what compaction hid from the model
    /// (`--ref`, `--query`, `--toc`).
    Recall(commands::recall::Args),
    /// Pin a message (by seq) or a text so that every request carries it
    /// verbatim whatever compaction hides; without either, list the pins.
    Pin(commands::pin::Args),
    /// Check a session's invariants (tool pairing, checkpoints, sources).
    Check(commands::check::Args),
    /// Print text or a session's visible history onto PNG frames, as
    /// snapcompact shows it to a vision model.
    Render(commands::render::Args),
    /// Write one self-contained HTML page showing a session: transcript,
    /// compaction dividers, frames inline and a token chart.
    Report(commands::report::Args),
    /// List a session's branches, or move to one (optionally summarizing
    /// the branch left behind).
    Branch(commands::branch::Args),
    /// After a crash: move a torn tail to a sidecar file and close
    /// compaction starts that were never ended; or copy what parses of a
    /// broken log into a new one (`--salvage-to`).
    Repair(commands::repair::Args),
    /// Replay a recorded session under a given window and methods: when
    /// compaction fires and what the input tokens cost.
    Simulate(Box<commands::simulate::Args>),
    /// Serve sessions over HTTP to agents in any language (bearer tokens,
    /// one directory of sessions per tenant).
    Serve(Box<commands::serve::Args>),
    /// Sit between an unmodified agent and its model endpoint (OpenAI or
    /// Anthropic wire): log its sessions and compact them in flight.
    Proxy(Box<commands::proxy::Args>),
}

/// A reader that goes away (`abridge context s.jsonl | head`) makes the
/// next print fail with a broken pipe; exit quietly then, as other Unix
/// tools do, instead of panicking with a backtrace.
fn quiet_on_broken_pipe() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to std") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        default_hook(info);
    }));
}

/// The log filter: `--log` when given, else `RUST_LOG` when set, else the
/// command's default (`serve` logs each request at `info`).
fn log_filter<'a>(flag: Option<&'a str>, env: Option<&'a str>, command: &Command) -> &'a str {
    if let Some(flag) = flag {
        return flag;
    }
    match env {
        Some(env) if !env.trim().is_empty() => env,
        _ if matches!(command, Command::Serve(_) | Command::Proxy(_)) => "info",
        _ => "error",
    }
}

/// Runs the command line on the process's arguments with the methods of
/// `registry`, and returns the exit status.
pub fn main_with(registry: abridge::MethodRegistry) -> std::process::ExitCode {
    run(std::env::args_os(), registry)
}

/// Runs the command line on `args` (the program name first) with the
/// methods of `registry`. The registry is the process's from the first
/// call on: a later call's is ignored.
pub fn run<I, T>(args: I, registry: abridge::MethodRegistry) -> std::process::ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    quiet_on_broken_pipe();
    registry::install(registry);
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(error) => error.exit(),
    };
    let env = std::env::var("RUST_LOG").ok();
    let filter = tracing_subscriber::EnvFilter::try_new(log_filter(
        cli.log.as_deref(),
        env.as_deref(),
        &cli.command,
    ))
    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init()
        .ok();
    let done = |result: anyhow::Result<()>| result.map(|()| std::process::ExitCode::SUCCESS);
    let result = match cli.command {
        Command::Import(args) => done(commands::import::run(&args)),
        Command::Stats(args) => done(commands::stats::run(&args)),
        // compact has an exit status of its own for a pass that landed
        // short of its goal.
        Command::Compact(args) => commands::compact::run(&args),
        Command::Context(args) => done(commands::context::run(&args)),
        Command::Check(args) => done(commands::check::run(&args)),
        Command::Recall(args) => done(commands::recall::run(&args)),
        Command::Pin(args) => done(commands::pin::run(&args)),
        Command::Render(args) => done(commands::render::run(&args)),
        Command::Report(args) => done(commands::report::run(&args)),
        Command::Simulate(args) => done(commands::simulate::run(&args)),
        Command::Branch(args) => done(commands::branch::run(&args)),
        Command::Repair(args) => done(commands::repair::run(&args)),
        Command::Serve(args) => done(commands::serve::run(&args)),
        Command::Proxy(args) => done(commands::proxy::run(&args)),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", error_line::error_line(&error));
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Issue 28: `RUST_LOG` was ignored.
    #[test]
    fn the_flag_then_rust_log_then_the_commands_default() {
        let serve = Cli::parse_from(["abridge", "serve", "--store", "s", "--tokens-env", "T"]);
        let stats = Cli::parse_from(["abridge", "stats", "s.jsonl"]);
        assert_eq!(
            log_filter(Some("debug"), Some("trace"), &serve.command),
            "debug"
        );
        assert_eq!(
            log_filter(None, Some("abridge_serve=debug"), &serve.command),
            "abridge_serve=debug"
        );
        assert_eq!(log_filter(None, None, &serve.command), "info");
        assert_eq!(log_filter(None, Some(" "), &stats.command), "error");
        assert_eq!(log_filter(None, None, &stats.command), "error");
    }
}
