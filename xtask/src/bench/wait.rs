//! The wait a user feels at the threshold: bundled sessions replayed
//! through the `Harness` at their recorded pace, with a scripted
//! summarizer that takes 5 s (and 30 s), speculation off and on.
//!
//! Time is tokio's paused clock: the replay sleeps each recorded gap
//! between two messages (a reply being written, a tool running, the user
//! thinking), and the summarizer sleeps its delay, on a virtual clock that
//! jumps to the next timer whenever every task is waiting. A replay of
//! hours of work takes well under a second, and the wait each trigger
//! call sees is exact: the virtual time between the call and its answer.
//! A speculative summary runs in its own task on the same clock, so it
//! finishes during the gaps exactly as it would in a real session.
//!
//! The scripted summarizer is a method named `soft` (so it is the one
//! speculation starts) and the only method of the order, so every pass
//! that runs needs a summary, and its calls can be counted.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::time::Duration;

use abridge::Harness;
use abridge::MaintenanceEvent;
use abridge::PassStatus;
use abridge::Settings;
use abridge_compact::Checkpoint;
use abridge_compact::CompactionMethod;
use abridge_compact::MethodError;
use abridge_compact::MethodOutput;
use abridge_compact::Plan;
use abridge_llm::Message;
use abridge_llm::Role;
use abridge_session::EventBody;
use abridge_session::Session;
use abridge_session::SurfaceOp;
use anyhow::Context;

use super::Section;
use super::fmt_duration;

/// The sessions replayed, each under the window that makes it cross the
/// threshold several times, and the model it ran on.
const SAMPLES: &[(&str, &str, u64)] = &[
    ("pi-mono__large-session.jsonl", "claude-sonnet-4-5", 40_000),
    (
        "claude-code__spotter__4d5611e5.jsonl",
        "claude-opus-4-6",
        40_000,
    ),
];

/// How long the scripted summarizer takes, in seconds.
const DELAYS: [u64; 2] = [5, 30];

/// The speculative band: this share of the threshold below it.
const SPECULATIVE_PERCENT: u64 = 20;

/// A message to replay and when it was written (milliseconds since the
/// epoch, when the source says).
struct Step {
    message: Message,
    at: Option<i64>,
}

/// The appended messages on `name`'s active path, in order, without their
/// usage reports (they describe the source's context, not the replay's).
fn steps(name: &str) -> anyhow::Result<Vec<Step>> {
    let path = std::path::Path::new("assets/sessions").join(name);
    let imported =
        abridge_import::read(&path, None).with_context(|| format!("importing {name}"))?;
    let mut source = Session::in_memory("source");
    imported.append_to(&mut source)?;
    Ok(source
        .active_path()
        .into_iter()
        .filter_map(|seq| {
            let event = source.event(seq)?;
            match &event.body {
                EventBody::Message(body) if body.op == SurfaceOp::Append => {
                    let mut message = (*body.message).clone();
                    message.meta.usage = None;
                    Some(Step {
                        message,
                        at: unix_millis(&event.time),
                    })
                }
                _ => None,
            }
        })
        .collect())
}

/// `YYYY-MM-DDTHH:MM:SS[.fff]Z` as milliseconds since the epoch.
fn unix_millis(time: &str) -> Option<i64> {
    let (date, clock) = time.strip_suffix('Z')?.split_once('T')?;
    let mut date = date.split('-').map(|p| p.parse::<i64>().ok());
    let (year, month, day) = (date.next()??, date.next()??, date.next()??);
    let (hms, fraction) = clock.split_once('.').unwrap_or((clock, "0"));
    let mut hms = hms.split(':').map(|p| p.parse::<i64>().ok());
    let (hour, minute, second) = (hms.next()??, hms.next()??, hms.next()??);
    let millis: i64 = format!("{fraction:0<3}").get(..3)?.parse().ok()?;
    // Days from 1970-01-01 in the proleptic Gregorian calendar.
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * m + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis)
}

/// A summarizer (by name the `soft` method) that takes `delay` on the
/// clock and counts its calls.
#[derive(Debug)]
struct Scripted {
    delay: Duration,
    calls: AtomicUsize,
}

