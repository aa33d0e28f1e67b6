//! The `snapcompact` method end to end on an in-memory session: plan,
//! begin, run, commit, then the request-time expansion of its frames.

// Helpers outside `#[test]` functions unwrap too; this file is tests only.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use abridge_compact::Availability;
use abridge_compact::CompactionMethod;
use abridge_compact::MethodError;
use abridge_compact::Policy;
use abridge_compact::TokenCounter;
use abridge_compact::Trigger;
use abridge_compact::check::check_invariants;
use abridge_compact::compact_session;
use abridge_compact::host::summary_of_checkpoint;
use abridge_llm::Block;
use abridge_llm::Catalog;
use abridge_llm::ImageBilling;
use abridge_llm::ImageSource;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Role;
use abridge_meter::MESSAGE_OVERHEAD;
use abridge_meter::estimate_tokens;
use abridge_session::Session;
use abridge_snapcompact::FRAME_URL_SCHEME;
use abridge_snapcompact::Snapcompact;
use abridge_snapcompact::archive_from_summary;
use abridge_snapcompact::frame_tokens;
use abridge_snapcompact::is_snapcompact_checkpoint;

fn long_session(steps: usize) -> Session {
    let mut session = Session::in_memory("snap");
    session
        .append_message(Message::user("Fix the parser; keep OBJ_0O1lI as is."))
        .unwrap();
    for i in 0..steps {
        session
            .append_message(Message {
                role: Role::Assistant,
                content: vec![
                    Block::text(format!("Reading part {i}.")),
                    Block::ToolCall {
                        id: format!("c{i}"),
                        name: "read".into(),
                        arguments: serde_json::json!({"path": format!("src/part{i}.rs")}),
                    },
                ],
                meta: Meta::default(),
            })
            .unwrap();
        let body: String = (0..60)
            .map(|line| format!("    let value_{line} = compute({i}, {line});\n"))
            .collect();
        session
            .append_message(Message::tool_result(format!("c{i}"), body, false))
            .unwrap();
    }
    session
        .append_message(Message::user("Now summarise what you found."))
        .unwrap();
    session
        .append_message(Message::assistant("The parser reads every part."))
        .unwrap();
    session
}

/// Text by the bytes/4 estimate, frames and images by what Anthropic
/// bills for their pixel size: what the real meter does, so a previous
/// archive's frames count in what a second compaction hides.
#[derive(Debug)]
struct ImageAwareCounter;

impl TokenCounter for ImageAwareCounter {
    fn message_tokens(&self, message: &Message) -> u64 {
        let images: u64 = message
            .content
            .iter()
            .map(|b| match b {
                Block::Image {
                    width: Some(w),
                    height: Some(h),
                    ..
                } => frame_tokens(&ImageBilling::Anthropic, *w, *h),
                _ => 0,
            })
            .sum();
        let text: usize = message
            .content
            .iter()
            .filter(|b| !matches!(b, Block::Image { .. }))
            .map(|b| {
                Message {
                    role: message.role,
                    content: vec![b.clone()],
                    meta: Meta::default(),
                }
                .content_bytes()
            })
            .sum();
        images + estimate_tokens(text) + MESSAGE_OVERHEAD
    }
}

fn policy(keep: u64) -> Policy {
    Policy::new(Arc::new(ImageAwareCounter)).with_keep_recent_tokens(keep)
}

fn method() -> Arc<dyn CompactionMethod> {
    Arc::new(Snapcompact::new("claude-sonnet-4-5", &Catalog::builtin()))
}

