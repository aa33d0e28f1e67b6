//! The fault checks of `cargo xtask e2e`: the Harness and Maintenance a
//! framework author uses, with `soft` then `digest`, talking to the real
//! llama.cpp server through the [fault proxy](crate::fault_proxy).
//!
//! Each check fills a session on disk past its threshold with canned turns
//! (no model time), breaks the summarizer's calls one way, runs the
//! threshold pass, and then asks of the result what a user would:
//!
//! - Maintenance fell through to `digest` (or, with `soft` alone, backed
//!   off: the breaker opens after three failed passes and later passes
//!   send nothing);
//! - the failed attempt is in the log: a `compaction/end` with status
//!   error, kind `llm` and the provider error's words;
//! - with the fault removed, the next turn goes to the real server and is
//!   recorded;
//! - the file passes `abridge check`.
//!
//! Faults that need no answer from the model (statuses, stalls, malformed
//! and oversize bodies) are answered by the proxy at once; only the cut
//! reply and the next turns reach the model, with small output caps.

use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use abridge::Harness;
use abridge::MethodSources;
use abridge::PassStatus;
use abridge::Settings;
use abridge::SummarizerModel;
use abridge_compact::host::EndData;
use abridge_compact::host::EndStatus;
use abridge_llm::LlmClient;
use abridge_llm::LlmError;
use abridge_llm::Message;
use abridge_llm::RetryPolicy;
use abridge_llm::StreamEvent;
use abridge_providers::ProviderConfig;
use abridge_providers::ProviderKind;
use abridge_session::Header;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::Session;
use anyhow::Context;
use anyhow::ensure;
use futures::StreamExt;

use crate::e2e_checks::Check;
use crate::fault_proxy::Fault;
use crate::fault_proxy::FaultProxy;

/// The fault checks, in the order they run.
pub(crate) const CHECKS: [(&str, Check); 7] = [
    (
        "fault: a reply cut mid-body and a stream cut mid-event",
        cut,
    ),
    ("fault: a stall past the client's timeout", stall),
    (
        "fault: a 429 burst with Retry-After is waited out",
        rate_limited,
    ),
    ("fault: 500 falls through to digest", server_error),
    (
        "fault: 503 with soft alone opens the breaker, then sends nothing",
        unavailable_breaker,
    ),
    ("fault: a malformed JSON body", malformed),
    ("fault: a reply larger than the client's cap", oversize),
];

/// The window the fault sessions run under: a few canned turns fill it.
const WINDOW: u64 = 2_048;
/// The client's answer cap in these checks.
const CAP: usize = 1024 * 1024;
/// Output cap of a next turn: a few words prove the server answered.
const TURN_CAP: u32 = 24;
/// The model the server serves (llama-cpp-python ignores the name).
const MODEL: &str = "smollm2";

/// One fault session: the proxy, a client through it, the harness over a
/// session file, and a runtime to drive it.
struct Rig {
    proxy: FaultProxy,
    client: Arc<dyn LlmClient>,
    harness: Option<Harness>,
    path: PathBuf,
    runtime: tokio::runtime::Runtime,
}

impl Rig {
    /// A session `name` in `work` with `order`, its summarizer calls
    /// bounded by `timeout`, filled past the threshold.
    fn new(
        base_url: &str,
        work: &Path,
        name: &str,
        order: &[&str],
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let proxy = FaultProxy::before(base_url)?;
        let config = ProviderConfig::new(proxy.base_url())
            .with_default_model(MODEL)
            .with_max_response_bytes(CAP);
        let client: Arc<dyn LlmClient> = ProviderKind::OpenAiChat.client(config)?;
        let path = work.join(format!("fault-{name}.jsonl"));
        let _ = std::fs::remove_file(&path);
        let store = JsonlStore::open(&path, JsonlOptions::default())?;
        let session = Session::create(Box::new(store), Header::new(name))?;
        let settings = Settings {
            method_order: order.iter().map(|m| (*m).to_string()).collect(),
            reserve: Some(WINDOW / 4),
            keep_recent_tokens: Some(WINDOW / 8),
            ..Settings::default()
        };
        let retry = RetryPolicy {
            max_attempts: 2,
            initial_backoff: Duration::from_millis(200),
            timeout: Some(timeout),
            max_wait: Some(Duration::from_secs(10)),
            ..RetryPolicy::deterministic()
        };
        let soft = abridge::basic::SoftConfig {
            max_summary_tokens: 64,
            input_window_tokens: WINDOW / 2,
            ..abridge::basic::SoftConfig::default()
        };
        let sources = MethodSources {
            summarizer: Some(SummarizerModel {
                client: client.clone(),
                model: MODEL.to_string(),
                retry,
                soft,
                handoff_file: None,
                handoff_max_tokens: None,
            }),
            ..MethodSources::offline(MODEL)
        };
        let harness = Harness::builder(session, MODEL)
            .client(client.clone())
            .settings(settings)
            .window(WINDOW)
            .sources(sources)
            .build()?;
        fill(&harness)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(Rig {
            proxy,
            client,
            harness: Some(harness),
            path,
            runtime,
        })
    }

