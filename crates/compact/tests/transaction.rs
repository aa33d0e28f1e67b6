//! The begin/run/commit transaction under every failure a method, a host
//! or the store can cause: each leaves the surface unchanged and records
//! an error end.

// Test helpers outside #[test] functions unwrap too: a failure is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::Mutex;

use abridge_compact::check::*;
use abridge_compact::host::*;
use abridge_compact::*;
use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Role;
use abridge_session::Draft;
use abridge_session::Header;
use abridge_session::MemoryStore;
use abridge_session::Session;
use async_trait::async_trait;
use futures::FutureExt;
use pretty_assertions::assert_eq;

/// A `read` of `path`, said aloud first, as agents do.
fn call(id: &str, path: &str) -> Message {
    let mut message = Message::tool_call(id, "read", serde_json::json!({ "path": path }));
    message
        .content
        .insert(0, Block::text(format!("Reading {path}.")));
    message
}

/// A session of `turns` turns: a request, a read call, its long result,
/// and a reply. Backed by `store` so it can be reopened.
fn session_in(store: &MemoryStore, turns: usize) -> Session {
    let mut session = Session::create(Box::new(store.clone()), Header::new("t")).unwrap();
    for i in 0..turns {
        session
            .append_message(Message::user(format!("request {i}")))
            .unwrap();
        session
            .append_message(call(&format!("c{i}"), &format!("src/f{i}.rs")))
            .unwrap();
        session
            .append_message(Message::tool_result(
                format!("c{i}"),
                "x".repeat(800),
                false,
            ))
            .unwrap();
        session
            .append_message(Message::assistant(format!("done {i}")))
            .unwrap();
    }
    session
}

fn policy() -> Policy {
    Policy::default().with_keep_recent_tokens(300)
}

fn checkpoint(text: &str) -> MethodOutput {
    MethodOutput::Checkpoint(Checkpoint::new(text).with_short_summary("short"))
}

#[derive(Debug)]
enum Behaviour {
    Land,
    Fail,
    Stall,
    EmptyCheckpoint,
    Huge,
    /// Rewrites the first tool result on the shared session mid-run.
    ChangeSpan(Arc<Mutex<Session>>),
}

#[derive(Debug)]
struct Scripted {
    name: &'static str,
    behaviour: Behaviour,
}

#[async_trait]
impl CompactionMethod for Scripted {
    fn name(&self) -> &str {
        self.name
    }

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        match &self.behaviour {
            Behaviour::Land => Ok(checkpoint("## Goal\nread files")),
            Behaviour::Fail => Err(MethodError::Summary {
                method: self.name.into(),
                reason: "scripted failure".into(),
            }),
            Behaviour::Stall => futures::future::pending().await,
            Behaviour::EmptyCheckpoint => Ok(checkpoint("   ")),
            Behaviour::Huge => Ok(checkpoint(&"y".repeat(100_000))),
            Behaviour::ChangeSpan(shared) => {
                let mut session = lock_session(shared);
                let target = plan
                    .seqs()
                    .iter()
                    .copied()
                    .find(|s| session.message(*s).is_some_and(|m| m.role == Role::Tool))
                    .unwrap();
                let id = session
                    .message(target)
                    .unwrap()
                    .tool_result_block()
                    .unwrap()
                    .0
                    .to_string();
                session
                    .append(Draft::rewrite(
                        Message::tool_result(id, "[pruned]", false),
                        target,
                    ))
                    .unwrap();
                Ok(checkpoint("## Goal\nread files"))
            }
        }
    }
}

fn method(name: &'static str, behaviour: Behaviour) -> Arc<dyn CompactionMethod> {
    Arc::new(Scripted { name, behaviour })
}

fn ends(session: &Session) -> Vec<EndData> {
    session
        .events()
        .iter()
        .filter_map(|e| e.log())
        .filter(|l| l.kind == TYPE_COMPACTION_END)
        .map(|l| serde_json::from_value(l.data.clone()).unwrap())
        .collect()
}

