//! Benchmarks for the prune area: a prune pass and a shake pass over the
//! largest sample, cold (nothing counted yet) and incremental (counts
//! cached by seq, the previous pass applied), against recounting the
//! surface exactly with o200k, the work a pass without a cache would
//! repeat; the tokens each pass reclaims on every sample; and `mask`
//! beside `prune` and `digest`, one manual compaction each, per sample.

use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use abridge_llm::ImageBilling;
use abridge_meter::CostModel;
use abridge_meter::EstimateCounter;
use abridge_meter::MeterCounter;
use abridge_meter::PriorThinking;
use abridge_meter::Tiktoken;
use abridge_meter::TokenCounter;
use abridge_meter::TokenMeter;
use abridge_prune::PassContext;
use abridge_prune::PruneConfig;
use abridge_prune::Reclaim;
use abridge_prune::Rule;
use abridge_prune::ShakeConfig;
use abridge_prune::ShakePreset;
use abridge_prune::Snapshot;
use abridge_prune::TrimConfig;
use abridge_session::MemoryStore;
use abridge_session::Session;
use anyhow::Context;

use super::Section;
use super::fmt_duration;
use super::median_time;

/// Runs this area's benchmarks; each returned section becomes a table.
pub(crate) fn run() -> anyhow::Result<Vec<Section>> {
    let samples = load_samples()?;
    Ok(vec![
        speed(&samples)?,
        reclaimed(&samples)?,
        mask_beside(&samples)?,
    ])
}

/// A sample session as imported.
struct Sample {
    name: String,
    bytes: u64,
    session: Session,
}

fn samples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/sessions")
}

fn load_samples() -> anyhow::Result<Vec<Sample>> {
    let dir = samples_dir();
    let mut samples = Vec::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl" || x == "traj"))
        .collect();
    paths.sort();
    for path in paths {
        let imported = abridge_import::read(&path, None)
            .with_context(|| format!("importing {}", path.display()))?;
        let (session, _) = imported.into_session(Box::new(MemoryStore::new()))?;
        samples.push(Sample {
            name: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            bytes: std::fs::metadata(&path)?.len(),
            session,
        });
    }
    anyhow::ensure!(!samples.is_empty(), "no samples in {}", dir.display());
    Ok(samples)
}

/// A meter on o200k that counts every message whole, earlier turns'
/// thinking included, so the second table reports tokens as a provider
/// would bill them.
fn o200k_counter() -> MeterCounter {
    let cost = CostModel::new(Arc::new(Tiktoken::o200k()), ImageBilling::Anthropic)
        .with_prior_thinking(PriorThinking::Kept);
    MeterCounter::new(TokenMeter::new(cost))
}

fn prune_pass(session: &Session, counter: &dyn TokenCounter) -> Reclaim {
    abridge_prune::prune(
        &Snapshot::of_session(session, counter),
        &PruneConfig::default(),
        &PassContext::compaction(),
        counter,
    )
}

fn shake_pass(session: &Session, counter: &dyn TokenCounter) -> anyhow::Result<Reclaim> {
    Ok(abridge_prune::shake(
        &Snapshot::of_session(session, counter),
        &ShakeConfig::preset(ShakePreset::Automatic),
        &PassContext::compaction(),
        counter,
    ))
}

/// A copy of a sample's session, to apply rewrites to.
fn copy(sample: &Sample) -> anyhow::Result<Session> {
    let mut session = Session::in_memory("bench");
    let drafts = sample
        .session
        .events()
        .iter()
        .map(|e| abridge_session::Draft {
            parent: Some(e.parent),
            time: Some(e.time.clone()),
            body: e.body.clone(),
        })
        .collect();
    session.append_batch(drafts)?;
    Ok(session)
}

