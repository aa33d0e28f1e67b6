use serde_json::json;
use serde_json::value::to_raw_value;

use super::*;

fn raw(items: &[Value]) -> Vec<Box<RawValue>> {
    items
        .iter()
        .map(|item| to_raw_value(item).unwrap())
        .collect()
}

fn hashes(head: u64, items: &[Value]) -> Vec<u64> {
    Digests::default().prefix_hashes(head, &raw(items))
}

#[test]
fn a_longer_history_shares_the_shorter_ones_hashes() {
    let head = head_hash(Dialect::Anthropic, &json!([null, null]));
    let one = hashes(head, &[json!({"role": "user", "content": "a"})]);
    let two = hashes(
        head,
        &[
            json!({"role": "user", "content": "a"}),
            json!({"role": "assistant", "content": "b"}),
        ],
    );
    assert_eq!(one[0], two[0]);
    assert_ne!(two[0], two[1]);
}

#[test]
fn another_head_or_an_edited_item_changes_the_hash() {
    let items = [json!({"role": "user", "content": "a"})];
    let a = hashes(
        head_hash(Dialect::Anthropic, &json!(["system a", null])),
        &items,
    );
    let b = hashes(
        head_hash(Dialect::Anthropic, &json!(["system b", null])),
        &items,
    );
    assert_ne!(a, b);
    let edited = hashes(
        head_hash(Dialect::Anthropic, &json!(["system a", null])),
        &[json!({"role": "user", "content": "A"})],
    );
    assert_ne!(a, edited);
}

#[test]
fn a_moved_cache_mark_is_the_same_history_but_another_dialect_is_not() {
    let head = head_hash(Dialect::Anthropic, &json!([null, null]));
    let plain = json!({"role": "user", "content": [{"type": "text", "text": "a"}]});
    let marked = json!({"role": "user", "content": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}]});
    assert_eq!(
        hashes(head, std::slice::from_ref(&plain)),
        hashes(head, &[marked])
    );
    let chat = head_hash(Dialect::Chat, &json!([null, null]));
    assert_ne!(
        hashes(head, std::slice::from_ref(&plain)),
        hashes(chat, &[plain])
    );
}

/// Spacing is not history: the same item sent with other whitespace has
/// the same hash, whether its digest was remembered or not.
#[test]
fn spacing_does_not_change_the_hash_and_remembered_digests_agree() {
    let digests = Digests::default();
    let head = head_hash(Dialect::Chat, &json!([null, null]));
    let compact: Box<RawValue> =
        RawValue::from_string(r#"{"role":"user","content":"a"}"#.into()).unwrap();
    let spaced: Box<RawValue> =
        RawValue::from_string(r#"{ "role": "user",  "content": "a" }"#.into()).unwrap();
    let first = digests.prefix_hashes(head, std::slice::from_ref(&compact));
    let again = digests.prefix_hashes(head, std::slice::from_ref(&compact));
    let other = digests.prefix_hashes(head, &[spaced]);
    assert_eq!(first, again);
    assert_eq!(first, other);
}

/// The head's hash does not depend on whether its bytes were seen.
#[test]
fn a_remembered_head_hashes_as_a_fresh_one() {
    let body = br#"{"model":"m","system":"be brief","tools":[{"name":"read"}],"messages":[]}"#;
    let outline = Outline::read(Dialect::Anthropic, body).unwrap();
    let digests = Digests::default();
    let fresh = head_hash(Dialect::Anthropic, &outline.head());
    assert_eq!(digests.head(Dialect::Anthropic, &outline), fresh);
    assert_eq!(digests.head(Dialect::Anthropic, &outline), fresh);
    assert_ne!(digests.head(Dialect::Chat, &outline), fresh);
}
