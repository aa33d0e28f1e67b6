//! Random operation sequences against a session on disk.
//!
//! After every operation: the incremental surface equals the full fold and
//! an independent reference fold written here; an operation is accepted
//! exactly when the rules say it should be; a rejected one leaves events,
//! surface, generation and the file's bytes as they were; the change
//! journal replayed from the last cursor reproduces the surface. At the
//! end the file, reopened, gives the same events, surface and messages.

use std::collections::HashSet;

use abridge_llm::Message;
use abridge_llm::Role;
use abridge_session::Draft;
use abridge_session::Event;
use abridge_session::EventBody;
use abridge_session::FsyncPolicy;
use abridge_session::LogWriter;
use abridge_session::MemoryStore;
use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::SessionError;
use abridge_session::SurfaceCursor;
use abridge_session::SurfaceOp;
use proptest::prelude::*;

use crate::support;

/// How a replace lists what it hides.
#[derive(Debug, Clone, Copy)]
enum Sources {
    /// Exactly the hidden seqs.
    Exact,
    /// The hidden seqs plus an earlier bookkeeping event.
    WithBookkeeping,
    /// One hidden seq left out: must be refused.
    MissingOne,
    /// A seq from the future: must be refused.
    Future,
}

/// Which seq a rewrite targets.
#[derive(Debug, Clone, Copy)]
enum Target {
    /// A visible tool result.
    VisibleTool,
    /// A visible message that is not a tool result: must be refused.
    VisibleOther,
    /// A seq that is not on the surface: must be refused.
    Hidden,
}

#[derive(Debug, Clone)]
enum Op {
    User(String),
    Assistant {
        text: String,
        calls: u8,
    },
    /// Answers a pending call (`right`) or an id nobody asked for.
    ToolResult {
        pick: usize,
        right: bool,
        text: String,
    },
    Replace {
        a: usize,
        b: usize,
        sources: Sources,
    },
    Rewrite {
        pick: usize,
        target: Target,
        keep_id: bool,
    },
    Navigate {
        pick: usize,
        to_root: bool,
    },
    /// A user message with an explicit parent: starts a branch.
    Branch {
        pick: usize,
        text: String,
    },
    Log {
        unknown: bool,
    },
    /// Appends, then maybe a replace or rewrite, in one batch.
    Batch {
        appends: Vec<String>,
        tail: Option<Box<Op>>,
    },
}

fn text() -> impl Strategy<Value = String> {
    "[a-z \"\\\\\n\u{e9}\u{1F600}\u{0}]{0,24}"
}

fn sources() -> impl Strategy<Value = Sources> {
    prop_oneof![
        4 => Just(Sources::Exact),
        2 => Just(Sources::WithBookkeeping),
        1 => Just(Sources::MissingOne),
        1 => Just(Sources::Future),
    ]
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        4 => Just(Target::VisibleTool),
        1 => Just(Target::VisibleOther),
        1 => Just(Target::Hidden),
    ]
}

fn surface_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (any::<usize>(), any::<usize>(), sources()).prop_map(|(a, b, sources)| Op::Replace {
            a,
            b,
            sources
        }),
        (any::<usize>(), target(), prop::bool::weighted(0.8)).prop_map(
            |(pick, target, keep_id)| Op::Rewrite {
                pick,
                target,
                keep_id
            }
        ),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => text().prop_map(Op::User),
        4 => (text(), 0u8..4).prop_map(|(text, calls)| Op::Assistant { text, calls }),
        5 => (any::<usize>(), prop::bool::weighted(0.85), text())
            .prop_map(|(pick, right, text)| Op::ToolResult { pick, right, text }),
        3 => surface_op(),
        1 => (any::<usize>(), prop::bool::weighted(0.1))
            .prop_map(|(pick, to_root)| Op::Navigate { pick, to_root }),
        1 => (any::<usize>(), text()).prop_map(|(pick, text)| Op::Branch { pick, text }),
        1 => any::<bool>().prop_map(|unknown| Op::Log { unknown }),
        2 => (prop::collection::vec(text(), 1..3), prop::option::of(surface_op()))
            .prop_map(|(appends, tail)| Op::Batch { appends, tail: tail.map(Box::new) }),
    ]
}

