//! The LLM mode against a scripted client: questions sent over the
//! context, answers graded, failures and timeouts kept per probe, and a
//! model-backed method's calls counted.

use std::sync::Arc;
use std::time::Duration;

use abridge_llm::LlmClient;
use abridge_llm::Message;
use abridge_llm::Role;
use abridge_llm::testing::ScriptedClient;
use abridge_llm::testing::Step;
use abridge_llm::testing::server_error;
use abridge_llm::testing::text_reply;

use super::ask::Answer;
use super::ask::AskLimits;
use super::ask::ask_all;
use super::ask::grade_answer;
use super::ask::question;
use super::key::Key;
use super::llm::LlmOptions;
use super::llm::run_all;
use super::point::Point;
use super::point::settings_for;
use super::probe::Category;
use super::probe::Probe;

fn key() -> Key {
    Key {
        probes: vec![
            Probe::new(Category::Task, "Fix the flaky parser test").unwrap(),
            Probe::path(Category::FilesChanged, "/repo/src/parse.rs").unwrap(),
            Probe::path(Category::FilesChanged, "/repo/src/lex.rs").unwrap(),
            Probe::new(Category::Commands, "cargo test -p parser").unwrap(),
        ],
    }
}

fn limits() -> AskLimits {
    AskLimits {
        answer_tokens: 100,
        timeout: Duration::from_secs(30),
    }
}

#[test]
fn an_answer_quotes_a_fact_exactly_or_matches_it_normalised_or_misses() {
    let probe = Probe::path(Category::FilesChanged, "/repo/src/parse.rs").unwrap();
    assert_eq!(grade_answer(&probe, "- /repo/src/parse.rs"), Answer::Exact);
    assert_eq!(grade_answer(&probe, "`SRC/Parse.rs`"), Answer::Normalised);
    assert_eq!(grade_answer(&probe, "src/lex.rs"), Answer::Missed);
}

#[tokio::test]
async fn each_category_is_asked_once_after_the_context_and_its_answer_grades_its_probes() {
    let client = ScriptedClient::new(vec![
        Step::Reply(Box::new(text_reply(
            "They asked: fix the flaky parser-test.",
        ))),
        Step::Reply(Box::new(text_reply("/repo/src/parse.rs"))),
        Step::Reply(Box::new(text_reply("I don't know."))),
    ])
    .shared();
    let context = vec![Message::user("earlier work")];
    let asked = ask_all(client.as_ref(), "m", &context, &key(), limits()).await;
    assert_eq!(asked.questions, 3);
    assert_eq!(
        asked.answers,
        [
            Answer::Normalised,
            Answer::Exact,
            Answer::Missed,
            Answer::Missed
        ]
    );
    assert!(asked.errors.is_empty());
    let requests = client.requests();
    assert_eq!(requests.len(), 3);
    let asked_about_files = &requests[1];
    assert_eq!(asked_about_files.messages.len(), 2);
    assert_eq!(asked_about_files.messages[0].plain_text(), "earlier work");
    let last = &asked_about_files.messages[1];
    assert_eq!(last.role, Role::User);
    assert!(last.plain_text().contains(question(Category::FilesChanged)));
}

#[tokio::test(start_paused = true)]
async fn a_failed_or_timed_out_question_marks_only_its_probes_errored() {
    let client = ScriptedClient::new(vec![
        Step::Fail(server_error()),
        Step::Hang,
        Step::Reply(Box::new(text_reply("run cargo test -p parser"))),
    ])
    .shared();
    let asked = ask_all(client.as_ref(), "m", &[], &key(), limits()).await;
    assert_eq!(
        asked.answers,
        [
            Answer::Errored,
            Answer::Errored,
            Answer::Errored,
            Answer::Exact
        ]
    );
    assert_eq!(asked.errors.len(), 2);
    assert!(asked.errors[0].starts_with("task: "), "{:?}", asked.errors);
    assert!(asked.errors[1].contains("no answer within 30 s"));
}

/// A history well over a 2048-token window's threshold, in finished turns.
fn long_history() -> Vec<Message> {
    let mut out = vec![Message::user(
        "Fix the flaky parser test in the lexer module",
    )];
    for i in 0..40 {
        out.push(Message::assistant(format!(
            "Step {i}: {}",
            "looked at the parser and the lexer again ".repeat(12)
        )));
        out.push(Message::user(format!("Continue with step {}", i + 1)));
    }
    out.push(Message::assistant("Done for now."));
    out
}

#[tokio::test]
async fn soft_runs_through_the_given_client_and_its_calls_are_counted() {
    let client = ScriptedClient::new(Vec::new())
        .fallback("## Goal\nFix the flaky parser test\n\n## In short\nWorking on it.")
        .shared();
    let window = 2_048;
    let point = Point {
        prefix: long_history(),
        window,
        settings: settings_for(window).unwrap(),
        real: None,
        how: "test".into(),
    };
    let key = Key {
        probes: vec![Probe::new(Category::Task, "Fix the flaky parser test").unwrap()],
    };
    let mut options = LlmOptions::new("http://127.0.0.1:9/v1", "m");
    options.methods = Some(vec!["digest".into(), "soft".into()]);
    let dynamic: Arc<dyn LlmClient> = client.clone();
    let graded = run_all(point, &key, &options, &dynamic).await.unwrap();
    assert_eq!(graded.len(), 2);
    let (digest, soft) = (&graded[0], &graded[1]);
    assert_eq!(digest.method, "digest");
    assert_eq!(digest.compaction_calls, 0);
    assert_eq!(soft.method, "soft");
    assert_eq!(soft.landed, ["soft"]);
    assert!(soft.compaction_calls >= 1, "soft made no model call");
    assert_eq!(soft.questions, 1);
    assert_eq!(soft.answers, [Answer::Exact]);
}