fn run<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

#[test]
fn a_landed_compaction_writes_start_summary_checkpoint_end() {
    let store = MemoryStore::new();
    let mut session = session_in(&store, 6);
    let before = session.surface().len();
    let outcome = run(compact_session(
        &mut session,
        &method("ok", Behaviour::Land),
        &policy(),
        Trigger::Manual,
    ))
    .unwrap();
    assert!(outcome.tokens_after < outcome.tokens_before);
    assert!(session.surface().len() < before);
    let kinds: Vec<&str> = session.events()[session.len() - 4..]
        .iter()
        .map(|e| e.body.kind())
        .collect();
    assert_eq!(
        kinds,
        vec![
            TYPE_COMPACTION_START,
            TYPE_COMPACTION_SUMMARY,
            "message",
            TYPE_COMPACTION_END
        ]
    );
    let checkpoint = session.message(outcome.checkpoint_seq.unwrap()).unwrap();
    assert!(is_checkpoint(checkpoint));
    assert_eq!(session.surface().seqs()[0], outcome.checkpoint_seq.unwrap());
    let report = check_invariants(&session);
    assert!(report.is_ok(), "{:?}", report.violations);
    assert_eq!(ends(&session)[0].status, EndStatus::Ok);
    // Replaying the stored log gives the same messages.
    let (reopened, _) = Session::open(Box::new(store)).unwrap();
    assert_eq!(reopened.surface_messages(), session.surface_messages());
}

#[test]
fn a_checkpoint_names_the_seqs_it_hides_and_they_read_back_from_the_log() {
    let store = MemoryStore::new();
    let mut session = session_in(&store, 6);
    let surface_before = session.surface().seqs().to_vec();
    let outcome = run(compact_session(
        &mut session,
        &method("ok", Behaviour::Land),
        &policy(),
        Trigger::Manual,
    ))
    .unwrap();
    let checkpoint = session.message(outcome.checkpoint_seq.unwrap()).unwrap();
    // The reference is in the text the model sees, and parses.
    let note = checkpoint
        .content
        .iter()
        .filter_map(Block::as_text)
        .find(|t| t.contains(abridge_session::RECALL_SCHEME))
        .unwrap();
    let text = note
        .split(|c: char| c.is_whitespace() || c == ']')
        .find(|w| w.starts_with(abridge_session::RECALL_SCHEME))
        .unwrap();
    let reference: abridge_session::Reference = text.parse().unwrap();
    assert_eq!(checkpoint_reference(checkpoint), Some(reference));
    // It spans exactly the seqs the checkpoint hid, and those seqs still
    // hold the original messages.
    let hidden: Vec<_> = surface_before
        .iter()
        .copied()
        .filter(|s| !session.surface().contains(*s))
        .collect();
    assert_eq!(
        reference.seqs(),
        (hidden[0], *hidden.last().unwrap()),
        "{reference}"
    );
    let (first, _) = reference.seqs();
    assert_eq!(
        session.message(first).unwrap().content,
        Message::user("request 0").content
    );
    assert_eq!(checkpoint_body(checkpoint), "## Goal\nread files");
    assert!(!checkpoint_body(checkpoint).contains(abridge_session::RECALL_SCHEME));
}

/// Runs one failing behaviour and checks the surface is untouched and one
/// error end of `kind` was recorded.
fn assert_fails_cleanly(behaviour: Behaviour, kind: &str) {
    let store = MemoryStore::new();
    let mut session = session_in(&store, 6);
    let surface = session.surface().clone();
    let error = run(compact_session(
        &mut session,
        &method("m", behaviour),
        &policy(),
        Trigger::Manual,
    ))
    .unwrap_err();
    assert_eq!(error.kind().as_str(), kind, "{error}");
    assert_eq!(session.surface(), &surface);
    let ends = ends(&session);
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0].status, EndStatus::Error);
    assert_eq!(ends[0].kind.as_deref(), Some(kind));
    assert!(check_invariants(&session).is_ok());
}

