//! Redaction through the seam: a plan under a policy with a redactor hands
//! methods redacted history, commit redacts what a method echoes, and the
//! log keeps the originals.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use abridge_compact::Checkpoint;
use abridge_compact::MethodOutput;
use abridge_compact::Policy;
use abridge_compact::host::Redactor;
use abridge_compact::host::SecretKind;
use abridge_llm::Message;
use abridge_session::Session;

/// A fake key built from pieces, so no scanner mistakes this file for a
/// leak.
fn fake_anthropic_key() -> String {
    format!("sk-ant-api03-{}", "Fake1".repeat(10))
}

fn redactor() -> Redactor {
    Redactor::builtin().unwrap()
}

fn session_with(secret: &str) -> Session {
    let mut session = Session::in_memory("redact");
    for i in 0..4 {
        session
            .append_message(Message::user(format!(
                "step {i}: key {secret} {}",
                "x".repeat(300)
            )))
            .unwrap();
        session.append_message(Message::assistant("ok")).unwrap();
    }
    session
}

#[test]
fn a_plan_hands_methods_redacted_history_and_the_log_keeps_the_original() {
    let secret = fake_anthropic_key();
    assert_eq!(
        SecretKind::AnthropicKey.placeholder(),
        "[redacted: anthropic-key]"
    );
    let mut session = session_with(&secret);
    let policy = Policy::default()
        .with_keep_recent_tokens(150)
        .with_redactor(Arc::new(redactor()));
    let plan = abridge_compact::host::plan(&session, &policy).unwrap();
    let seen = serde_json::to_string(
        &plan
            .messages()
            .iter()
            .chain(plan.kept())
            .map(|m| (**m).clone())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    assert!(!seen.contains(&secret));
    assert!(seen.contains("[redacted: anthropic-key]"));
    // Without a redactor, the plan is the log.
    let plain =
        abridge_compact::host::plan(&session, &Policy::default().with_keep_recent_tokens(150))
            .unwrap();
    assert!(plain.messages()[0].plain_text().contains(&secret));

    // A method that echoes a secret anyway: commit redacts it.
    let ticket = abridge_compact::host::begin(&mut session, plan, "echo").unwrap();
    let output = MethodOutput::Checkpoint(Checkpoint::new(format!("the key was {secret}")));
    let outcome = abridge_compact::host::commit(&mut session, ticket, output).unwrap();
    let checkpoint = session.message(outcome.checkpoint_seq.unwrap()).unwrap();
    assert!(!checkpoint.plain_text().contains(&secret));
    let summary =
        abridge_compact::host::summary_of_checkpoint(&session, outcome.checkpoint_seq.unwrap())
            .unwrap();
    assert_eq!(summary.summary, "the key was [redacted: anthropic-key]");
    // The kept messages on the surface are the logged originals.
    let kept_user = session.surface().seqs()[session.surface().len() - 2];
    assert!(
        session
            .message(kept_user)
            .unwrap()
            .plain_text()
            .contains(&secret)
    );
}
