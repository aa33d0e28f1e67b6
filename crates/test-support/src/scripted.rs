//! The scripted [`LlmClient`](abridge_llm::LlmClient): it lives in
//! abridge-llm (feature `testing`) so frameworks can use it too; this
//! module re-exports it beside the helpers only abridge's tests need.

pub use abridge_llm::testing::*;

/// A real Anthropic client pointed at a port nothing listens on: for tests
/// that need a provider's own client (its name, its dialect, how it shows
/// in logs) and never send a request. Needs the `providers` feature.
#[cfg(feature = "providers")]
pub fn unreachable_anthropic() -> std::sync::Arc<dyn abridge_llm::LlmClient> {
    std::sync::Arc::new(
        abridge_providers::AnthropicClient::new(
            abridge_providers::ProviderConfig::new("http://127.0.0.1:9"),
            abridge_providers::AnthropicOptions::default(),
        )
        .expect("an Anthropic client for a fixed loopback url"),
    )
}