#[test]
fn a_failing_method_leaves_the_surface_and_records_the_error() {
    assert_fails_cleanly(Behaviour::Fail, "summary");
}

#[test]
fn an_empty_checkpoint_is_refused() {
    assert_fails_cleanly(Behaviour::EmptyCheckpoint, "commit");
}

#[test]
fn a_checkpoint_larger_than_the_span_is_refused() {
    assert_fails_cleanly(Behaviour::Huge, "not_smaller");
}

#[test]
fn a_second_begin_is_busy_until_the_ticket_is_gone() {
    let store = MemoryStore::new();
    let mut session = session_in(&store, 6);
    let plan = plan(&session, &policy()).unwrap();
    let ticket = begin(&mut session, plan.clone(), "first").unwrap();
    let error = begin(&mut session, plan.clone(), "second").unwrap_err();
    assert!(matches!(error, CompactError::Busy { .. }));
    assert!(
        error
            .to_string()
            .ends_with("is still running; wait for it to end")
    );
    let report = check_invariants(&session);
    assert!(matches!(
        report.violations[..],
        [Violation::OpenCompaction { .. }]
    ));
    drop(ticket);
    // The dropped ticket's start is stale: inert, reported, not blocking.
    let report = check_invariants(&session);
    assert!(report.is_ok());
    assert_eq!(report.stale_starts.len(), 1);
    let ticket = begin(&mut session, plan, "third").unwrap();
    commit(&mut session, ticket, checkpoint("## Goal\nx")).unwrap();
    assert!(check_invariants(&session).is_ok());
}

#[test]
fn a_start_left_by_a_crash_is_stale_after_reopening() {
    let store = MemoryStore::new();
    let mut session = session_in(&store, 6);
    let plan = plan(&session, &policy()).unwrap();
    let ticket = begin(&mut session, plan, "crashing").unwrap();
    let start = ticket.start_seq();
    drop(ticket);
    drop(session);
    let (mut session, _) = Session::open(Box::new(store)).unwrap();
    let unmatched = unmatched_starts(&session);
    assert_eq!(unmatched.len(), 1);
    assert_eq!(unmatched[0].seq, start);
    assert!(!unmatched[0].live);
    let outcome = run(compact_session(
        &mut session,
        &method("ok", Behaviour::Land),
        &policy(),
        Trigger::Manual,
    ))
    .unwrap();
    assert_eq!(outcome.method, "ok");
    let closed = close_stale(&mut session).unwrap();
    assert_eq!(closed.len(), 1);
    assert!(unmatched_starts(&session).is_empty());
}

#[test]
fn a_store_failure_at_commit_rolls_back_and_records_the_end() {
    let store = MemoryStore::new();
    let mut session = session_in(&store, 6);
    let surface = session.surface().clone();
    let plan = plan(&session, &policy()).unwrap();
    let ticket = begin(&mut session, plan, "m").unwrap();
    store.fail_next_append();
    let error = commit(&mut session, ticket, checkpoint("## Goal\nx")).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Persistence);
    assert_eq!(session.surface(), &surface);
    assert_eq!(ends(&session)[0].kind.as_deref(), Some("persistence"));
    let (reopened, _) = Session::open(Box::new(store)).unwrap();
    assert_eq!(reopened.surface_messages(), session.surface_messages());
}

#[test]
fn a_span_changed_while_the_method_ran_is_not_committed() {
    let store = MemoryStore::new();
    let shared: SharedSession = Arc::new(Mutex::new(session_in(&store, 6)));
    let racy = method("racy", Behaviour::ChangeSpan(shared.clone()));
    let error = run(attempt(
        &shared,
        &racy,
        &policy(),
        Target::Trigger(Trigger::Manual),
        &NoHooks,
    ))
    .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("the session changed while compacting: position"),
        "{error}"
    );
    let session = lock_session(&shared);
    assert_eq!(ends(&session)[0].kind.as_deref(), Some("changed"));
    assert!(!session.surface_messages().iter().any(|m| is_checkpoint(m)));
    assert!(check_invariants(&session).is_ok());
}

