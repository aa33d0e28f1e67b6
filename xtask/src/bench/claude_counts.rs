//! How well Claude sessions are counted before a usage report: plain
//! o200k and o200k with the measured Claude correction, against the
//! reports in the bundled Claude sessions; and the count_tokens path's
//! cache over a replay, against a loopback server.

use std::path::Path;
use std::sync::Arc;

use abridge::CountCache;
use abridge::CountPrimer;
use abridge_llm::Catalog;
use abridge_llm::Role;
use abridge_meter::CostModel;
use abridge_meter::calibrate;
use abridge_meter::calibrate::ErrorStats;
use abridge_providers::CountTokensClient;
use abridge_providers::ProviderConfig;
use abridge_session::EventBody;
use abridge_session::Session;
use anyhow::Context;

use super::Section;

/// The bundled sessions with Claude usage reports, with the model most of
/// each ran on.
const SAMPLES: &[(&str, &str)] = &[
    ("claude-code__spotter__4d5611e5.jsonl", "claude-opus-4-6"),
    ("pi-mono__large-session.jsonl", "claude-sonnet-4-5"),
];

fn sample_path(name: &str) -> std::path::PathBuf {
    Path::new("assets/sessions").join(name)
}

fn cell(stats: ErrorStats) -> String {
    format!(
        "{:.1}% / {:.1}% / {:.1}%",
        stats.mean_percent, stats.median_percent, stats.worst_percent
    )
}

/// Runs both sections.
pub(crate) fn run() -> anyhow::Result<Vec<Section>> {
    Ok(vec![errors()?, endpoint_replay()?])
}

fn errors() -> anyhow::Result<Section> {
    let mut section = Section::new(
        "Claude counts before a usage report",
        "Each bundled session with Claude usage reports, replayed: at every report, the prompt \
         Anthropic counted (uncached input + cache read + cache write) beside the meter's estimate \
         of the history before it. *Deltas*: what two consecutive reports in one stretch of \
         history (no compaction, no model switch, no shrinking report) differ by, against our \
         count of what was added; the system prompt and tool definitions cancel. *Totals*: the \
         first report of each stretch anchors (that is where the overhead is learnt), every later \
         one is predicted as that report plus our count of what came after, as the meter's \
         anchored figure does. Mean / median / worst absolute error, in percent of the reported figure; \
         `o200k` is the bare tokenizer, `corrected` applies `CLAUDE_O200K_CORRECTION` (1.21, \
         fitted on the deltas of both samples together).",
        &[
            "sample (model)",
            "reports",
            "deltas",
            "deltas, o200k",
            "deltas, corrected",
            "totals, o200k",
            "totals, corrected",
            "this sample's own fit",
        ],
    );
    let catalog = Catalog::builtin();
    for (name, model) in SAMPLES {
        let entry = catalog.lookup(model).entry;
        let drafts = || -> anyhow::Result<_> {
            Ok(abridge_import::read(&sample_path(name), None)
                .with_context(|| format!("importing {name}"))?
                .drafts)
        };
        let bare =
            calibrate::report_points(drafts()?, CostModel::for_model(&entry).with_correction(1.0))?;
        let corrected = calibrate::report_points(drafts()?, CostModel::for_model(&entry))?;
        let bare_deltas = calibrate::report_deltas(&bare);
        let corrected_deltas = calibrate::report_deltas(&corrected);
        section.row(vec![
            format!("{name} ({model})"),
            bare.len().to_string(),
            bare_deltas.len().to_string(),
            cell(calibrate::delta_error(&bare_deltas, 1.0)),
            cell(calibrate::delta_error(&corrected_deltas, 1.0)),
            cell(calibrate::total_error(&bare, 1.0)),
            cell(calibrate::total_error(&corrected, 1.0)),
            calibrate::fit(&bare_deltas).map_or("none".into(), |f| format!("{f:.3}")),
        ]);
    }
    section.note(
        "Single deltas are small (one tool result, one reply) and carry what the log cannot \
         show (thinking sized from its signature, the host's per-turn reminders), so their \
         errors are wide either way; the totals are what the trigger acts on. The pi sample's \
         worst deltas go the other way: the log grew by thousands of tokens between two reports \
         that grew by tens (7,947 against 59 at worst), presumably a message the log holds \
         that was not sent at that call. The Codex sample \
         is left out: its text is redacted to placeholders by its authors (the meter's \
         `codex_rollout` test rebuilds it), and o200k is OpenAI's own tokenizer, uncorrected. \
         Claude Opus 4.7's newer tokenizer is not in any sample; its factor is this one times \
         Anthropic's documented upper bound (1.35), not a measurement.",
    );
    Ok(section)
}

fn endpoint_replay() -> anyhow::Result<Section> {
    let mut section = Section::new(
        "Claude counts: the count_tokens path",
        "The Claude Code sample replayed turn by turn through `CountPrimer` and \
         `CountTokensClient` against a loopback HTTP server that answers every \
         `POST /v1/messages/count_tokens` with a known count: before each model call in the log \
         (each assistant message), the surface is primed, as `Harness::after_turn` does. Real \
         Anthropic is unreachable from the build machine, so this measures the calls and the \
         cache, not the figures.",
        &[
            "sample",
            "messages appended",
            "primes (model calls)",
            "count calls",
            "messages given a count",
            "calls per message",
            "messages sent again after a count",
        ],
    );
    let uri = super::llm::start_server()?;
    let client = CountTokensClient::new(ProviderConfig::new(uri).with_api_key("bench-key"))?;
    let (name, model) = SAMPLES[0];
    let entry = Catalog::builtin().lookup(model).entry;
    let cache = Arc::new(CountCache::new());
    // A budget no replay reaches, so every boundary is counted as it comes.
    let primer = CountPrimer::new(
        Arc::new(client),
        cache.clone(),
        CostModel::for_model(&entry),
    )
    .with_max_calls(usize::MAX);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut session = Session::in_memory("replay");
    let (mut appended, mut primes, mut calls, mut counted) = (0usize, 0usize, 0usize, 0usize);
    let mut failures = Vec::new();
    for draft in abridge_import::read(&sample_path(name), None)?.drafts {
        let is_reply =
            matches!(&draft.body, EventBody::Message(m) if m.message.role == Role::Assistant);
        if is_reply {
            primes += 1;
            let report = runtime.block_on(primer.prime(model, &session.surface_messages()));
            calls += report.calls;
            counted += report.counted;
            if let Some(error) = report.error {
                failures.push(error.to_string());
            }
        }
        if matches!(draft.body, EventBody::Message(_)) {
            appended += 1;
        }
        session.append(draft)?;
    }
    anyhow::ensure!(failures.is_empty(), "count calls failed: {failures:?}");
    section.row(vec![
        name.to_string(),
        appended.to_string(),
        primes.to_string(),
        calls.to_string(),
        counted.to_string(),
        format!("{:.2}", calls as f64 / appended.max(1) as f64),
        (counted - cache.len()).to_string(),
    ]);
    section.note(format!(
        "One call per user or tool message (a boundary) not seen before, plus one for a prefix \
         that changed under it ({} here; the compaction in the log puts its checkpoint first, \
         so nothing before it needs counting); assistant messages are never sent on their own. \
         {} distinct messages hold a count in the cache at the end.",
        calls - counted,
        cache.len()
    ));
    Ok(section)
}