    /// A `soft, digest` session whose threshold pass ran under `fault`:
    /// digest landed after soft failed with `words` in its recorded error.
    fn fallen(
        base_url: &str,
        work: &Path,
        name: &str,
        fault: Fault,
        timeout: Duration,
        words: &str,
    ) -> anyhow::Result<Self> {
        let rig = Rig::new(base_url, work, name, &["soft", "digest"], timeout)?;
        let pass = rig.pass_under(fault)?;
        ensure!(
            pass.outcomes.iter().any(|o| o.method == "digest"),
            "digest did not land: {pass:?}"
        );
        ensure!(
            pass.failures.iter().any(|f| f.method == "soft"),
            "soft's failure is not in the pass: {pass:?}"
        );
        rig.recorded(words)?;
        Ok(rig)
    }

    fn harness(&self) -> anyhow::Result<&Harness> {
        self.harness.as_ref().context("the harness is closed")
    }

    /// Runs the threshold pass under `fault`.
    fn pass_under(&self, fault: Fault) -> anyhow::Result<abridge::Pass> {
        self.proxy.set(fault);
        let harness = self.harness()?;
        Ok(self.runtime.block_on(harness.after_turn())?)
    }

    /// The `compaction/end` events that record a failure.
    fn failed_ends(&self) -> anyhow::Result<Vec<EndData>> {
        let session = abridge_compact::host::lock_session(self.harness()?.session());
        let mut ends = Vec::new();
        for event in session.events() {
            let Some(log) = event.log() else { continue };
            if log.kind != abridge_compact::host::TYPE_COMPACTION_END {
                continue;
            }
            let end: EndData = serde_json::from_value(log.data.clone())?;
            if end.status == EndStatus::Error {
                ends.push(end);
            }
        }
        Ok(ends)
    }

    /// Asserts that a failed `soft` attempt is recorded with kind `llm`
    /// and `words` in its error.
    fn recorded(&self, words: &str) -> anyhow::Result<()> {
        let ends = self.failed_ends()?;
        ensure!(
            ends.iter().any(|end| end.kind.as_deref() == Some("llm")
                && end.error.as_deref().is_some_and(|e| e.contains(words))),
            "no failed compaction/end of kind llm saying {words:?}: {ends:?}"
        );
        Ok(())
    }

    /// With the fault removed: one turn to the real server, recorded, and
    /// the pass after it; streamed when `stream`.
    fn next_turn(&self, stream: bool) -> anyhow::Result<abridge::Pass> {
        self.proxy.set(Fault::Pass);
        let harness = self.harness()?;
        harness.append(Message::user(
            "In one short sentence: what is a B-tree good for?",
        ))?;
        let mut request = harness.turn_request()?;
        request.max_output_tokens = Some(TURN_CAP);
        let reply = self.runtime.block_on(async {
            if stream {
                collect(self.client.stream(&request).await?).await
            } else {
                self.client.complete(&request).await
            }
        })?;
        ensure!(
            !reply.message.plain_text().trim().is_empty(),
            "the server's reply has no text: {reply:?}"
        );
        harness.record(&reply)?;
        let pass = self.runtime.block_on(harness.after_turn())?;
        ensure!(
            pass.status != PassStatus::Failed,
            "the pass after the next turn failed: {pass:?}"
        );
        Ok(pass)
    }