fn speed(samples: &[Sample]) -> anyhow::Result<Section> {
    let largest = samples
        .iter()
        .max_by_key(|s| s.session.surface().len())
        .context("no samples")?;
    let mut section = Section::new(
        "Prune and shake passes",
        &format!(
            "One pass over the surface of the largest sample ({}, {} visible messages). Cold: a \
             fresh bytes/4 counter, every message counted. Incremental: counts cached by seq and \
             the previous pass already applied, as between turns. Shake writes its artifact to a \
             memory store. The alternative is recounting the surface exactly with o200k on every \
             pass, which a pass without a seq cache would repeat.",
            largest.name,
            largest.session.surface().len()
        ),
        &[
            "pass",
            "mode",
            "median time",
            "rewrites",
            "tokens saved (bytes/4)",
            "vs o200k recount",
        ],
    );
    let min = Duration::from_secs(3);
    let cost = CostModel::new(Arc::new(Tiktoken::o200k()), ImageBilling::Anthropic);
    let messages = largest.session.surface_messages();
    let recount = median_time(min, || {
        messages.iter().map(|m| cost.message(m)).sum::<u64>()
    });

    // Prune.
    let cold_reclaim = prune_pass(&largest.session, &EstimateCounter::new());
    let prune_cold = median_time(min, || {
        prune_pass(&largest.session, &EstimateCounter::new())
    });
    let mut pruned = copy(largest)?;
    let warm = EstimateCounter::new();
    let first = prune_pass(&pruned, &warm);
    pruned.append_batch(first.drafts())?;
    let again = prune_pass(&pruned, &warm);
    let prune_incremental = median_time(min, || prune_pass(&pruned, &warm));
    let ratio = |t: Duration| {
        format!(
            "{:.1}x faster",
            recount.as_secs_f64() / t.as_secs_f64().max(1e-12)
        )
    };
    section.row(vec![
        "prune".into(),
        "cold".into(),
        fmt_duration(prune_cold),
        cold_reclaim.rewrites.len().to_string(),
        cold_reclaim.report.saved().to_string(),
        ratio(prune_cold),
    ]);
    section.row(vec![
        "prune".into(),
        "incremental".into(),
        fmt_duration(prune_incremental),
        again.rewrites.len().to_string(),
        again.report.saved().to_string(),
        ratio(prune_incremental),
    ]);

    // Shake, after prune as the method order runs them.
    let shake_cold_reclaim = shake_pass(&pruned, &EstimateCounter::new())?;
    let shake_cold = median_time(min, || shake_pass(&pruned, &EstimateCounter::new()));
    let mut shaken = copy(largest)?;
    shaken.append_batch(first.drafts())?;
    let warm = EstimateCounter::new();
    let first_shake = shake_pass(&shaken, &warm)?;
    shaken.append_batch(first_shake.drafts())?;
    let shake_again = shake_pass(&shaken, &warm)?;
    let shake_incremental = median_time(min, || shake_pass(&shaken, &warm));
    section.row(vec![
        "shake (automatic)".into(),
        "cold".into(),
        fmt_duration(shake_cold),
        shake_cold_reclaim.rewrites.len().to_string(),
        shake_cold_reclaim.report.saved().to_string(),
        ratio(shake_cold),
    ]);
    section.row(vec![
        "shake (automatic)".into(),
        "incremental".into(),
        fmt_duration(shake_incremental),
        shake_again.rewrites.len().to_string(),
        shake_again.report.saved().to_string(),
        ratio(shake_incremental),
    ]);
    section.row(vec![
        "o200k recount of the surface".into(),
        "alternative".into(),
        fmt_duration(recount),
        "-".into(),
        "-".into(),
        "1.0x".into(),
    ]);
    section.note(
        "Incremental passes find nothing new here (the first pass took everything its rules \
         allow), so they measure the steady per-turn cost: the surface walk and the rules, \
         with no counting.",
    );
    Ok(section)
}