/// The model of the session the test keeps beside it.
struct Harness {
    session: Session,
    path: std::path::PathBuf,
    next_call: u64,
    /// The journal replica and the cursor it is at.
    replica: Vec<Seq>,
    cursor: SurfaceCursor,
    journal_replays: u64,
}

impl Harness {
    fn visible_messages(&self) -> Vec<(Seq, abridge_llm::SharedMessage)> {
        self.session
            .surface()
            .seqs()
            .iter()
            .map(|s| (*s, self.session.message(*s).unwrap().clone()))
            .collect()
    }

    /// Calls on the surface that no visible result answers.
    fn pending_calls(&self) -> Vec<String> {
        let messages = self.visible_messages();
        let answered: HashSet<String> = messages
            .iter()
            .filter_map(|(_, m)| m.tool_result_block().map(|(id, _, _)| id.to_string()))
            .collect();
        messages
            .iter()
            .flat_map(|(_, m)| {
                m.tool_calls()
                    .map(|(id, _, _)| id.to_string())
                    .collect::<Vec<_>>()
            })
            .filter(|id| !answered.contains(id))
            .collect()
    }

    fn new_call_ids(&mut self, n: u8) -> Vec<String> {
        (0..n)
            .map(|_| {
                self.next_call += 1;
                format!("call_{}", self.next_call)
            })
            .collect()
    }

    /// The draft for a surface operation against the current surface, and
    /// whether the rules accept it.
    fn surface_draft(&self, op: &Op) -> (Draft, bool) {
        let seqs = self.session.surface().seqs().to_vec();
        let next = self.session.len() as Seq;
        match *op {
            Op::Replace { a, b, sources } => {
                let len = seqs.len();
                let start = a % (len + 2);
                let end = b % (len + 2);
                let span_ok = start <= end && end < len;
                let mut hidden: Vec<Seq> = if span_ok {
                    seqs[start..=end].to_vec()
                } else {
                    Vec::new()
                };
                let sources_ok = match sources {
                    Sources::Exact => true,
                    Sources::WithBookkeeping => {
                        if next > 0 {
                            hidden.push(next - 1);
                        }
                        true
                    }
                    Sources::MissingOne => {
                        if hidden.is_empty() {
                            true
                        } else {
                            hidden.remove(hidden.len() / 2);
                            false
                        }
                    }
                    Sources::Future => {
                        hidden.push(next + 7);
                        false
                    }
                };
                let draft = Draft::replace(Message::user("[checkpoint]"), start, end, hidden);
                (draft, span_ok && sources_ok)
            }
            Op::Rewrite {
                pick,
                target,
                keep_id,
            } => {
                let messages = self.visible_messages();
                let tools: Vec<&(Seq, abridge_llm::SharedMessage)> = messages
                    .iter()
                    .filter(|(_, m)| m.role == Role::Tool)
                    .collect();
                let others: Vec<&(Seq, abridge_llm::SharedMessage)> = messages
                    .iter()
                    .filter(|(_, m)| m.role != Role::Tool)
                    .collect();
                let (seq, id, visible_tool) = match target {
                    Target::VisibleTool if !tools.is_empty() => {
                        let (seq, m) = tools[pick % tools.len()];
                        (*seq, m.tool_result_block().unwrap().0.to_string(), true)
                    }
                    Target::VisibleOther if !others.is_empty() => {
                        (others[pick % others.len()].0, "x".to_string(), false)
                    }
                    _ => {
                        // Something not on the surface: hidden, on another
                        // branch, or not written yet.
                        let hidden: Vec<Seq> = (0..next).filter(|s| !seqs.contains(s)).collect();
                        let seq = if hidden.is_empty() {
                            next + 3
                        } else {
                            hidden[pick % hidden.len()]
                        };
                        (seq, "x".to_string(), false)
                    }
                };
                let id = if keep_id { id } else { format!("{id}_other") };
                let draft = Draft::rewrite(Message::tool_result(id, "[pruned]", false), seq);
                (draft, visible_tool && keep_id)
            }
            _ => unreachable!("not a surface operation"),
        }
    }