    /// Closes the session (its lock) and runs `abridge check` on the file.
    fn finish(mut self, binary: &Path) -> anyhow::Result<()> {
        if let Some(harness) = self.harness.take() {
            harness.sync()?;
        }
        crate::e2e_checks::invariants(binary, &self.path)
    }
}

/// Canned turns until the context is past the threshold.
fn fill(harness: &Harness) -> anyhow::Result<()> {
    harness.append(Message::system(
        "You are a concise assistant. Answer in one sentence.",
    ))?;
    let threshold = harness.limits().threshold;
    let mut step = 0;
    while harness.tokens() <= threshold {
        harness.append(Message::user(format!(
            "Step {step}: open src/module_{step}.rs and explain what parse_{step} does with \
             its input, which errors it returns, and where its callers are. {}",
            "Keep notes on each branch of the match and on every early return. ".repeat(4)
        )))?;
        harness.append(Message::assistant(format!(
            "parse_{step} reads a header, checks the version, and returns \
             ParseError::Version{step} on a mismatch; its callers are load_{step} and \
             repair_{step}. {}",
            "The match has three arms and the early return guards empty input. ".repeat(4)
        )))?;
        step += 1;
    }
    Ok(())
}

/// Reads a stream to its `Done`.
async fn collect(
    mut stream: abridge_llm::ResponseStream,
) -> Result<abridge_llm::Response, LlmError> {
    while let Some(item) = stream.next().await {
        if let StreamEvent::Done(response) = item? {
            return Ok(*response);
        }
    }
    Err(LlmError::Transport {
        provider: "e2e".into(),
        message: "the stream ended without Done".into(),
    })
}

/// The summarizer's answers are cut after 40 body bytes (JSON cut short):
/// a transport failure, retried, then digest. Then a streamed turn is cut
/// inside an SSE event: the stream ends in an error, nothing is recorded;
/// the next streamed turn goes through.
fn cut(binary: &Path, base_url: &str, _root: &Path, work: &Path) -> anyhow::Result<()> {
    let rig = Rig::fallen(
        base_url,
        work,
        "cut",
        Fault::Cut { after: 40 },
        Duration::from_secs(120),
        "transport failure",
    )?;

    rig.proxy.set(Fault::Cut { after: 700 });
    let harness = rig.harness()?;
    let before = abridge_compact::host::lock_session(harness.session()).len();
    harness.append(Message::user("Name one sorting algorithm."))?;
    let mut request = harness.turn_request()?;
    request.max_output_tokens = Some(TURN_CAP);
    let cut = rig
        .runtime
        .block_on(async { collect(rig.client.stream(&request).await?).await });
    ensure!(
        matches!(cut, Err(LlmError::Transport { .. })),
        "a stream cut mid-event gave {cut:?}"
    );
    let after = abridge_compact::host::lock_session(harness.session()).len();
    ensure!(
        after == before + 1,
        "the cut turn wrote {} events, expected only the user message",
        after - before
    );
    let cut_bytes = rig
        .proxy
        .settled(Duration::from_secs(10))
        .last()
        .map_or(0, |s| s.written);
    println!("e2e: stream cut after {cut_bytes} bytes of SSE");
    rig.next_turn(true)?;
    rig.finish(binary)
}

/// The proxy never answers: each summarizer attempt times out (3 s),
/// digest lands, the next turn works.
fn stall(binary: &Path, base_url: &str, _root: &Path, work: &Path) -> anyhow::Result<()> {
    let rig = Rig::fallen(
        base_url,
        work,
        "stall",
        Fault::Stall,
        Duration::from_secs(3),
        "no answer within 3.0s",
    )?;
    ensure!(
        rig.proxy.seen().len() == 2,
        "expected two stalled attempts, saw {}",
        rig.proxy.seen().len()
    );
    rig.next_turn(false)?;
    rig.finish(binary)
}

