//! Where a session is compacted for the benchmark: where its own agent
//! compacted, else where the threshold fires at the chosen window.

use std::path::Path;
use std::sync::Arc;

use abridge::Harness;
use abridge::Settings;
use abridge_llm::Message;
use abridge_llm::Role;
use abridge_session::MemoryStore;
use abridge_session::Session;
use abridge_session::SurfaceOp;
use anyhow::Context;

/// The model every run is shaped and priced for: it reads images, so
/// snapcompact can run.
pub(crate) const MODEL: &str = "claude-sonnet-4-5";
/// The window for a session's own compaction: the model's.
pub(crate) const OWN_WINDOW: u64 = 200_000;
/// The window a session without its own compaction is replayed under,
/// when it is large enough to cross that window's threshold.
pub(crate) const REPLAY_WINDOW: u64 = 64_000;

/// One compaction point.
pub(crate) struct Point {
    /// What the surface held just before it, oldest first.
    pub(crate) prefix: Vec<Message>,
    /// The window the methods run under.
    pub(crate) window: u64,
    /// The settings the methods run with (a small window needs a smaller
    /// kept tail).
    pub(crate) settings: Settings,
    /// The session's own compaction, when it had one.
    pub(crate) real: Option<Real>,
    /// How the point was chosen, for the table.
    pub(crate) how: String,
}

/// A compaction the session's agent made.
pub(crate) struct Real {
    /// The imported session with its leaf at the checkpoint: what the
    /// agent's model saw right after it, with the hidden span behind it.
    pub(crate) session: Session,
}

/// Imports `path` into memory.
pub(crate) fn import(path: &Path) -> anyhow::Result<Session> {
    let imported = abridge_import::read(path, None)
        .with_context(|| format!("importing {}", path.display()))?;
    Ok(imported.into_session(Box::new(MemoryStore::new()))?.0)
}

/// The compaction point of the session at `path`.
pub(crate) fn find(path: &Path, window: Option<u64>) -> anyhow::Result<Point> {
    let mut session = import(path)?;
    let replace = session.active_path().into_iter().find(|&seq| {
        session
            .event(seq)
            .and_then(|e| e.message_event())
            .is_some_and(|m| matches!(m.op, SurfaceOp::Replace { .. }))
    });
    if let Some(seq) = replace {
        let parent = session.event(seq).and_then(|e| e.parent);
        session.navigate(parent)?;
        let prefix = owned(session.surface_messages());
        session.navigate(Some(seq))?;
        let window = window.unwrap_or(OWN_WINDOW);
        return Ok(Point {
            prefix,
            settings: settings_for(window)?,
            window,
            real: Some(Real { session }),
            how: format!("its own compaction (seq {seq})"),
        });
    }
    let messages = owned(session.surface_messages());
    replay(messages, window)
}

/// The compaction point of the first `messages` messages of the session
/// at `path`, found as for a session without its own compaction: a cut
/// small enough for a small model (the e2e's) to be asked about.
pub(crate) fn find_cut(path: &Path, window: Option<u64>, messages: usize) -> anyhow::Result<Point> {
    let session = import(path)?;
    let mut kept = owned(session.surface_messages());
    kept.truncate(messages);
    replay(kept, window)
}

fn owned(messages: Vec<abridge_llm::SharedMessage>) -> Vec<Message> {
    messages.into_iter().map(Arc::unwrap_or_clone).collect()
}

/// Settings for `window`: the defaults, with the kept tail a quarter of
/// the threshold when the default tail would not fit under it.
pub(crate) fn settings_for(window: u64) -> anyhow::Result<Settings> {
    let mut settings = Settings::default();
    let limits = settings.limits(window.max(abridge::MIN_WINDOW));
    let threshold = match limits {
        Ok(limits) if limits.keep < limits.threshold => return Ok(settings),
        Ok(limits) => limits.threshold,
        Err(_) => window * 85 / 100,
    };
    settings.keep_recent_tokens = Some(threshold / 4);
    settings.limits(window)?;
    Ok(settings)
}

/// Replays `messages` into a fresh session until the threshold fires
/// after a finished turn. The window is `window`, else [`REPLAY_WINDOW`]
/// when the session crosses its threshold, else three quarters of the
/// session's size (so it does).
fn replay(messages: Vec<Message>, window: Option<u64>) -> anyhow::Result<Point> {
    let window = match window {
        Some(window) => window,
        None => {
            let total = harness(&[], REPLAY_WINDOW, &messages)?.tokens();
            let threshold = Settings::default().limits(REPLAY_WINDOW)?.threshold;
            if total > threshold {
                REPLAY_WINDOW
            } else {
                (total * 3 / 4).max(abridge::MIN_WINDOW)
            }
        }
    };
    let settings = settings_for(window)?;
    let threshold = settings.limits(window)?.threshold;
    let replay = Harness::builder(Session::in_memory("fidelity-replay"), MODEL)
        .settings(settings.clone())
        .window(window)
        .build()?;
    let mut end = messages.len();
    for (i, message) in messages.iter().enumerate() {
        replay.append(message.clone())?;
        let turn_over = message.role == Role::Assistant && message.tool_calls().next().is_none();
        if turn_over && replay.tokens() > threshold {
            end = i + 1;
            break;
        }
    }
    let how = if end == messages.len() {
        format!("the end (threshold {threshold} not crossed before)")
    } else {
        format!(
            "the threshold ({threshold}) at message {end} of {}",
            messages.len()
        )
    };
    let mut prefix = messages;
    prefix.truncate(end);
    Ok(Point {
        prefix,
        window,
        settings,
        real: None,
        how,
    })
}

/// A harness over a fresh in-memory session holding `messages`.
pub(crate) fn harness(
    methods: &[&str],
    window: u64,
    messages: &[Message],
) -> anyhow::Result<Harness> {
    harness_with(settings_for(window)?, methods, window, messages)
}

/// As [`harness`], with `settings` (its method order replaced when
/// `methods` names any).
pub(crate) fn harness_with(
    settings: Settings,
    methods: &[&str],
    window: u64,
    messages: &[Message],
) -> anyhow::Result<Harness> {
    harness_sourced(settings, methods, window, messages, None)
}

/// As [`harness_with`], its methods built from `sources` when given (a
/// summarizer for `soft` and `handoff`, a `remote`); model-free otherwise.
pub(crate) fn harness_sourced(
    mut settings: Settings,
    methods: &[&str],
    window: u64,
    messages: &[Message],
    sources: Option<abridge::MethodSources>,
) -> anyhow::Result<Harness> {
    if !methods.is_empty() {
        settings.method_order = methods.iter().map(|m| (*m).to_string()).collect();
    }
    let mut session = Session::in_memory("fidelity");
    for message in messages {
        session.append_message(message.clone())?;
    }
    let mut builder = Harness::builder(session, MODEL)
        .settings(settings)
        .window(window);
    if let Some(sources) = sources {
        builder = builder.sources(sources);
    }
    Ok(builder.build()?)
}
