//! The estimate on a Codex rollout against the input tokens the provider
//! reported (issue 16, point 1).
//!
//! The bundled rollout (`assets/sessions/codex__localpush__...`) is a real
//! Codex CLI session with 573 `token_count` usage reports, but its authors
//! redacted every free-text field to `[REDACTED_<KIND> len=<N> sha=<H>]`.
//! The test rebuilds it in the same format with each placeholder filled back
//! to its recorded length: encrypted reasoning (`encrypted_content`) with
//! base64, as the real blobs are; text with prose and source code from this
//! repository (English docs and Rust, the kind of text a coding session
//! holds); image URLs with a plain URL (billed as an image of unknown size).
//! Then it imports the rollout with the Codex importer, measures it for the
//! rollout's model (gpt-5.3-codex), and compares the estimate with the
//! input tokens reported for the last turn.
//!
//! A proxy, not a measurement of the meter on real text: the lengths and
//! the usage are the session's, but the words are stand-ins, and how many
//! tokens a character costs depends on the words (our docs and Rust are
//! not the session's prose, paths and shell output). It shows that the
//! structure is counted right (what is billed, what is free, encrypted
//! reasoning not read as text), which the old rule got 62% wrong; how
//! close the meter comes on a real unredacted rollout is not measured,
//! since no such rollout is bundled.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use abridge_import::Format;
use abridge_import::read_bytes;
use abridge_llm::Block;
use abridge_llm::Catalog;
use abridge_meter::BLOCK_OVERHEAD;
use abridge_meter::TokenMeter;
use abridge_session::Session;

const SAMPLE: &str = "codex__localpush__rollout-2026-02-23T12-54-34-redacted.jsonl";

/// Text used to fill redacted text fields: this repository's docs and
/// source, cycled.
fn filler_text(root: &std::path::Path) -> Vec<char> {
    let mut text = String::new();
    for file in [
        "README.md",
        "docs/compaction.md",
        "crates/meter/src/meter.rs",
        "crates/import/src/codex.rs",
    ] {
        text.push_str(&std::fs::read_to_string(root.join(file)).unwrap());
        text.push('\n');
    }
    text.chars().collect()
}

/// Deterministic base64 noise: the shape of encrypted content.
fn base64_noise(len: usize, seed: u64) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ALPHABET[(state % 64) as usize] as char
        })
        .collect()
}

/// One placeholder filled back to its recorded length, JSON-escaped for
/// the string it sits in.
fn fill(kind: &str, len: usize, sha: &str, text: &[char], cursor: &mut usize) -> String {
    let seed = u64::from_str_radix(sha, 16).unwrap_or(7);
    let raw = match kind {
        "ENCRYPTED_CONTENT" => base64_noise(len, seed),
        "IMAGE_URL" | "IMAGES" => "https://example.invalid/screenshot.png".to_string(),
        _ => {
            let start = *cursor % text.len();
            *cursor = cursor.wrapping_add(len);
            text.iter().cycle().skip(start).take(len).collect()
        }
    };
    let quoted = serde_json::to_string(&raw).unwrap();
    quoted[1..quoted.len() - 1].to_string()
}

/// The rollout with every `[REDACTED_<KIND> len=<N> sha=<H>]` filled.
fn rebuilt(root: &std::path::Path) -> String {
    let source = std::fs::read_to_string(root.join("assets/sessions").join(SAMPLE)).unwrap();
    let text = filler_text(root);
    let mut cursor = 0;
    let mut out = String::with_capacity(source.len() * 2);
    let mut rest = source.as_str();
    while let Some(at) = rest.find("[REDACTED_") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + "[REDACTED_".len()..];
        let end = tail.find(']').unwrap();
        let mut fields = tail[..end].split(' ');
        let kind = fields.next().unwrap();
        let len: usize = fields
            .next()
            .unwrap()
            .strip_prefix("len=")
            .unwrap()
            .parse()
            .unwrap();
        let sha = fields.next().unwrap().strip_prefix("sha=").unwrap();
        out.push_str(&fill(kind, len, sha, &text, &mut cursor));
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The last `token_count` report's `last_token_usage.input_tokens`.
fn last_reported_input(rollout: &str) -> u64 {
    rollout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|v| v["payload"]["type"] == "token_count")
        .filter_map(|v| v["payload"]["info"]["last_token_usage"]["input_tokens"].as_u64())
        .next_back()
        .unwrap()
}

#[test]
fn a_codex_rollout_rebuilt_with_stand_in_text_estimates_within_15_percent_a_proxy() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let rollout = rebuilt(&root);
    assert!(!rollout.contains("[REDACTED_"));
    let reported = last_reported_input(&rollout);
    assert_eq!(reported, 162_073, "the sample's last report");

    let imported = read_bytes(SAMPLE, rollout.as_bytes(), Some(Format::Codex)).unwrap();
    let mut session = Session::in_memory(&imported.header.session_id);
    imported.append_to(&mut session).unwrap();
    let entry = Catalog::builtin().lookup("gpt-5.3-codex").entry;
    let mut meter = TokenMeter::for_model(&entry);
    let measure = meter.measure(&session);

    // What the old rule made of the same surface: every thinking block
    // counted, its signature tokenized as text.
    let cost = meter.cost_model().clone();
    let old: u64 = session
        .surface_messages()
        .iter()
        .map(|m| {
            let (rest, _) = cost.split(m);
            let thinking: u64 = m
                .content
                .iter()
                .filter_map(|b| match b {
                    Block::Thinking {
                        thinking,
                        signature,
                    } => Some(
                        BLOCK_OVERHEAD
                            + cost.text(thinking)
                            + signature.as_deref().map_or(0, |s| cost.text(s)),
                    ),
                    _ => None,
                })
                .sum();
            rest + thinking
        })
        .sum();
    let error = measure.estimate as f64 / reported as f64 - 1.0;
    println!(
        "estimate {} vs reported input {reported} ({:+.1}%); the old rule: {old} ({:+.1}%)",
        measure.estimate,
        error * 100.0,
        (old as f64 / reported as f64 - 1.0) * 100.0,
    );
    assert!(
        error.abs() <= 0.15,
        "estimate {} is {:+.1}% off the reported {reported}",
        measure.estimate,
        error * 100.0
    );
    // Counting the encrypted reasoning as text is far off.
    assert!(old as f64 > 1.15 * reported as f64);
}
