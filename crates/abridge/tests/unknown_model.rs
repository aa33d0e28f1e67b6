//! An unknown model id is no longer accepted silently: the builder says how
//! the catalog matched it, the harness keeps that, and building logs one
//! warning that the figures are guesses.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use abridge::Harness;
use abridge::llm::Match;
use abridge::session::Session;
use abridge_test_support::logs::LogCapture;

const WARNING: &str = "model is not in the catalog";

#[test]
fn an_unknown_model_is_reported_by_the_builder_and_warned_once() {
    let logs = LogCapture::start();
    let builder = Harness::builder(Session::in_memory("unknown"), "house-model-7");
    assert_eq!(builder.lookup().matched, Match::Default);
    let harness = builder.build().unwrap();
    assert_eq!(harness.model_match(), &Match::Default);
    let text = logs.text();
    assert_eq!(text.matches(WARNING).count(), 1, "{text}");
    assert!(text.contains("house-model-7"), "{text}");
}

#[test]
fn a_known_model_is_matched_without_a_warning() {
    let logs = LogCapture::start();
    let builder = Harness::builder(Session::in_memory("known"), "gpt-4o");
    assert_eq!(builder.lookup().matched, Match::Exact);
    let harness = builder.build().unwrap();
    assert_eq!(harness.model_match(), &Match::Exact);
    assert!(!logs.text().contains(WARNING), "{}", logs.text());
}