fn reclaimed(samples: &[Sample]) -> anyhow::Result<Section> {
    let mut section = Section::new(
        "Tokens reclaimed per sample",
        "Each imported sample, default settings, as a compaction would run them: prune \
         (superseded reads, useless results, old outputs), then shake (automatic preset), then \
         trim, each applied before the next. Tokens are o200k with the meter's message \
         overheads.",
        &[
            "sample",
            "file",
            "surface tokens",
            "superseded",
            "useless",
            "pruned",
            "shake",
            "trim",
            "after",
            "reclaimed",
        ],
    );
    for sample in samples {
        let mut session = copy(sample)?;
        let counter = o200k_counter();
        // Our count, not the figure anchored on the sample's usage reports.
        let before = counter.measure(&session).estimate;
        let pruned = prune_pass(&session, &counter);
        session.append_batch(pruned.drafts())?;
        let shaken = shake_pass(&session, &counter)?;
        session.append_batch(shaken.drafts())?;
        let trimmed = abridge_prune::trim(
            &Snapshot::of_session(&session, &counter),
            &TrimConfig::default(),
            &PassContext::compaction(),
            &counter,
        )?;
        session.append_batch(trimmed.drafts())?;
        let after = counter.measure(&session).estimate;
        section.row(vec![
            sample.name.clone(),
            format!("{:.1} MB", sample.bytes as f64 / 1e6),
            before.to_string(),
            pruned.report.saved_by(Rule::Superseded).to_string(),
            pruned.report.saved_by(Rule::Useless).to_string(),
            pruned.report.saved_by(Rule::Pruned).to_string(),
            shaken.report.saved().to_string(),
            trimmed.report.saved().to_string(),
            after.to_string(),
            format!(
                "{:.1}%",
                100.0 * before.saturating_sub(after) as f64 / before.max(1) as f64
            ),
        ]);
    }
    Ok(section)
}

/// What one manual compaction by `method` leaves of a copy of `sample`,
/// or `None` when the method declines.
fn after_method(
    sample: &Sample,
    method: &dyn abridge_compact::CompactionMethod,
) -> anyhow::Result<Option<(u64, u64)>> {
    let mut session = copy(sample)?;
    let policy =
        abridge_compact::Policy::new(Arc::new(o200k_counter())).with_keep_recent_tokens(20_000);
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let landed = runtime.block_on(abridge_compact::compact_session(
        &mut session,
        method,
        &policy,
        abridge_compact::Trigger::Manual,
    ));
    Ok(landed.ok().map(|o| (o.tokens_before, o.tokens_after)))
}

fn mask_beside(samples: &[Sample]) -> anyhow::Result<Section> {
    let mut section = Section::new(
        "mask beside prune and digest",
        "Each imported sample, one manual compaction per method on its own copy (keep 20000 \
         recent tokens, default settings: mask keeps the newest 10 tool results, prune \
         protects the newest 40000 tool tokens and acts only on a 20000-token saving). Tokens \
         are o200k, the figure compaction acts on (the larger of the estimate and \
         the usage the sample reported, as the trigger measures it); `-` means the method declined. The ratios are \
         mask's context after against the other method's, from the same run (below 1: mask \
         left less).",
        &[
            "sample",
            "before",
            "prune after",
            "mask after",
            "digest after",
            "mask / prune",
            "mask / digest",
        ],
    );
    let reclaim = abridge_prune::ReclaimConfig::default();
    let built = |name: &str| {
        reclaim
            .method(name)
            .with_context(|| format!("no method {name}"))?
            .map_err(anyhow::Error::from)
    };
    let (prune, mask) = (built("prune")?, built("mask")?);
    let digest = abridge_compact_basic::DigestMethod;
    let cell = |figures: Option<(u64, u64)>| figures.map_or("-".to_string(), |f| f.1.to_string());
    for sample in samples {
        // The figure compaction acts on (anchored on reported usage where
        // the sample has it), so before and after compare.
        let before =
            abridge_compact::TokenCounter::context_tokens(&o200k_counter(), &sample.session);
        let pruned = after_method(sample, prune.as_ref())?;
        let masked = after_method(sample, mask.as_ref())?;
        let digested = after_method(sample, &digest)?;
        let ratio = |other: Option<(u64, u64)>| {
            let mask_after = masked.map_or(before, |m| m.1);
            let other_after = other.map_or(before, |o| o.1);
            format!("{:.2}", mask_after as f64 / other_after.max(1) as f64)
        };
        section.row(vec![
            sample.name.clone(),
            before.to_string(),
            cell(pruned),
            cell(masked),
            cell(digested),
            ratio(pruned),
            ratio(digested),
        ]);
    }
    section.note(
        "A declined method counts as leaving the context unchanged in the ratios. mask keeps \
         every message the model wrote and replaces only tool observations, so it sits between \
         prune (which keeps the newest 40000 tool tokens) and digest (which replaces all but \
         the newest 20000 tokens with a summary).",
    );
    Ok(section)
}
