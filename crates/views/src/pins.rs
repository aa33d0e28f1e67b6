//! The report's list of pins: what every request carries verbatim
//! whatever compaction hid (see `abridge_session::Pin`).

use std::fmt::Write as _;

use abridge_compact::host::Redactor;
use abridge_llm::Message;
use abridge_meter::TokenMeter;
use abridge_session::Session;

use super::html::escape;

/// Characters of a pin's text the table shows.
const PREVIEW_CHARS: usize = 160;

/// A heading and one table row per pin on the active path (origin, the
/// file's path, tokens, where the request carries it, a preview of its
/// text through `redactor`); empty without pins.
pub(super) fn section(
    session: &Session,
    meter: &TokenMeter,
    redactor: Option<&Redactor>,
) -> String {
    let pins = session.pins();
    if pins.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<h2>Pins ({})</h2>\n<table class=\"header\">\n<tr><td>pin</td><td>origin</td><td>tokens</td><td>carried</td><td>text</td></tr>\n",
        pins.len()
    );
    for pin in &pins {
        let target = pin
            .pin
            .seq
            .map_or_else(|| "text".to_string(), |seq| format!("message {seq}"));
        let origin = match &pin.pin.label {
            Some(label) => format!("{} {label}", pin.pin.origin),
            None => pin.pin.origin.clone(),
        };
        let tokens = meter.cost_model().message(&Message::user(pin.text.clone()));
        let carried = if pin.visible {
            "on the surface"
        } else {
            "pinned message"
        };
        let text = abridge_compact::host::redact_with(redactor, &pin.text);
        let preview: String = text.chars().take(PREVIEW_CHARS).collect();
        let more = if text.chars().count() > PREVIEW_CHARS {
            "…"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "<tr><td>{} ({target})</td><td>{}</td><td>{tokens}</td><td>{carried}</td><td class=\"text\">{}{more}</td></tr>",
            pin.at,
            escape(&origin),
            escape(&preview)
        );
    }
    out.push_str("</table>\n");
    out
}
