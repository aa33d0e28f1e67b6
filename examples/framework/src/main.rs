//! A framework's agent loop on abridge's minimal feature set.
//!
//! What a framework author writes: its own compaction method (`Bookends`,
//! model-free and bounded), a harness over an in-memory session with that
//! method between abridge's `prune` and `digest`, and a 200-turn loop with
//! a tool call in every turn, driven once under tokio and once under
//! `futures::executor::block_on`. The model is abridge's scripted client,
//! so the run needs no network and is the same every time.
//!
//! It exits non-zero when a request would have gone over the window, a pass
//! failed, the log breaks an invariant `abridge check` enforces, or the
//! custom method never landed.

use std::sync::Arc;
use std::sync::Mutex;

use abridge::Harness;
use abridge::HarnessError;
use abridge::MaintenanceEvent;
use abridge::MethodSources;
use abridge::PassStatus;
use abridge::Settings;
use abridge::compact::Checkpoint;
use abridge::compact::MethodError;
use abridge::compact::CompactionMethod;
use abridge::compact::MethodOutput;
use abridge::compact::Plan;
use abridge::llm::LlmClient;
use abridge::llm::Message;
use abridge::llm::StopReason;
use abridge::session::Session;
use abridge::testing::ScriptedClient;
use abridge::testing::Step;

/// Turns in each run.
const TURNS: usize = 200;
/// The window the loop runs in: small, so compaction happens often.
const WINDOW: u64 = 16_000;

/// Keeps the first and last `n` lines of what it replaces, one line a
/// message, and a count of what it left out between them. A previous
/// checkpoint's lines are cut by the same rule as the new ones, so the
/// checkpoint never grows past `2n` lines however many passes came before.
#[derive(Debug)]
struct Bookends {
    n: usize,
}

/// The line between the two ends.
const LEFT_OUT: &str = "... lines left out: ";

#[abridge::async_trait]
impl CompactionMethod for Bookends {
    fn name(&self) -> &str {
        "bookends"
    }

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        let mut left_out = 0usize;
        let mut lines: Vec<String> = Vec::new();
        let previous = plan.previous().map(|p| p.summary.as_str()).unwrap_or("");
        for line in previous.lines() {
            match line.strip_prefix(LEFT_OUT) {
                Some(count) => left_out += count.trim().parse::<usize>().unwrap_or(0),
                None => lines.push(line.to_string()),
            }
        }
        for message in plan.history() {
            let text = message.plain_text();
            let first: String = text
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(160)
                .collect();
            lines.push(format!("[{:?}] {first}", message.role));
        }
        if lines.len() > 2 * self.n {
            left_out += lines.len() - 2 * self.n;
            let tail = lines.split_off(lines.len() - self.n);
            lines.truncate(self.n);
            lines.push(format!("{LEFT_OUT}{left_out}"));
            lines.extend(tail);
        }
        if lines.is_empty() {
            return Err(MethodError::Summary {
                method: self.name().into(),
                reason: "the span holds no text".into(),
            });
        }
        let files = plan.previous().map(|p| p.files.clone()).unwrap_or_default();
        Ok(MethodOutput::Checkpoint(
            Checkpoint::new(lines.join("\n"))
                .with_short_summary(format!("The first and last {} lines.", self.n))
                .with_files(files),
        ))
    }
}

/// The scripted model: each turn a tool call, then an answer.
fn model() -> Arc<ScriptedClient> {
    let mut steps = Vec::with_capacity(2 * TURNS);
    for turn in 0..TURNS {
        let call = Message::tool_call(
            format!("call_{turn}"),
            "read_file",
            serde_json::json!({ "path": format!("src/module_{}.rs", turn % 17) }),
        );
        steps.push(Step::Reply(Box::new(abridge::testing::reply(
            call,
            StopReason::ToolUse,
        ))));
        let answer = Message::assistant(format!("Turn {turn}: read the module and noted its API."));
        steps.push(Step::Reply(Box::new(abridge::testing::reply(
            answer,
            StopReason::EndTurn,
        ))));
    }
    ScriptedClient::new(steps).shared()
}

