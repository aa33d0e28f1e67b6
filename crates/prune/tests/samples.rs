//! On every bundled sample: the tokens each pass reclaims, that every
//! rewrite applies and keeps pairing, and that originals are recoverable.
//! Prints the figures the crate README quotes (`cargo test -p
//! abridge-prune --test samples -- --nocapture`).

use std::path::Path;
use std::path::PathBuf;

use abridge_compact::EstimateCounter;
use abridge_compact::TokenCounter;
use abridge_compact::check::check_invariants;
use abridge_prune::PassContext;
use abridge_prune::PruneConfig;
use abridge_prune::Rule;
use abridge_prune::ShakeConfig;
use abridge_prune::ShakePreset;
use abridge_prune::Snapshot;
use abridge_prune::TrimConfig;
use abridge_prune::original_of;
use abridge_prune::restore;
use abridge_prune::result_text;
use abridge_session::MemoryStore;
use abridge_session::Reference;
use abridge_session::Session;

fn samples() -> std::io::Result<Vec<PathBuf>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/sessions");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl" || x == "traj"))
        .collect();
    paths.sort();
    assert_eq!(paths.len(), 4, "bundled samples in {}", dir.display());
    Ok(paths)
}

fn import(path: &Path) -> Result<Session, abridge_import::ImportError> {
    let imported = abridge_import::read(path, None)?;
    Ok(imported.into_session(Box::new(MemoryStore::new()))?.0)
}

#[test]
fn every_sample_reclaims_and_stays_well_formed() {
    println!(
        "| sample | surface tokens | superseded | useless | pruned | shake | trim | after | reclaimed | shake manual instead | shake rescue instead |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for path in samples().unwrap() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let mut session = import(&path).unwrap();
        let before_messages = session.surface_messages();
        let counter = EstimateCounter::new();
        let before = counter.context_tokens(&session);
        let context = PassContext::compaction();
        // What the import already violates is not ours to judge.
        let imported = check_invariants(&session).violations;
        if !imported.is_empty() {
            println!(
                "{name}: the import already has {} violations, first {:?}",
                imported.len(),
                imported[0]
            );
        }

        let pruned = abridge_prune::prune(
            &Snapshot::of_session(&session, &counter),
            &PruneConfig::default(),
            &context,
            &counter,
        );
        session.append_batch(pruned.drafts()).unwrap();
        assert_eq!(
            check_invariants(&session).violations,
            imported,
            "{name} after prune"
        );

        // What the other presets would move instead, after prune.
        let preset_saving = |preset| {
            abridge_prune::shake(
                &Snapshot::of_session(&session, &counter),
                &ShakeConfig::preset(preset),
                &context,
                &counter,
            )
            .report
            .saved()
        };
        let manual = preset_saving(ShakePreset::Manual);
        let rescue = preset_saving(ShakePreset::Rescue);

        let shaken = abridge_prune::shake(
            &Snapshot::of_session(&session, &counter),
            &ShakeConfig::preset(ShakePreset::Automatic),
            &context,
            &counter,
        );
        session.append_batch(shaken.drafts()).unwrap();
        assert_eq!(
            check_invariants(&session).violations,
            imported,
            "{name} after shake"
        );

        let trimmed = abridge_prune::trim(
            &Snapshot::of_session(&session, &counter),
            &TrimConfig::default(),
            &context,
            &counter,
        )
        .unwrap();
        session.append_batch(trimmed.drafts()).unwrap();
        assert_eq!(
            check_invariants(&session).violations,
            imported,
            "{name} after trim"
        );
        let after = counter.context_tokens(&session);

        // Every position still holds its original one walk back.
        let seqs = session.surface().seqs().to_vec();
        assert_eq!(seqs.len(), before_messages.len());
        for (seq, original) in seqs.iter().zip(&before_messages) {
            let source = session.message(original_of(&session, *seq)).unwrap();
            assert_eq!(source, original, "{name}: seq {seq}");
        }
        // Every reference a placeholder names reads back from the log:
        // an event holding a tool result, or characters of its text.
        for seq in &seqs {
            let message = session.message(*seq).unwrap();
            let Some((_, content, _)) = message.tool_result_block() else {
                continue;
            };
            for text in content.iter().filter_map(abridge_llm::Block::as_text) {
                for word in text.split(|c: char| c.is_whitespace() || c == ')') {
                    if !word.starts_with(abridge_session::RECALL_SCHEME) {
                        continue;
                    }
                    let reference: Reference = word.parse().unwrap();
                    let (target, _) = reference.seqs();
                    let original = session.message(target).unwrap();
                    let full = result_text(original.tool_result_block().unwrap().1);
                    if let Reference::Part { start, end, .. } = reference {
                        assert!(end <= full.chars().count(), "{name}: {reference}");
                        assert!(start < end, "{name}: {reference}");
                    }
                }
            }
        }
        // And every rewrite can be taken back.
        let rewritten: Vec<u64> = seqs
            .iter()
            .copied()
            .filter(|s| original_of(&session, *s) != *s)
            .collect();
        for seq in &rewritten {
            let draft = restore(&session, *seq).unwrap();
            session.append(draft).unwrap();
        }
        let restored: Vec<_> = session.surface_messages();
        assert_eq!(restored, before_messages, "{name}: restore all");

        println!(
            "| {name} | {before} | {} | {} | {} | {} | {} | {after} | {:.1}% | {manual} | {rescue} |",
            pruned.report.saved_by(Rule::Superseded),
            pruned.report.saved_by(Rule::Useless),
            pruned.report.saved_by(Rule::Pruned),
            shaken.report.saved(),
            trimmed.report.saved(),
            100.0 * before.saturating_sub(after) as f64 / before.max(1) as f64,
        );
    }
}