    /// Applies `op`; returns what happened and what the rules expected.
    fn apply(&mut self, op: &Op) -> (Result<(), SessionError>, bool) {
        let len = self.session.len();
        match op {
            Op::User(text) => (
                self.session.append_message(Message::user(text)).map(drop),
                true,
            ),
            Op::Assistant { text, calls } => {
                let ids = self.new_call_ids(*calls);
                let message = support::parallel_calls(text, &ids);
                (self.session.append_message(message).map(drop), true)
            }
            Op::ToolResult { pick, right, text } => {
                let pending = self.pending_calls();
                let id = if *right && !pending.is_empty() {
                    pending[pick % pending.len()].clone()
                } else {
                    "nobody_asked".to_string()
                };
                let message = Message::tool_result(id, text, pick % 5 == 0);
                (self.session.append_message(message).map(drop), true)
            }
            Op::Replace { .. } | Op::Rewrite { .. } => {
                let (draft, expected) = self.surface_draft(op);
                (self.session.append(draft).map(drop), expected)
            }
            Op::Navigate { pick, to_root } => {
                let target = if *to_root || len == 0 {
                    None
                } else {
                    Some((pick % len) as Seq)
                };
                let result = self.session.navigate(target);
                if let Ok(nav) = &result {
                    self.check_navigation(nav);
                }
                (result.map(drop), true)
            }
            Op::Branch { pick, text } => {
                let parent = if len == 0 {
                    None
                } else {
                    Some((pick % len) as Seq)
                };
                let draft = Draft::message(Message::user(text)).with_parent(parent);
                (self.session.append(draft).map(drop), true)
            }
            Op::Log { unknown } => {
                let kind = if *unknown {
                    "x/extension"
                } else {
                    "compaction/start"
                };
                let draft = Draft::log(kind, serde_json::json!({"n": len, "s": "a\"b"}));
                (self.session.append(draft).map(drop), true)
            }
            Op::Batch { appends, tail } => {
                let mut drafts: Vec<Draft> = appends
                    .iter()
                    .map(|t| Draft::message(Message::user(t)))
                    .collect();
                let mut expected = true;
                if let Some(tail) = tail {
                    // Spans and targets chosen now stay valid after the
                    // appends, which only grow the surface at its end.
                    let (draft, ok) = self.surface_draft(tail);
                    drafts.push(draft);
                    expected = ok;
                }
                (self.session.append_batch(drafts).map(drop), expected)
            }
        }
    }

    fn check_navigation(&self, nav: &abridge_session::Navigation) {
        // Everything abandoned is on the old path after the common
        // ancestor, and nothing abandoned is on the new path.
        let new_path: HashSet<Seq> = self.session.path_to(nav.target).into_iter().collect();
        let old_path = self.session.path_to(nav.from);
        for seq in &nav.abandoned {
            assert!(
                !new_path.contains(seq),
                "abandoned {seq} is on the new path"
            );
            assert!(
                old_path.contains(seq),
                "abandoned {seq} was not on the old path"
            );
        }
        let kept = old_path.len() - nav.abandoned.len();
        assert_eq!(
            old_path[..kept].last().copied(),
            nav.common_ancestor,
            "the old path up to the common ancestor is kept"
        );
        if let Some(ancestor) = nav.common_ancestor {
            assert!(new_path.contains(&ancestor));
        }
        assert_eq!(self.session.leaf(), Some(nav.leaf_event));
        assert_eq!(
            self.session.event(nav.leaf_event).unwrap().parent,
            nav.target
        );
    }