#[test]
fn snapcompact_replaces_history_with_frame_references_and_no_pixels() {
    let mut session = long_session(80);
    let policy = policy(500);
    let outcome = futures::executor::block_on(compact_session(
        &mut session,
        &method(),
        &policy,
        Trigger::Manual,
    ))
    .unwrap();
    assert_eq!(outcome.method, "snapcompact");
    assert!(outcome.tokens_after < outcome.tokens_before, "{outcome:?}");
    assert!(check_invariants(&session).is_ok());

    let seq = outcome.checkpoint_seq.unwrap();
    let checkpoint = session.message(seq).unwrap().clone();
    assert!(is_snapcompact_checkpoint(&checkpoint));
    let references = checkpoint
        .content
        .iter()
        .filter(|b| matches!(b, Block::Image { source: ImageSource::Url { url }, width: Some(_), height: Some(_) } if url.starts_with(FRAME_URL_SCHEME)))
        .count();
    assert!(references > 0);

    // The session never holds a frame.
    let log = format!("{:?}", session.events());
    assert!(!log.contains("iVBOR"), "a PNG was written to the session");

    // The request builder rebuilds the archive and inlines the frames.
    let summary = summary_of_checkpoint(&session, seq).unwrap();
    let archive = archive_from_summary(&summary.summary, &summary.details).unwrap();
    let cache = abridge_snapcompact::FrameCache::default();
    let expanded = archive.expand(&checkpoint.content, &cache).unwrap();
    let inline = expanded
        .iter()
        .filter(|b| matches!(b, Block::Image { source: ImageSource::Base64 { data, .. }, .. } if data.starts_with("iVBOR")))
        .count();
    assert_eq!(inline, references);
    assert!(archive.head.contains("OBJ_0O1lI"), "the task stays as text");
}

#[test]
fn a_second_compaction_re_renders_the_first_archive_from_text() {
    let mut session = long_session(80);
    let policy = policy(500);
    futures::executor::block_on(compact_session(
        &mut session,
        &method(),
        &policy,
        Trigger::Manual,
    ))
    .unwrap();
    for i in 0..60 {
        session
            .append_message(Message::user(format!(
                "more work {i}: {}",
                "detail ".repeat(60)
            )))
            .unwrap();
        session
            .append_message(Message::assistant(format!("done {i}")))
            .unwrap();
    }
    let outcome = futures::executor::block_on(compact_session(
        &mut session,
        &method(),
        &policy,
        Trigger::Manual,
    ))
    .unwrap();
    let summary = summary_of_checkpoint(&session, outcome.checkpoint_seq.unwrap()).unwrap();
    let archive = archive_from_summary(&summary.summary, &summary.details).unwrap();
    assert!(
        archive.middle.contains("Reading part 3."),
        "the first archive's text is carried on"
    );
    assert!(archive.middle.contains("more work 1:"));
    assert!(check_invariants(&session).is_ok());
}

#[test]
fn it_is_unavailable_without_vision_and_refuses_when_frames_cost_more() {
    let text_only = Snapcompact::new("gpt-3.5-turbo", &Catalog::builtin());
    assert!(matches!(
        text_only.available(),
        Availability::Unavailable { .. }
    ));

    // A short history costs less as text than one frame.
    let mut session = Session::in_memory("small");
    for i in 0..6 {
        session
            .append_message(Message::user(format!("q{i}")))
            .unwrap();
        session
            .append_message(Message::assistant(format!("a{i}")))
            .unwrap();
    }
    let policy = policy(10);
    let error = futures::executor::block_on(compact_session(
        &mut session,
        &method(),
        &policy,
        Trigger::Manual,
    ))
    .unwrap_err();
    match error.method_error() {
        Some(MethodError::NotSmaller { .. }) => {}
        _ => assert!(
            error.to_string().contains("would not save tokens")
                || error.to_string().contains("hides only"),
            "unexpected {error}"
        ),
    }
}

/// `long_session` with a thinking block before every call.
fn thinking_session(steps: usize) -> Session {
    let mut session = Session::in_memory("think");
    session
        .append_message(Message::user("Fix the parser."))
        .unwrap();
    for i in 0..steps {
        session
            .append_message(Message {
                role: Role::Assistant,
                content: vec![
                    Block::Thinking {
                        thinking: format!("Part {i} may hold the bug; read it next."),
                        signature: None,
                    },
                    Block::ToolCall {
                        id: format!("c{i}"),
                        name: "read".into(),
                        arguments: serde_json::json!({"path": format!("src/part{i}.rs")}),
                    },
                ],
                meta: Meta::default(),
            })
            .unwrap();
        let body: String = (0..60)
            .map(|line| format!("    let value_{line} = compute({i}, {line});\n"))
            .collect();
        session
            .append_message(Message::tool_result(format!("c{i}"), body, false))
            .unwrap();
    }
    session
        .append_message(Message::user("Now summarise what you found."))
        .unwrap();
    session
        .append_message(Message::assistant("The parser reads every part."))
        .unwrap();
    session
}

