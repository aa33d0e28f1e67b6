//! What `cargo xtask fuzz` feeds damaged input to, where each target's
//! seeds come from, and the rule its result must obey: no panic, and an
//! error either about the whole file or naming a line (or field).

use std::path::Path;
use std::path::PathBuf;

use abridge_import::Format;
use abridge_import::ImportError;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::MemoryStore;
use abridge_session::Session;
use abridge_session::SessionError;
use abridge_session::StoreError;
use anyhow::Context;

/// One thing the fuzzer exercises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// The JSONL loader (`JsonlStore::load`), strict and salvaging.
    Session,
    /// One importer, by format.
    Import(Format),
    /// `Session::open` and the surface validator (`abridge check`).
    Check,
    /// The snapcompact serializer and text normalizer.
    Snapcompact,
}

impl Target {
    pub(crate) const ALL: [Target; 9] = [
        Target::Session,
        Target::Import(Format::Pi),
        Target::Import(Format::ClaudeCode),
        Target::Import(Format::Codex),
        Target::Import(Format::SweAgent),
        Target::Import(Format::Aider),
        Target::Import(Format::OpenHands),
        Target::Check,
        Target::Snapcompact,
    ];

    /// The name used on the command line and as the regression folder.
    pub(crate) fn name(self) -> String {
        match self {
            Target::Session => "session".to_string(),
            Target::Import(format) => format!("import-{}", format.name()),
            Target::Check => "check".to_string(),
            Target::Snapcompact => "snapcompact".to_string(),
        }
    }

    pub(crate) fn by_name(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The extension regression files of this target get.
    pub(crate) fn extension(self) -> &'static str {
        match self {
            Target::Import(Format::SweAgent) => "traj",
            Target::Import(Format::Aider) => "md",
            Target::Import(Format::OpenHands) => "json",
            _ => "jsonl",
        }
    }

    /// Whether the seed is one JSON document rather than JSON lines: such
    /// seeds are pretty-printed first, so line mutations reach inside.
    pub(crate) fn is_document(self) -> bool {
        matches!(
            self,
            Target::Import(Format::SweAgent) | Target::Import(Format::OpenHands)
        )
    }
}

/// The workspace root, where assets/ and tests/data live.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The folder of saved failing inputs of `target`.
pub(crate) fn regression_dir(target: Target) -> PathBuf {
    root()
        .join("tests/data/fuzz-regressions")
        .join(target.name())
}

/// The real inputs mutations start from: the bundled samples (the same
/// files as test-support's `samples` module) and the importers' test data.
pub(crate) fn seeds(target: Target, scratch: &Path) -> anyhow::Result<Vec<Vec<u8>>> {
    let sessions = root().join("assets/sessions");
    let import_data = root().join("crates/import/tests/data");
    let read = |path: PathBuf| {
        std::fs::read(&path).with_context(|| format!("cannot read seed {}", path.display()))
    };
    let mut seeds = match target {
        Target::Import(Format::Pi) => vec![read(sessions.join("pi-mono__large-session.jsonl"))?],
        Target::Import(Format::ClaudeCode) => {
            vec![read(sessions.join("claude-code__spotter__4d5611e5.jsonl"))?]
        }
        Target::Import(Format::Codex) => vec![read(
            sessions.join("codex__localpush__rollout-2026-02-23T12-54-34-redacted.jsonl"),
        )?],
        Target::Import(Format::SweAgent) => vec![read(
            sessions.join("swe-agent__marshmallow-1867__function_calling_replace_from_source.traj"),
        )?],
        Target::Import(Format::Aider) => vec![read(import_data.join("aider-three-chats.md"))?],
        Target::Import(Format::OpenHands) => vec![
            read(import_data.join("openhands-trajectory.json"))?,
            read(import_data.join("openhands-output.jsonl"))?,
        ],
        // Our own format: the pi and Claude samples imported and written
        // by the JSONL store.
        Target::Session | Target::Check | Target::Snapcompact => {
            let mut logs = Vec::new();
            for name in [
                "pi-mono__large-session.jsonl",
                "claude-code__spotter__4d5611e5.jsonl",
            ] {
                logs.push(own_log(&sessions.join(name), scratch)?);
            }
            logs
        }
    };
    if target.is_document() {
        for seed in &mut seeds {
            if let Ok(value) = serde_json::from_slice::<serde_json::Value>(seed) {
                *seed = serde_json::to_vec_pretty(&value)?;
            }
        }
    }
    Ok(seeds)
}