    /// Replays the journal since the last cursor onto the replica.
    fn check_journal(&mut self) {
        match self.session.surface_changes_since(self.cursor) {
            Some(changes) => {
                for change in changes {
                    if change.removed.is_empty() {
                        self.replica.push(change.seq);
                    } else {
                        let start = self
                            .replica
                            .iter()
                            .position(|s| *s == change.removed[0])
                            .expect("a change removes something the replica shows");
                        let end = start + change.removed.len();
                        assert_eq!(&self.replica[start..end], change.removed.as_slice());
                        self.replica.splice(start..end, [change.seq]);
                    }
                    self.journal_replays += 1;
                }
            }
            None => self.replica = self.session.surface().seqs().to_vec(),
        }
        assert_eq!(
            self.replica,
            self.session.surface().seqs(),
            "journal replay"
        );
        self.cursor = self.session.surface_cursor();
    }
}

/// The surface folded from the events alone, written without looking at
/// the crate's fold: `(visible seqs, generation)`.
fn reference_fold(events: &[Event]) -> (Vec<Seq>, u64) {
    let mut path = Vec::new();
    let mut cursor = events.last().map(|e| e.seq);
    while let Some(seq) = cursor {
        path.push(seq);
        cursor = events[seq as usize].parent;
    }
    path.reverse();
    let mut visible: Vec<Seq> = Vec::new();
    let mut generation = 0;
    for seq in path {
        if let EventBody::Message(m) = &events[seq as usize].body {
            match m.op {
                SurfaceOp::Append => visible.push(seq),
                SurfaceOp::Replace { start, end } => {
                    visible.splice(start..=end, [seq]);
                    generation += 1;
                }
                SurfaceOp::Rewrite { target } => {
                    let at = visible.iter().position(|s| *s == target).unwrap();
                    visible[at] = seq;
                    generation += 1;
                }
            }
        }
    }
    (visible, generation)
}

fn check_folds(session: &Session) {
    let full = session.fold_full();
    assert_eq!(session.surface(), &full, "incremental fold != full fold");
    let (seqs, generation) = reference_fold(session.events());
    assert_eq!(
        session.surface().seqs(),
        seqs.as_slice(),
        "surface != reference fold"
    );
    assert_eq!(session.surface().generation(), generation, "generation");
    for (position, seq) in seqs.iter().enumerate() {
        assert_eq!(session.surface().position(*seq), Some(position));
    }
}

fn run(ops: &[Op]) {
    let (_dir, path) = support::temp_session();
    let session = support::create(&path);
    let mut h = Harness {
        cursor: session.surface_cursor(),
        session,
        path: path.clone(),
        next_call: 0,
        replica: Vec::new(),
        journal_replays: 0,
    };
    let mut accepted = 0;
    for op in ops {
        let events_before = support::lines(h.session.events());
        let surface_before = h.session.surface().clone();
        let bytes_before = std::fs::read(&h.path).unwrap();
        let (result, expected) = h.apply(op);
        match (&result, expected) {
            (Ok(()), true) => accepted += 1,
            (Err(e), false) => {
                assert!(matches!(e, SessionError::Invalid { .. }), "{e}");
                assert_eq!(support::lines(h.session.events()), events_before);
                assert_eq!(
                    h.session.surface(),
                    &surface_before,
                    "surface after a rejection"
                );
                assert_eq!(
                    std::fs::read(&h.path).unwrap(),
                    bytes_before,
                    "file after a rejection"
                );
            }
            (Ok(()), false) => panic!("{op:?} was accepted but breaks the rules"),
            (Err(e), true) => panic!("{op:?} was refused but is valid: {e}"),
        }
        check_folds(&h.session);
        h.check_journal();
    }
    let _ = accepted;

    // The same events as one batch of drafts for a new session pass the
    // copy-free check, which must accept all an append accepted.
    let drafts = as_drafts(h.session.events());
    if let Err(e) = abridge_session::check_drafts(&drafts) {
        panic!("check_drafts refused what the session accepted: {e}");
    }
    // And the streaming writer writes them one at a time to the same log.
    let written = path.with_extension("written.jsonl");
    let mut writer = LogWriter::create(
        support::jsonl(&written, FsyncPolicy::EveryBatch),
        &support::header("w"),
    )
    .unwrap();
    for draft in drafts {
        writer.push(draft).unwrap();
    }
    assert_eq!(writer.surface_len(), h.session.surface().len());
    drop(writer.finish().unwrap());
    let (rewritten, _) = Session::open(support::jsonl(&written, FsyncPolicy::EveryBatch)).unwrap();
    assert_eq!(
        support::lines(rewritten.events()),
        support::lines(h.session.events())
    );
    assert_eq!(rewritten.surface(), h.session.surface());

    // Reopen: same events, surface and messages.
    let live_lines = support::lines(h.session.events());
    let live_surface = h.session.surface().clone();
    let live_messages = h.session.surface_messages();
    let live_path = h.session.active_path();
    drop(h);
    let (reopened, report) = Session::open(support::jsonl(&path, FsyncPolicy::EveryBatch)).unwrap();
    assert_eq!(report, abridge_session::LoadReport::default());
    assert_eq!(support::lines(reopened.events()), live_lines);
    assert_eq!(reopened.surface(), &live_surface);
    assert_eq!(reopened.surface_messages(), live_messages);
    assert_eq!(reopened.active_path(), live_path);
    check_folds(&reopened);
}