#[test]
fn appending_while_the_method_runs_does_not_stop_the_commit() {
    let store = MemoryStore::new();
    let shared: SharedSession = Arc::new(Mutex::new(session_in(&store, 6)));
    let plan = plan(&lock_session(&shared), &policy()).unwrap();
    let ticket = begin(&mut lock_session(&shared), plan, "m").unwrap();
    lock_session(&shared)
        .append_message(Message::user("one more thing"))
        .unwrap();
    let outcome = commit(&mut lock_session(&shared), ticket, checkpoint("## Goal\nx")).unwrap();
    let session = lock_session(&shared);
    let last = session.surface_messages().last().unwrap().clone();
    assert_eq!(last.plain_text(), "one more thing");
    assert!(outcome.checkpoint_seq.is_some());
    assert!(check_invariants(&session).is_ok());
}

#[test]
fn dropping_a_stalled_compaction_records_a_cancelled_end() {
    let store = MemoryStore::new();
    let shared: SharedSession = Arc::new(Mutex::new(session_in(&store, 6)));
    let surface = lock_session(&shared).surface().clone();
    let slow = method("slow", Behaviour::Stall);
    let policy = policy();
    let future = attempt(
        &shared,
        &slow,
        &policy,
        Target::Trigger(Trigger::Manual),
        &NoHooks,
    );
    assert!(future.now_or_never().is_none());
    let session = lock_session(&shared);
    assert_eq!(session.surface(), &surface);
    let ends = ends(&session);
    assert_eq!(ends[0].kind.as_deref(), Some("cancelled"));
    assert!(unmatched_starts(&session).is_empty());
}

#[derive(Debug)]
struct Hooks {
    before: Before,
}

#[async_trait]
impl CompactionHooks for Hooks {
    async fn before_compaction(&self, _plan: &Plan, _method: &str) -> Before {
        self.before.clone()
    }
    async fn while_compacting(&self, _plan: &Plan) -> Extra {
        Extra {
            context: vec!["plan.md says: finish step 3".into()],
            preserve: vec!["TODO: step 3".into()],
        }
    }
}

#[test]
fn hooks_cancel_supply_and_preserve() {
    let store = MemoryStore::new();
    let mut session = session_in(&store, 6);
    let surface = session.surface().clone();
    let cancel = Hooks {
        before: Before::Cancel {
            reason: "user busy".into(),
        },
    };
    let error = run(compact_session_with(
        &mut session,
        &method("ok", Behaviour::Land),
        &policy(),
        Target::Trigger(Trigger::Manual),
        &cancel,
    ))
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "compaction cancelled by hook (user busy)"
    );
    assert_eq!(session.surface(), &surface);

    let supply = Hooks {
        before: Before::Supply(checkpoint("## Goal\nsupplied")),
    };
    let outcome = run(compact_session_with(
        &mut session,
        &method("bad", Behaviour::Fail),
        &policy(),
        Target::Trigger(Trigger::Manual),
        &supply,
    ))
    .unwrap();
    let text = session
        .message(outcome.checkpoint_seq.unwrap())
        .unwrap()
        .plain_text();
    assert!(text.contains("supplied"));

    let proceed = Hooks {
        before: Before::Proceed,
    };
    for i in 0..6 {
        session
            .append_message(Message::user(format!("more {i} {}", "z".repeat(400))))
            .unwrap();
    }
    let outcome = run(compact_session_with(
        &mut session,
        &method("ok", Behaviour::Land),
        &policy(),
        Target::Trigger(Trigger::Manual),
        &proceed,
    ))
    .unwrap();
    let text = session
        .message(outcome.checkpoint_seq.unwrap())
        .unwrap()
        .plain_text();
    assert!(
        text.contains("<preserved>\nTODO: step 3\n</preserved>"),
        "{text}"
    );
    assert!(check_invariants(&session).is_ok());
}

