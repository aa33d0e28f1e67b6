//! Messages abridge wrote (a checkpoint, a pruned tool result) in the
//! agent's dialect, through abridge-llm's own encoders: the proxy has no
//! second encoder. The clients are built only for their `build_body`;
//! they never send anything.

use abridge_llm::LlmError;
use abridge_llm::Message;
use abridge_llm::Purpose;
use abridge_llm::Request;
use abridge_providers::AnthropicClient;
use abridge_providers::AnthropicOptions;
use abridge_providers::ChatOptions;
use abridge_providers::OpenAiChatClient;
use abridge_providers::OpenAiResponsesClient;
use abridge_providers::ProviderConfig;
use abridge_providers::ResponsesOptions;
use serde_json::Value;

use crate::dialect::Dialect;

/// The three dialects' encoders.
#[derive(Debug)]
pub(crate) struct Encoders {
    chat: OpenAiChatClient,
    responses: OpenAiResponsesClient,
    anthropic: AnthropicClient,
}

impl Encoders {
    pub(crate) fn new() -> Result<Self, LlmError> {
        // Never called: only the body builders are used.
        let config = || ProviderConfig::new("http://127.0.0.1:9").with_default_model("encode-only");
        Ok(Encoders {
            chat: OpenAiChatClient::new(config(), ChatOptions::default())?,
            responses: OpenAiResponsesClient::new(config(), ResponsesOptions::default())?,
            anthropic: AnthropicClient::new(config(), AnthropicOptions::default())?,
        })
    }

    /// `messages` as history items of `dialect`, in order. Anthropic cache
    /// breakpoints the encoder marks are taken out: the agent places its
    /// own, and a request may carry only a few.
    pub(crate) fn items(
        &self,
        dialect: Dialect,
        messages: Vec<Message>,
    ) -> Result<Vec<Value>, LlmError> {
        let request = Request::new("encode-only", messages, Purpose::Turn);
        let mut body = match dialect {
            Dialect::Chat => self.chat.build_body(&request, false)?,
            Dialect::Responses => self.responses.build_body(&request, false)?,
            Dialect::Anthropic => self.anthropic.build_body(&request, false)?,
        };
        if dialect == Dialect::Anthropic {
            strip_cache_control(&mut body);
        }
        Ok(match body.get_mut(dialect.history_key()).map(Value::take) {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        })
    }
}

/// Takes every `cache_control` key out of `value`, at any depth.
pub(crate) fn strip_cache_control(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("cache_control");
            map.values_mut().for_each(strip_cache_control);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_cache_control),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_user_message_is_one_item_in_each_dialect_without_cache_marks() {
        let encoders = Encoders::new().unwrap();
        for dialect in [Dialect::Chat, Dialect::Responses, Dialect::Anthropic] {
            let items = encoders
                .items(dialect, vec![Message::user("checkpoint")])
                .unwrap();
            assert_eq!(items.len(), 1, "{dialect:?}");
            assert_eq!(items[0]["role"], json!("user"), "{dialect:?}");
            assert!(
                !items[0].to_string().contains("cache_control"),
                "{dialect:?}"
            );
        }
    }
}