/// `events` as drafts that name every parent and time, as an importer
/// writes them.
fn as_drafts(events: &[Event]) -> Vec<Draft> {
    events
        .iter()
        .map(|e| Draft {
            parent: Some(e.parent),
            time: Some(e.time.clone()),
            body: e.body.clone(),
        })
        .collect()
}

/// `check_drafts` refuses what a new session's `append_batch` refuses,
/// with the same error, on the active path and after a branch (which the
/// check folds again, as the session does).
#[test]
fn check_drafts_refuses_as_a_new_session_does() {
    let call = |id: &str| support::parallel_calls("", &[id.to_string()]);
    let base = vec![
        Draft::message(Message::user("a")),
        Draft::message(call("c1")),
        Draft::message(Message::tool_result("c1", "out", false)),
        Draft::message(Message::user("b")),
    ];
    let with = |extra: Vec<Draft>| {
        let mut drafts = base.clone();
        drafts.extend(extra);
        drafts
    };
    let cases = vec![
        // A replace leaving out a seq it hides.
        with(vec![Draft::replace(Message::user("[c]"), 0, 2, vec![0, 2])]),
        // A parent that is not earlier.
        with(vec![
            Draft::message(Message::user("x")).with_parent(Some(4)),
        ]),
        // A rewrite of a result that a branch from seq 0 left behind: only
        // a fold of the new path knows it is not visible.
        with(vec![
            Draft::message(Message::user("other")).with_parent(Some(0)),
            Draft::rewrite(Message::tool_result("c1", "[pruned]", false), 2),
        ]),
        // A rewrite that changes the call id, on the active path.
        with(vec![Draft::rewrite(
            Message::tool_result("c2", "[pruned]", false),
            2,
        )]),
        // An append that lists sources.
        with(vec![Draft::body(EventBody::Message(
            abridge_session::MessageEvent {
                message: std::sync::Arc::new(Message::user("x")),
                op: SurfaceOp::Append,
                sources: vec![0],
            },
        ))]),
    ];
    for drafts in cases {
        let session = Session::in_memory("c").append_batch(drafts.clone());
        let checked = abridge_session::check_drafts(&drafts);
        let written = write_one_by_one(&drafts);
        match (session, checked, written) {
            (Err(a), Err(b), Err(c)) => {
                assert_eq!(a.to_string(), b.to_string());
                assert_eq!(a.to_string(), c.to_string());
            }
            (a, b, c) => panic!("session {a:?}, check {b:?}, writer {c:?}"),
        }
    }
    let mut valid = with(vec![
        Draft::message(Message::user("other")).with_parent(Some(0)),
        Draft::replace(Message::user("[c]"), 0, 1, vec![0, 4]),
    ]);
    abridge_session::check_drafts(&valid).unwrap();
    Session::in_memory("c").append_batch(valid.clone()).unwrap();
    write_one_by_one(&valid).unwrap();
    valid.push(Draft::rewrite(Message::tool_result("c1", "[p]", false), 2));
    assert!(abridge_session::check_drafts(&valid).is_err());
    assert!(write_one_by_one(&valid).is_err());
    // A rewrite on the active path that keeps the call id is taken.
    let mut rewritten = base.clone();
    rewritten.push(Draft::rewrite(Message::tool_result("c1", "[p]", false), 2));
    write_one_by_one(&rewritten).unwrap();
}