#[test]
fn the_previous_checkpoint_is_folded_into_the_next() {
    let store = MemoryStore::new();
    let mut session = session_in(&store, 6);
    let first = run(compact_session(
        &mut session,
        &method("ok", Behaviour::Land),
        &policy(),
        Trigger::Manual,
    ))
    .unwrap();
    for i in 6..12 {
        session
            .append_message(Message::user(format!("request {i}")))
            .unwrap();
        session
            .append_message(call(&format!("c{i}"), "b.rs"))
            .unwrap();
        session
            .append_message(Message::tool_result(
                format!("c{i}"),
                "x".repeat(800),
                false,
            ))
            .unwrap();
    }
    let plan = plan(&session, &policy()).unwrap();
    let previous = plan.previous().unwrap();
    assert_eq!(previous.seq, first.checkpoint_seq.unwrap());
    assert_eq!(previous.summary, "## Goal\nread files");
    assert_eq!(plan.seqs()[0], previous.seq);
    let ticket = begin(&mut session, plan, "ok").unwrap();
    commit(&mut session, ticket, checkpoint("## Goal\nread more files")).unwrap();
    let checkpoints = session
        .surface_messages()
        .iter()
        .filter(|m| is_checkpoint(m))
        .count();
    assert_eq!(checkpoints, 1);
    assert!(check_invariants(&session).is_ok());
}

#[test]
fn an_unframed_checkpoint_is_a_violation() {
    let mut session = Session::in_memory("t");
    session.append_message(Message::user("a")).unwrap();
    session.append_message(Message::assistant("b")).unwrap();
    let mut fake = Message::user("summary");
    fake.meta.origin = Some(abridge_llm::Origin::Checkpoint {
        compaction_id: "x".into(),
        method: "m".into(),
    });
    let summary = session
        .append(Draft::log(
            TYPE_COMPACTION_SUMMARY,
            serde_json::json!({"compaction_id": "x"}),
        ))
        .unwrap();
    let seq = session
        .append(Draft::replace(fake, 0, 1, vec![0, 1, summary]))
        .unwrap();
    let report = check_invariants(&session);
    assert_eq!(
        report.violations,
        vec![Violation::UnframedCheckpoint { seq }]
    );
    assert_eq!(
        report.violations[0].to_string(),
        format!("seq {seq}: checkpoint lacks the checkpoint framing")
    );
}

#[test]
fn rewrites_commit_as_one_batch() {
    let store = MemoryStore::new();
    let mut session = session_in(&store, 3);
    let plan = plan(&session, &Policy::default().with_keep_recent_tokens(0)).unwrap();
    let ticket = begin(&mut session, plan, "prune").unwrap();
    let output = MethodOutput::Rewrites {
        rewrites: vec![Rewrite {
            target: 2,
            message: Message::tool_result("c0", "[pruned]", false),
        }],
        details: Details::new(),
    };
    let outcome = commit(&mut session, ticket, output).unwrap();
    assert_eq!(outcome.rewrite_seqs.len(), 1);
    assert_eq!(session.surface().seqs()[2], outcome.rewrite_seqs[0]);
    assert!(check_invariants(&session).is_ok());
}

/// A method that lands a checkpoint and records the notes its plan carried.
#[derive(Debug, Default)]
struct NoteTaker(Mutex<Vec<String>>);

#[async_trait]
impl CompactionMethod for NoteTaker {
    fn name(&self) -> &str {
        "notes"
    }
    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        self.0
            .lock()
            .unwrap()
            .extend(plan.extra_context().iter().cloned());
        Ok(checkpoint("## Goal\nread files"))
    }
}

