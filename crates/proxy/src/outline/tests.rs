use super::*;

#[test]
fn each_dialect_reads_its_head_and_items_as_the_agent_wrote_them() {
    let body = br#"{"model":"claude-x","system":"be brief","tools":[{"name":"read"}],"messages":[{"role":"user","content":"a"},  {"role":"assistant","content":"b"}],"max_tokens":9}"#;
    let outline = Outline::read(Dialect::Anthropic, body).unwrap();
    assert_eq!(outline.model, "claude-x");
    assert_eq!(outline.items.len(), 2);
    assert_eq!(
        outline.items[1].get(),
        r#"{"role":"assistant","content":"b"}"#
    );
    assert_eq!(
        outline.head(),
        serde_json::json!(["be brief", [{"name": "read"}]])
    );
    // Chat's system prompt is a history item: nothing outside it.
    let chat = Outline::read(Dialect::Chat, body).unwrap();
    assert_eq!(chat.head(), serde_json::json!([null, [{"name": "read"}]]));
    assert_eq!(chat.parsed(1).unwrap().len(), 1);
}

#[test]
fn a_responses_string_input_is_one_user_item_and_a_body_without_history_is_not_read() {
    let body = br#"{"model":"gpt-x","instructions":"sys","input":"hi"}"#;
    let outline = Outline::read(Dialect::Responses, body).unwrap();
    assert_eq!(
        outline.parsed(0).unwrap(),
        vec![serde_json::json!({"role": "user", "content": "hi"})]
    );
    assert_eq!(outline.head(), serde_json::json!(["sys", null]));
    assert!(Outline::read(Dialect::Chat, body).is_none());
    assert!(Outline::read(Dialect::Anthropic, br#"{"messages":"x"}"#).is_none());
    assert!(Outline::read(Dialect::Anthropic, b"not json").is_none());
}