/// Every summarizer call gets 429 with Retry-After 1: the retry waits at
/// least the second asked for (not the 200 ms backoff), then soft gives
/// up and digest lands.
fn rate_limited(binary: &Path, base_url: &str, _root: &Path, work: &Path) -> anyhow::Result<()> {
    let rig = Rig::fallen(
        base_url,
        work,
        "429",
        Fault::Status {
            status: 429,
            retry_after: Some(1),
        },
        Duration::from_secs(60),
        "rate limited (retry after 1.0s)",
    )?;
    let seen = rig.proxy.seen();
    ensure!(seen.len() == 2, "expected 2 attempts, saw {}", seen.len());
    ensure!(
        seen.iter()
            .all(|s| matches!(s.fault, Fault::Status { status: 429, .. })),
        "{seen:?}"
    );
    let gap = seen[1].at.duration_since(seen[0].at);
    ensure!(
        gap >= Duration::from_secs(1),
        "the retry came {gap:?} after a 429 asking for 1 s"
    );
    println!(
        "e2e: retry after a 429 came {:.2}s later",
        gap.as_secs_f64()
    );
    rig.next_turn(false)?;
    rig.finish(binary)
}

/// 500 on every summarizer call: retried once, then digest.
fn server_error(binary: &Path, base_url: &str, _root: &Path, work: &Path) -> anyhow::Result<()> {
    let rig = Rig::fallen(
        base_url,
        work,
        "500",
        Fault::Status {
            status: 500,
            retry_after: None,
        },
        Duration::from_secs(60),
        "server error 500",
    )?;
    rig.next_turn(false)?;
    rig.finish(binary)
}

/// 503 with Retry-After and `soft` alone: three passes fail, the breaker
/// opens, and the fourth pass sends nothing. The next turn still works.
fn unavailable_breaker(
    binary: &Path,
    base_url: &str,
    _root: &Path,
    work: &Path,
) -> anyhow::Result<()> {
    let rig = Rig::new(base_url, work, "503", &["soft"], Duration::from_secs(60))?;
    let fault = Fault::Status {
        status: 503,
        retry_after: Some(1),
    };
    for round in 1..=abridge::DEFAULT_BREAKER_FAILURES {
        let pass = rig.pass_under(fault.clone())?;
        ensure!(
            pass.status == PassStatus::Failed,
            "pass {round} under 503: {pass:?}"
        );
    }
    rig.recorded("server error 503 (retry after 1.0s)")?;
    let sent = rig.proxy.seen().len();
    let pass = rig.pass_under(fault)?;
    ensure!(
        pass.status == PassStatus::BreakerOpen,
        "after three failed passes: {pass:?}"
    );
    ensure!(
        rig.proxy.seen().len() == sent,
        "the breaker is open but the pass sent {} requests",
        rig.proxy.seen().len() - sent
    );
    rig.next_turn(false)?;
    rig.finish(binary)
}

/// 200 with a body that is not JSON: a transport failure, then digest.
fn malformed(binary: &Path, base_url: &str, _root: &Path, work: &Path) -> anyhow::Result<()> {
    let rig = Rig::fallen(
        base_url,
        work,
        "malformed",
        Fault::Malformed,
        Duration::from_secs(60),
        "not the expected json",
    )?;
    rig.next_turn(false)?;
    rig.finish(binary)
}

/// A 64 MiB answer without a length against a 1 MiB cap: refused as
/// unusable once past the cap (not retried, not read whole), then digest.
fn oversize(binary: &Path, base_url: &str, _root: &Path, work: &Path) -> anyhow::Result<()> {
    const BYTES: usize = 64 * 1024 * 1024;
    let rig = Rig::fallen(
        base_url,
        work,
        "oversize",
        Fault::Oversize { bytes: BYTES },
        Duration::from_secs(60),
        &format!("larger than the {CAP}-byte cap"),
    )?;
    let seen = rig.proxy.settled(Duration::from_secs(10));
    ensure!(
        seen.len() == 1,
        "an oversize answer was retried: {} requests",
        seen.len()
    );
    // The client's error above already names the cap; the proxy's side
    // only shows it never got to send the whole answer. A write into a
    // connection the client stopped reading may not fail at once, so the
    // count can still be open here.
    ensure!(
        seen[0].written < BYTES,
        "the client read the whole {BYTES}-byte answer"
    );
    println!(
        "e2e: oversize answer refused at the {} MiB cap; the proxy {}",
        CAP / 1048576,
        if seen[0].done {
            format!(
                "sent {:.1} MiB before the client hung up",
                seen[0].written as f64 / 1048576.0
            )
        } else {
            "was still blocked writing into the abandoned connection".to_string()
        }
    );
    rig.next_turn(false)?;
    rig.finish(binary)
}