#[test]
fn while_compacting_notes_reach_the_method_plan() {
    let store = MemoryStore::new();
    let mut session = session_in(&store, 6);
    let method = NoteTaker::default();
    run(compact_session_with(
        &mut session,
        &method,
        &policy(),
        Target::Trigger(Trigger::Manual),
        &Hooks {
            before: Before::Proceed,
        },
    ))
    .unwrap();
    assert_eq!(
        *method.0.lock().unwrap(),
        vec!["plan.md says: finish step 3".to_string()]
    );
}

/// Records the outcome of every compaction it is told committed.
#[derive(Debug, Default)]
struct AfterHooks(Mutex<Vec<Outcome>>);

#[async_trait]
impl CompactionHooks for AfterHooks {
    async fn after_compaction(&self, outcome: &Outcome) {
        self.0.lock().unwrap().push(outcome.clone());
    }
}

#[test]
fn after_compaction_sees_each_committed_outcome_and_no_failure() {
    let store = MemoryStore::new();
    let mut session = session_in(&store, 6);
    let hooks = AfterHooks::default();
    let mut attempt_with = |behaviour| {
        run(compact_session_with(
            &mut session,
            &method("m", behaviour),
            &policy(),
            Target::Trigger(Trigger::Manual),
            &hooks,
        ))
    };
    attempt_with(Behaviour::Fail).unwrap_err();
    let outcome = attempt_with(Behaviour::Land).unwrap();
    assert_eq!(*hooks.0.lock().unwrap(), vec![outcome]);
}

/// A checkpoint whose framed message costs exactly `tokens` under the
/// ticket's counter.
fn checkpoint_costing(ticket: &Ticket, tokens: u64) -> MethodOutput {
    let plan = ticket.plan();
    let mut text = String::from("## Goal\n");
    loop {
        let framed = frame_checkpoint(
            ticket.compaction_id(),
            "m",
            abridge_session::Reference::range(plan.seqs()[0], *plan.seqs().last().unwrap()),
            vec![Block::text(text.clone())],
            plan.preserve(),
        );
        let cost = plan.counter().message_tokens(&framed);
        if cost == tokens {
            return checkpoint(&text);
        }
        assert!(cost < tokens, "overshot {tokens} tokens: {cost}");
        text.push('y');
    }
}

#[test]
fn a_checkpoint_exactly_the_size_of_its_span_is_refused() {
    let store = MemoryStore::new();
    let mut session = session_in(&store, 6);
    let planned = plan(&session, &policy()).unwrap();
    let hidden = planned.tokens().hidden;
    let ticket = begin(&mut session, planned, "m").unwrap();
    let same = checkpoint_costing(&ticket, hidden);
    let error = commit(&mut session, ticket, same).unwrap_err();
    assert!(
        matches!(error, CompactError::Method(MethodError::NotSmaller { .. })),
        "{error}"
    );

    let planned = plan(&session, &policy()).unwrap();
    let ticket = begin(&mut session, planned, "m").unwrap();
    let smaller = checkpoint_costing(&ticket, hidden - 1);
    commit(&mut session, ticket, smaller).unwrap();
}

#[test]
fn a_rewrite_no_smaller_than_its_target_is_refused() {
    let store = MemoryStore::new();
    let mut session = session_in(&store, 3);
    let surface = session.surface().clone();
    let plan = plan(&session, &Policy::default().with_keep_recent_tokens(0)).unwrap();
    let ticket = begin(&mut session, plan, "prune").unwrap();
    let output = MethodOutput::Rewrites {
        rewrites: vec![Rewrite {
            target: 2,
            message: Message::tool_result("c0", "x".repeat(900), false),
        }],
        details: Details::new(),
    };
    let error = commit(&mut session, ticket, output).unwrap_err();
    assert!(
        matches!(error, CompactError::Method(MethodError::NotSmaller { .. })),
        "{error}"
    );
    assert_eq!(session.surface(), &surface);
}