#[async_trait::async_trait]
impl CompactionMethod for Scripted {
    fn name(&self) -> &str {
        "soft"
    }

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(self.delay).await;
        let text = format!(
            "## Goal\nThe work of {} messages, summarized.\n## Done\n{}",
            plan.seqs().len(),
            "A step of the work. ".repeat(40)
        );
        Ok(MethodOutput::Checkpoint(
            Checkpoint::new(text).with_short_summary("The work so far."),
        ))
    }
}

/// What one replay saw.
#[derive(Debug, Default)]
struct Replay {
    /// The wait of every trigger call that ran a pass.
    waits: Vec<Duration>,
    /// Passes that waited with no speculation to take (none was started:
    /// the context jumped past the band in one message, or the one held
    /// was already used).
    waited_without: usize,
    /// Passes that waited for a speculation still running.
    waited_for_running: usize,
    /// Passes that ended above their goal (the next trigger runs again).
    insufficient: usize,
    /// Trigger calls the breaker answered instead of a pass.
    breaker: usize,
    /// Summarizer calls started (speculative ones included).
    calls: usize,
    started: usize,
    committed: usize,
    dropped: usize,
}

/// Replays `steps` under `window` with a summarizer of `delay`,
/// speculating or not.
fn replay(
    steps: &[Step],
    model: &str,
    window: u64,
    delay: Duration,
    speculate: bool,
) -> anyhow::Result<Replay> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()?;
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let summarizer = Arc::new(Scripted {
        delay,
        calls: AtomicUsize::new(0),
    });
    let settings = Settings {
        method_order: vec!["soft".to_string()],
        speculative_percent: speculate.then_some(SPECULATIVE_PERCENT),
        ..Settings::default()
    };
    let mut replay = runtime.block_on(async {
        let harness = Harness::builder(Session::in_memory("bench-wait"), model)
            .settings(settings)
            .methods(vec![summarizer.clone()])
            .window(window)
            .observer(Arc::new(move |event: &MaintenanceEvent| {
                if let Ok(mut events) = sink.lock() {
                    events.push(event.clone());
                }
            }))
            .build()?;
        let mut replay = Replay::default();
        let mut last = None;
        for step in steps {
            if let (Some(previous), Some(at)) = (last, step.at) {
                let gap = u64::try_from(at - previous).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(gap)).await;
            }
            last = step.at.or(last);
            let role = step.message.role;
            let ends_turn = role == Role::Assistant && step.message.tool_calls().next().is_none();
            harness.append(step.message.clone())?;
            let seen = events.lock().map(|e| e.len()).unwrap_or_default();
            let start = tokio::time::Instant::now();
            let pass = match role {
                Role::Tool => harness.mid_turn().await?,
                _ if ends_turn => harness.after_turn().await?,
                _ => continue,
            };
            let waited = start.elapsed();
            match pass.status {
                PassStatus::Succeeded | PassStatus::Insufficient | PassStatus::Failed => {}
                PassStatus::BreakerOpen => {
                    replay.breaker += 1;
                    continue;
                }
                _ => continue,
            }
            replay.waits.push(waited);
            if pass.status == PassStatus::Insufficient {
                replay.insufficient += 1;
            }
            if !waited.is_zero() {
                let took_one = events.lock().is_ok_and(|e| {
                    e[seen..]
                        .iter()
                        .any(|e| matches!(e, MaintenanceEvent::SpeculationCommitted { .. }))
                });
                if took_one {
                    replay.waited_for_running += 1;
                } else {
                    replay.waited_without += 1;
                }
            }
        }
        anyhow::Ok(replay)
    })?;
    replay.calls = summarizer.calls.load(Ordering::SeqCst);
    for event in events
        .lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .iter()
    {
        match event {
            MaintenanceEvent::SpeculationStarted { .. } => replay.started += 1,
            MaintenanceEvent::SpeculationCommitted { .. } => replay.committed += 1,
            MaintenanceEvent::SpeculationDropped { .. } => replay.dropped += 1,
            _ => {}
        }
    }
    Ok(replay)
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) * p).div_ceil(100)]
}

fn seconds(duration: Duration) -> String {
    if duration.is_zero() {
        "0".to_string()
    } else {
        fmt_duration(duration)
    }
}