/// `sample` imported and written as an abridge log; its bytes.
fn own_log(sample: &Path, scratch: &Path) -> anyhow::Result<Vec<u8>> {
    let imported = abridge_import::read(sample, None)?;
    let path = scratch.join(format!("seed-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let store = JsonlStore::open(&path, JsonlOptions::default())?;
    let (session, _) = imported.into_session(Box::new(store))?;
    drop(session);
    let bytes = std::fs::read(&path)?;
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(path.with_extension("jsonl.lock"));
    Ok(bytes)
}

/// How a target took an input that obeyed the rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Read without error (damage the format tolerates, or none that hit).
    Accepted,
    /// Refused with a typed error saying where.
    Refused,
}

/// Runs `target` on `input`. `Ok` when it accepted the input or refused it
/// with a typed error that says where; `Err` says what broke the rule (a
/// panic is caught by the caller).
pub(crate) fn run(target: Target, input: &[u8], scratch: &Path) -> Result<Verdict, String> {
    match target {
        Target::Session => {
            let path = write_input(input, scratch)?;
            let mut verdict = Verdict::Accepted;
            for salvage in [false, true] {
                let options = JsonlOptions {
                    salvage,
                    read_only: true,
                    ..JsonlOptions::default()
                };
                match JsonlStore::open(&path, options)
                    .and_then(|mut s| abridge_session::SessionStore::load(&mut s).map(|_| ()))
                {
                    Ok(()) => {}
                    Err(e) => {
                        store_error_located(&e)?;
                        verdict = Verdict::Refused;
                    }
                }
            }
            Ok(verdict)
        }
        Target::Import(format) => {
            let file = format!("fuzz.{}", target.extension());
            match abridge_import::read_bytes(&file, input, Some(format)) {
                Ok(imported) => imported
                    .into_session(Box::new(MemoryStore::new()))
                    .map(|_| Verdict::Accepted)
                    .map_err(|e| format!("the importer's events were refused: {e}")),
                Err(e) => import_error_located(&e).map(|()| Verdict::Refused),
            }
        }
        Target::Check => {
            let path = write_input(input, scratch)?;
            let options = JsonlOptions {
                salvage: true,
                read_only: true,
                ..JsonlOptions::default()
            };
            let store = JsonlStore::open(&path, options).map_err(|e| e.to_string())?;
            match Session::open(Box::new(store)) {
                Ok((session, _)) => {
                    // Violations are findings about the input, not failures.
                    let _ = abridge_compact::check::check_invariants(&session);
                    Ok(Verdict::Accepted)
                }
                Err(e) => session_error_located(&e).map(|()| Verdict::Refused),
            }
        }
        Target::Snapcompact => {
            let text = String::from_utf8_lossy(input);
            let mut messages = Vec::new();
            for line in text.lines() {
                if let Ok(event) = abridge_session::decode_event(line)
                    && let Some(message) = event.message()
                {
                    messages.push(message.clone());
                }
            }
            let runs = abridge_snapcompact::serialize(
                &messages,
                &abridge_snapcompact::SerializeConfig::default(),
            );
            let printed = abridge_snapcompact::plain_text(&runs);
            std::hint::black_box(abridge_snapcompact::normalize(&printed));
            std::hint::black_box(abridge_snapcompact::normalize(&text));
            Ok(Verdict::Accepted)
        }
    }
}

/// The input as a file in `scratch` (one per process, overwritten).
fn write_input(input: &[u8], scratch: &Path) -> Result<PathBuf, String> {
    let path = scratch.join(format!("input-{}.jsonl", std::process::id()));
    std::fs::write(&path, input).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// Store errors all name the file; those about content name the line.
fn store_error_located(error: &StoreError) -> Result<(), String> {
    match error {
        StoreError::Corrupt { line, .. } | StoreError::LineTooLong { line, .. } if *line > 0 => {
            Ok(())
        }
        StoreError::BadHeader { .. } | StoreError::NotCreated { .. } => Ok(()),
        other => Err(format!("store error without a line: {other}")),
    }
}

fn session_error_located(error: &SessionError) -> Result<(), String> {
    match error {
        SessionError::Invalid { .. } => Ok(()),
        SessionError::Store(e) => store_error_located(e),
        other => Err(format!("session error without a line: {other}")),
    }
}

/// Import errors about content name a line, or a field of a document.
fn import_error_located(error: &ImportError) -> Result<(), String> {
    match error {
        ImportError::Json { line, .. }
        | ImportError::Utf8 { line, .. }
        | ImportError::TooLong { line, .. }
        | ImportError::Truncated { line, .. }
            if *line > 0 =>
        {
            Ok(())
        }
        ImportError::Field { field, line, .. } if line.is_some() || !field.is_empty() => Ok(()),
        ImportError::Empty { .. }
        | ImportError::UnknownFormat { .. }
        | ImportError::NoMessages { .. }
        | ImportError::NoSuchSession { .. } => Ok(()),
        other => Err(format!("import error without a line or field: {other}")),
    }
}
