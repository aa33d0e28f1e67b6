//! Secrets are never printed onto snapcompact frames (issue 11, point 1).
//!
//! The shared redaction session, with the secrets in the middle of what is
//! hidden (the part drawn as images), compacted by snapcompact through the
//! Harness. Checked: the archive's source text (what the frames are drawn
//! from), and the frames themselves through the renderer's own layout
//! (`Archive::pages`: the text exactly as laid out on each frame, which
//! `Archive::frames` draws and nothing else; the test checks that too,
//! byte for byte). With redaction off the same layout holds the secrets,
//! so the check cannot pass by the secrets falling outside the frames.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use abridge::Harness;
use abridge::Settings;
use abridge_snapcompact::Archive;
use abridge_snapcompact::FrameCache;
use abridge_snapcompact::render_page;
use abridge_test_support::secrets;

/// Filler turns before the secrets (past the archive's verbatim head) and
/// after them (past its verbatim tail).
const BEFORE: usize = 40;
const AFTER: usize = 40;

fn run<T>(future: impl std::future::Future<Output = T>) -> T {
    futures::executor::block_on(future)
}

/// The archive of the checkpoint snapcompact lands, with or without
/// redaction.
fn archive(redact: bool) -> Archive {
    let settings = Settings::from_toml(
        &format!(
            // A small fixture session: the reclaim floor is off.
            "method_order = [\"snapcompact\"]\nkeep_recent_tokens = 400\nmin_reclaim_percent = 0\nredact = {redact}\n{}",
            secrets::settings_toml()
        ),
        "abridge.toml",
    )
    .unwrap();
    let harness = Harness::builder(secrets::session_with(BEFORE, AFTER), "claude-sonnet-4-5")
        .settings(settings)
        .window(200_000)
        .build()
        .unwrap();
    let pass = run(harness.compact(&[], None)).unwrap();
    assert!(pass.landed(), "{pass:?}");
    let session = abridge::compact::host::lock_session(harness.session());
    let seq = session
        .surface()
        .seqs()
        .iter()
        .copied()
        .find(|seq| {
            session
                .message(*seq)
                .is_some_and(|m| abridge::compact::host::is_checkpoint(m))
        })
        .expect("a checkpoint on the surface");
    let summary = abridge::compact::host::summary_of_checkpoint(&session, seq).unwrap();
    abridge_snapcompact::archive_from_summary(&summary.summary, &summary.details)
        .expect("the checkpoint's archive")
}

/// The text laid out on every frame, in order.
fn framed_text(archive: &Archive) -> String {
    archive
        .pages()
        .unwrap()
        .iter()
        .flat_map(|(page, _)| page.runs.iter().map(|run| run.text.clone()))
        .collect()
}

/// The kinds in the user's message, which the serializer never cuts.
const USER_KINDS: [&str; 5] = [
    "openai-key",
    "anthropic-key",
    "aws-access-key-id",
    "aws-secret-key",
    "custom",
];

#[test]
fn frames_and_their_source_text_hold_placeholders_not_secrets() {
    let archive = archive(true);
    secrets::assert_no_secret("the archive's source text", &archive.full_text());
    let framed = framed_text(&archive);
    secrets::assert_no_secret("the frames' laid-out text", &framed);
    secrets::assert_placeholders("the frames' laid-out text", &framed, &USER_KINDS);

    // The frames are those pages drawn, and nothing else.
    let cache = FrameCache::default();
    let frames = archive.frames(&cache).unwrap();
    let pages = archive.pages().unwrap();
    assert_eq!(frames.len(), pages.len());
    for (frame, (page, grid)) in frames.iter().zip(&pages) {
        assert_eq!(frame.frame.png, render_page(page, grid).unwrap().png);
    }
}

#[test]
fn without_redaction_the_same_frames_would_print_the_secrets() {
    let framed = framed_text(&archive(false));
    for kind in USER_KINDS {
        let secret = secrets::secret(kind);
        assert!(
            framed.contains(&secret),
            "the unredacted frames lack the {kind} secret: the check above would prove nothing"
        );
    }
}