/// What one run saw.
#[derive(Debug, Default)]
struct Tally {
    passes: usize,
    bookends: usize,
    largest_request: u64,
    /// `compaction/start` events in the log: one per attempt that began.
    starts: usize,
}

/// The harness: `prune`, then the custom method, then `digest`.
fn harness(events: Arc<Mutex<Tally>>) -> Result<Harness, HarnessError> {
    let settings =
        Settings::from_toml("method_order = [\"prune\", \"digest\"]\n", "framework.toml")?;
    let (mut methods, skipped) =
        abridge::build_methods(&settings, &MethodSources::offline("gpt-4o"));
    if let Some(failure) = skipped.first() {
        return Err(HarnessError::Compact(
            MethodError::Unavailable {
                method: failure.method.clone(),
                reason: failure.message.clone(),
            }
            .into(),
        ));
    }
    methods.insert(1, Arc::new(Bookends { n: 6 }));
    Harness::builder(Session::in_memory("framework"), "gpt-4o")
        .settings(settings)
        .methods(methods)
        .window(WINDOW)
        .observer(Arc::new(move |event: &MaintenanceEvent| {
            if let MaintenanceEvent::AttemptLanded { method, .. } = event {
                let mut tally = events
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                tally.passes += 1;
                tally.bookends += usize::from(method == "bookends");
            }
        }))
        .build()
}

/// The loop a framework writes: append, request, send, record, answer the
/// tool call, `mid_turn`, send again, record, `after_turn`.
async fn agent_loop() -> Result<Tally, Box<dyn std::error::Error>> {
    let tally = Arc::new(Mutex::new(Tally::default()));
    let harness = harness(tally.clone())?;
    let client = model();
    let mut largest = 0;
    for turn in 0..TURNS {
        harness.append(Message::user(format!(
            "Turn {turn}: read the next module and tell me what it exports. {}",
            "Context about the codebase. ".repeat(20)
        )))?;
        largest = largest.max(harness.tokens());
        let reply = client.complete(&harness.turn_request()?).await?;
        harness.record(&reply)?;
        for (id, _name, arguments) in reply.message.tool_calls() {
            let output = format!("// {arguments}\n{}", "pub fn exported() {}\n".repeat(60));
            harness.append(Message::tool_result(id, output, false))?;
        }
        harness.mid_turn().await?;
        largest = largest.max(harness.tokens());
        let reply = client.complete(&harness.turn_request()?).await?;
        harness.record(&reply)?;
        let pass = harness.after_turn().await?;
        if pass.status == PassStatus::Failed {
            return Err(format!("turn {turn}: the pass failed: {:?}", pass.failures).into());
        }
    }
    let session = abridge::compact::host::lock_session(harness.session());
    let report = abridge::compact::check::check_invariants(&session);
    if !report.is_ok() {
        return Err(format!("the log breaks an invariant: {:?}", report.violations).into());
    }
    // Attempts that began (an attempt that finds nothing writes nothing,
    // so this counts only the ones that had something to try).
    let starts = session
        .events()
        .iter()
        .filter_map(|event| event.log())
        .filter(|log| log.kind == abridge::compact::host::TYPE_COMPACTION_START)
        .count();
    drop(session);
    let mut tally = std::mem::take(
        &mut *tally
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    tally.largest_request = largest;
    tally.starts = starts;
    if tally.largest_request > WINDOW {
        return Err(format!("a request of {largest} tokens went over the {WINDOW} window").into());
    }
    if tally.bookends == 0 {
        return Err("the custom method never landed".into());
    }
    Ok(tally)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let on_tokio = runtime.block_on(agent_loop())?;
    let on_block_on = futures::executor::block_on(agent_loop())?;
    for (executor, tally) in [("tokio", &on_tokio), ("block_on", &on_block_on)] {
        println!(
            "{executor}: {TURNS} turns, {} compactions ({} by bookends) from {} attempts begun, largest request {} of {WINDOW} tokens",
            tally.passes, tally.bookends, tally.starts, tally.largest_request
        );
    }
    Ok(())
}