#[test]
fn thinking_is_printed_only_for_families_that_read_it() {
    let middle_for = |model: &str| {
        let mut session = thinking_session(80);
        let method: Arc<dyn CompactionMethod> =
            Arc::new(Snapcompact::new(model, &Catalog::builtin()));
        let outcome = futures::executor::block_on(compact_session(
            &mut session,
            &method,
            &policy(500),
            Trigger::Manual,
        ))
        .unwrap();
        let summary = summary_of_checkpoint(&session, outcome.checkpoint_seq.unwrap()).unwrap();
        archive_from_summary(&summary.summary, &summary.details)
            .unwrap()
            .middle
    };
    let claude = middle_for("claude-sonnet-4-5");
    assert!(
        claude.contains("[thinking] Part 3 may hold the bug"),
        "{claude:.300}"
    );
    let gpt = middle_for("gpt-5");
    assert!(!gpt.contains("[thinking]"), "{gpt:.300}");
    assert!(gpt.contains("[call] read("), "calls stay: {gpt:.300}");
}

/// A method that draws as many frames as its room allows and never
/// declines for printing too little, to see the room alone.
fn roomy_method() -> Snapcompact {
    Snapcompact::new("claude-sonnet-4-5", &Catalog::builtin()).with_config(
        abridge_snapcompact::SnapcompactConfig {
            min_printed_percent: 0,
            ..Default::default()
        },
    )
}

/// Issue 27, point 3: frames were counted by the model's catalog window
/// (25 frames of a 200k window inside a pass aiming at 12k), not by the
/// room the pass's goal leaves. The checkpoint, frames, guide and text
/// edges together, now fits that room: the context ends at or under the
/// goal.
#[test]
fn the_checkpoint_fits_the_room_its_pass_gives_it() {
    let mut session = long_session(400);
    let before = ImageAwareCounter.context_tokens(&session);
    let goal = 12_000;
    assert!(before > 10 * goal, "{before}");
    let policy = policy(500).with_goal(goal);
    let outcome = futures::executor::block_on(compact_session(
        &mut session,
        &roomy_method(),
        &policy,
        Trigger::Manual,
    ))
    .unwrap();
    assert!(outcome.tokens_after <= goal, "{outcome:?}");
    let summary = summary_of_checkpoint(&session, outcome.checkpoint_seq.unwrap()).unwrap();
    let archive = archive_from_summary(&summary.summary, &summary.details).unwrap();
    assert!(archive.dropped_chars > 0, "the oldest text makes room");
}

/// Where the room holds frames for under a fifth of the history, the
/// frames would keep less than a summary does (BENCHMARKS.md, "Default
/// method order"): snapcompact declines, and the order falls through.
#[test]
fn it_declines_when_the_frames_that_fit_print_too_little_of_the_history() {
    let mut session = long_session(400);
    let policy = policy(500).with_goal(8_000);
    let error = futures::executor::block_on(compact_session(
        &mut session,
        &method(),
        &policy,
        Trigger::Manual,
    ))
    .unwrap_err();
    assert!(
        matches!(error.method_error(), Some(MethodError::Unavailable { reason, .. }) if reason.contains("characters of history (under 20%)")),
        "{error}"
    );
    // With the share not asked for, the same room takes a checkpoint.
    let landed = futures::executor::block_on(compact_session(
        &mut session,
        &roomy_method(),
        &policy,
        Trigger::Manual,
    ));
    assert!(landed.is_ok(), "{landed:?}");
}
