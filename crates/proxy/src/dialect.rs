//! The three wire dialects the proxy understands, and where each keeps
//! the parts of a request that matter here: the head (system prompt and
//! tool definitions, which name the agent) and the history (the list the
//! agent resends, longer, on every turn).

use serde_json::Value;

/// One of the request shapes the proxy reads and rewrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// OpenAI Chat Completions (`/v1/chat/completions`): `messages`, the
    /// system prompt among them.
    Chat,
    /// OpenAI Responses (`/v1/responses`): `instructions` and `input`.
    Responses,
    /// Anthropic Messages (`/v1/messages`): `system` and `messages`.
    Anthropic,
}

/// Which upstream a request goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Upstream {
    /// The `--upstream openai=URL` endpoint (Chat, Responses, and any
    /// other path without Anthropic's headers).
    OpenAi,
    /// The `--upstream anthropic=URL` endpoint.
    Anthropic,
}

impl Dialect {
    /// The dialect of a path the proxy compacts; `None` for every other
    /// path (`count_tokens` included: it is forwarded as it came).
    pub fn of_path(path: &str) -> Option<Dialect> {
        match path.trim_end_matches('/') {
            "/v1/chat/completions" | "/chat/completions" => Some(Dialect::Chat),
            "/v1/responses" | "/responses" => Some(Dialect::Responses),
            "/v1/messages" | "/messages" => Some(Dialect::Anthropic),
            _ => None,
        }
    }

    /// The endpoint that speaks this dialect.
    pub fn upstream(self) -> Upstream {
        match self {
            Dialect::Chat | Dialect::Responses => Upstream::OpenAi,
            Dialect::Anthropic => Upstream::Anthropic,
        }
    }

    /// The provider name abridge's encoders and logs use.
    pub fn provider(self) -> &'static str {
        match self {
            Dialect::Chat => "openai",
            Dialect::Responses => "openai-responses",
            Dialect::Anthropic => "anthropic",
        }
    }

    /// The body's history field.
    pub(crate) fn history_key(self) -> &'static str {
        match self {
            Dialect::Chat | Dialect::Anthropic => "messages",
            Dialect::Responses => "input",
        }
    }

    /// What names the agent besides its history: the system prompt kept
    /// outside the history, and the tool definitions. Read as a JSON
    /// value so that two requests with the same head hash the same.
    pub(crate) fn head(self, body: &Value) -> Value {
        let system = match self {
            Dialect::Chat => Value::Null,
            Dialect::Responses => body.get("instructions").cloned().unwrap_or(Value::Null),
            Dialect::Anthropic => body.get("system").cloned().unwrap_or(Value::Null),
        };
        let tools = body.get("tools").cloned().unwrap_or(Value::Null);
        serde_json::json!([system, tools])
    }

    /// The history's items, or `None` when the body has none this proxy
    /// can read (then the request is forwarded untouched). A Responses
    /// `input` given as one string is one user item.
    pub(crate) fn items(self, body: &Value) -> Option<Vec<Value>> {
        match body.get(self.history_key())? {
            Value::Array(items) => Some(items.clone()),
            Value::String(text) if self == Dialect::Responses => {
                Some(vec![serde_json::json!({"role": "user", "content": text})])
            }
            _ => None,
        }
    }

    /// Whether `item` is the agent's copy of a model reply (or a part of
    /// one: Responses splits a reply into a message, reasoning and one
    /// item per tool call).
    pub(crate) fn is_reply_part(self, item: &Value) -> bool {
        let role = item.get("role").and_then(Value::as_str);
        match self {
            Dialect::Chat | Dialect::Anthropic => role == Some("assistant"),
            Dialect::Responses => match item.get("type").and_then(Value::as_str) {
                Some("function_call" | "reasoning" | "web_search_call" | "custom_tool_call") => {
                    true
                }
                Some("function_call_output" | "custom_tool_call_output") => false,
                _ => role == Some("assistant"),
            },
        }
    }

    /// Whether a reply's parts may run over several items (Responses).
    pub(crate) fn reply_spans_items(self) -> bool {
        self == Dialect::Responses
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_their_dialect_and_count_tokens_is_passed_through() {
        assert_eq!(
            Dialect::of_path("/v1/chat/completions"),
            Some(Dialect::Chat)
        );
        assert_eq!(Dialect::of_path("/v1/responses"), Some(Dialect::Responses));
        assert_eq!(Dialect::of_path("/v1/messages"), Some(Dialect::Anthropic));
        assert_eq!(Dialect::of_path("/v1/messages/count_tokens"), None);
        assert_eq!(Dialect::of_path("/v1/models"), None);
    }

    #[test]
    fn a_responses_string_input_is_one_user_item() {
        let body = serde_json::json!({"input": "hi"});
        let items = Dialect::Responses.items(&body).unwrap();
        assert_eq!(
            items,
            vec![serde_json::json!({"role": "user", "content": "hi"})]
        );
        assert!(Dialect::Chat.items(&body).is_none());
    }
}