/// The section.
pub(crate) fn run() -> anyhow::Result<Vec<Section>> {
    let mut section = Section::new(
        "Foreground wait at the threshold, speculation off and on",
        &format!(
            "Bundled sessions replayed message by message through `Harness` at their recorded pace (the gap between two messages' timestamps is slept), with `after_turn()` after each reply that ends a turn and `mid_turn()` after each tool result. The only method is a scripted summarizer (named `soft`, so speculation starts it) that takes 5 s or 30 s and writes a short checkpoint. *Passes* are the trigger calls that ran a pass (succeeded, insufficient or failed; a call the breaker answered is counted apart). *Wait* is the time each took before it answered: what the agent stands still for. Speculation on: `speculative_percent = {SPECULATIVE_PERCENT}` (the summary starts in the top {SPECULATIVE_PERCENT}% below the threshold). Time is tokio's paused clock: sleeps (the gaps, the summarizer) advance a virtual clock, so the replays take well under a second and the waits are exact; CPU time spent in abridge itself is not on that clock (committing a finished checkpoint costs about a millisecond, see the section on speculative commits). *Ready* is the share of passes that waited zero: the summary was written when it was needed. *Calls* counts summarizer calls started, speculative ones included, against passes."
        ),
        &[
            "session (window)",
            "summarizer",
            "speculation",
            "passes",
            "wait p50",
            "wait p95",
            "wait max",
            "ready",
            "calls",
            "speculations started / committed / dropped",
            "waited: no speculation / one still running",
            "insufficient / breaker",
        ],
    );
    let mut verdicts = Vec::new();
    for &(name, model, window) in SAMPLES {
        let steps = steps(name)?;
        for delay in DELAYS {
            for speculate in [false, true] {
                let replay = replay(&steps, model, window, Duration::from_secs(delay), speculate)?;
                let mut waits = replay.waits.clone();
                waits.sort();
                let passes = waits.len();
                let ready = waits.iter().filter(|w| w.is_zero()).count();
                let share = 100.0 * ready as f64 / passes.max(1) as f64;
                if speculate {
                    verdicts.push((name, delay, share, replay.calls, passes));
                }
                section.row(vec![
                    format!("{name} ({window})"),
                    format!("{delay} s"),
                    if speculate { "on" } else { "off" }.to_string(),
                    passes.to_string(),
                    seconds(percentile(&waits, 50)),
                    seconds(percentile(&waits, 95)),
                    seconds(waits.last().copied().unwrap_or_default()),
                    format!("{ready} of {passes} ({share:.0}%)"),
                    format!("{} for {passes}", replay.calls),
                    if speculate {
                        format!(
                            "{} / {} / {}",
                            replay.started, replay.committed, replay.dropped
                        )
                    } else {
                        String::new()
                    },
                    format!("{} / {}", replay.waited_without, replay.waited_for_running),
                    format!("{} / {}", replay.insufficient, replay.breaker),
                ]);
            }
        }
    }
    let met: Vec<String> = verdicts
        .iter()
        .map(|(name, delay, share, calls, passes)| {
            let verdict = if *share >= 95.0 && calls <= passes {
                "met"
            } else {
                "missed"
            };
            format!("{name} at {delay} s: {share:.0}% ready, {calls} calls for {passes} passes ({verdict})")
        })
        .collect();
    section.note(format!(
        "Target (issue 30): with speculation on, zero wait on at least 95% of the passes, with no more summarizer calls than passes. {}.",
        met.join("; ")
    ));
    section.note(
        "Why passes still wait with speculation on: *no speculation* is a pass that found none to take, because the context went from below the band to above the threshold in one message (a large tool result; the Claude Code sample has many) or the one held had just been used; *one still running* is a speculation started too close to the threshold, so the pass waited for the rest of its call. Speculation also makes more passes over the same session: a speculative checkpoint summarizes the span planned when it started, so everything after it stays verbatim, the context after the pass is higher, and the next threshold comes sooner (and a pass can end above its goal: *insufficient*). Each pass still makes at most one call, but the session makes more calls in all than without speculation. A wider band catches more jumps but plans earlier still: with `speculative_percent = 50` the same replays measured 77% and 68% ready (pi-mono, 5 s and 30 s) and 63% and 53% (Claude Code), with more passes.",
    );
    Ok(vec![section])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_times_read_as_milliseconds_since_the_epoch() {
        assert_eq!(unix_millis("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            unix_millis("2025-11-20T23:33:50.805Z"),
            Some(1_763_681_630_805)
        );
        assert_eq!(
            unix_millis("2024-02-29T12:00:00.5Z"),
            Some(1_709_208_000_500)
        );
        assert_eq!(unix_millis("yesterday"), None);
    }
}