/// Pushes `drafts` through a [`LogWriter`] on a memory store; the first
/// refusal, after which the writer must still hold what came before.
fn write_one_by_one(drafts: &[Draft]) -> Result<(), SessionError> {
    let mut writer = LogWriter::create(Box::new(MemoryStore::new()), &support::header("w"))?;
    for (index, draft) in drafts.iter().enumerate() {
        if let Err(error) = writer.push(draft.clone()) {
            assert_eq!(writer.len(), index, "a refused draft is not kept");
            return Err(error);
        }
    }
    writer.finish().map(drop)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn random_operations_keep_every_invariant(ops in prop::collection::vec(op(), 1..60)) {
        run(&ops);
    }
}

/// The journal is exercised, not bypassed by refolds: appends on the leaf
/// keep the cursor's epoch.
#[test]
fn journal_survives_plain_appends_and_rejections() {
    let mut session = Session::in_memory("j");
    session.append_message(Message::user("a")).unwrap();
    let cursor = session.surface_cursor();
    session.append_message(Message::assistant("b")).unwrap();
    let bad = Draft::replace(Message::user("[c]"), 0, 1, vec![0]);
    assert!(session.append(bad).is_err());
    let good = Draft::replace(Message::user("[c]"), 0, 1, vec![0, 1]);
    let c = session.append(good).unwrap();
    let changes = session.surface_changes_since(cursor).unwrap();
    assert_eq!(changes.len(), 2);
    assert_eq!(changes[1].seq, c);
    assert_eq!(changes[1].removed, vec![0, 1]);
}

/// A store failure rolls the session back to exactly where it was,
/// including after a batch that moved to another branch.
#[test]
fn store_failure_rolls_everything_back() {
    let store = MemoryStore::new();
    let mut session = Session::create(Box::new(store.clone()), support::header("roll")).unwrap();
    session.append_message(Message::user("a")).unwrap();
    session.append_message(Message::assistant("b")).unwrap();
    session.append_message(Message::user("c")).unwrap();
    let cursor = session.surface_cursor();
    let before = (support::lines(session.events()), session.surface().clone());
    store.fail_next_append();
    let branch = vec![
        Draft::message(Message::user("other")).with_parent(Some(0)),
        Draft::replace(Message::user("[c]"), 0, 1, vec![0, 3]),
    ];
    assert!(matches!(
        session.append_batch(branch),
        Err(SessionError::Store(_))
    ));
    assert_eq!(
        (support::lines(session.events()), session.surface().clone()),
        before
    );
    assert_eq!(store.len(), 3);
    // A refold happened and was undone; the cursor may be invalidated but
    // must never replay wrong changes.
    if let Some(changes) = session.surface_changes_since(cursor) {
        assert!(changes.is_empty());
    }
    let cursor = session.surface_cursor();
    store.fail_next_append();
    assert!(session.append_message(Message::user("d")).is_err());
    assert_eq!(
        (support::lines(session.events()), session.surface().clone()),
        before
    );
    assert_eq!(session.surface_changes_since(cursor), Some(&[][..]));
}
