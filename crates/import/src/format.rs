//! Which agent wrote a file: the format names and detection by content.

use std::path::Path;

use serde_json::Value;

use crate::ImportError;

/// The line that begins each chat of an aider chat history. Detection
/// looks for it and the aider importer splits on it; it lives here, with
/// detection, so the importer depends on this module and not the reverse.
pub(crate) const AIDER_CHAT_START: &str = "# aider chat started at";

/// The agents whose session files abridge reads. Serialized as its
/// [`Format::name`].
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// pi coding agent JSONL, v1 (linear) to v3 (`id`/`parentId` tree).
    Pi,
    /// Claude Code transcript JSONL (`uuid`/`parentUuid` tree), including a
    /// sub-agent's transcript (every entry a sidechain).
    ClaudeCode,
    /// OpenAI Codex CLI rollout JSONL: `{timestamp, type, payload}` lines,
    /// or the legacy shape before `session_meta` (a bare header object,
    /// then bare response items).
    Codex,
    /// SWE-agent trajectory (`.traj`, one JSON document).
    SweAgent,
    /// aider chat history Markdown (`.aider.chat.history.md`); each
    /// `# aider chat started at` begins a session.
    Aider,
    /// OpenHands event stream: a trajectory (a JSON array of
    /// `action`/`observation` events) or evaluation output (JSONL records
    /// with a `history` of events, one session each).
    #[serde(rename = "openhands")]
    OpenHands,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 6] = [
        Format::Pi,
        Format::ClaudeCode,
        Format::Codex,
        Format::SweAgent,
        Format::Aider,
        Format::OpenHands,
    ];

    /// The name used on the command line, in reports and in
    /// `Origin::Imported`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Pi => "pi",
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
            Format::SweAgent => "swe-agent",
            Format::Aider => "aider",
            Format::OpenHands => "openhands",
        }
    }

    /// Guesses the format from the file name and its first bytes (a few KiB
    /// are enough; [`DETECT_BYTES`](crate::DETECT_BYTES) is what
    /// [`read`](crate::read) passes). `None` when nothing is recognised.
    /// Only a `.traj` extension decides by name; everything else is read
    /// from the content, since users rename files.
    pub fn detect(path: &Path, head: &[u8]) -> Option<Format> {
        if path.extension().is_some_and(|e| e == "traj") {
            return Some(Format::SweAgent);
        }
        let text = String::from_utf8_lossy(head);
        let text = text.trim_start_matches('\u{feff}');
        let first = text.lines().find(|l| !l.trim().is_empty())?;
        if first.starts_with(AIDER_CHAT_START) {
            return Some(Format::Aider);
        }
        if let Ok(value) = serde_json::from_str::<Value>(first)
            && let Some(found) = detect_value(&value)
        {
            return Some(found);
        }
        // A real history may open with other lines (an editor's mode
        // line); a start line anywhere in the head is aider's.
        if text.lines().any(|line| line.starts_with(AIDER_CHAT_START)) {
            return Some(Format::Aider);
        }
        detect_text(text, first)
    }
}

/// Detection on a first line that parses as JSON.
fn detect_value(value: &Value) -> Option<Format> {
    if let Some(first) = value.as_array().and_then(|a| a.first()) {
        return is_openhands_event(first).then_some(Format::OpenHands);
    }
    let kind = value.get("type").and_then(Value::as_str);
    match kind {
        Some("session") => return Some(Format::Pi),
        Some("session_meta" | "response_item" | "event_msg" | "turn_context" | "compacted")
            if value.get("payload").is_some() =>
        {
            return Some(Format::Codex);
        }
        Some(
            "user"
            | "assistant"
            | "system"
            | "summary"
            | "progress"
            | "file-history-snapshot"
            | "queue-operation",
        ) => return Some(Format::ClaudeCode),
        // A bare response item: a legacy rollout whose header was lost.
        Some("message") if value.get("role").is_some() && value.get("content").is_some() => {
            return Some(Format::Codex);
        }
        Some("function_call" | "function_call_output") if value.get("call_id").is_some() => {
            return Some(Format::Codex);
        }
        _ => {}
    }
    if value.get("parentUuid").is_some() || value.get("sessionId").is_some() {
        return Some(Format::ClaudeCode);
    }
    if is_legacy_codex_header(value) {
        return Some(Format::Codex);
    }
    if let Some(history) = value.get("history").and_then(Value::as_array) {
        return match history.first() {
            Some(first) if is_openhands_event(first) => Some(Format::OpenHands),
            _ if value.get("instance_id").is_some() => Some(Format::OpenHands),
            _ => Some(Format::SweAgent),
        };
    }
    if value.get("trajectory").is_some() {
        return Some(Format::SweAgent);
    }
    is_openhands_event(value).then_some(Format::OpenHands)
}

/// Detection on a first line that does not parse (cut by the head, or a
/// pretty-printed document), by the keys it spells out.
fn detect_text(text: &str, first: &str) -> Option<Format> {
    let compact: String = first.chars().filter(|c| !c.is_whitespace()).collect();
    let whole: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let openhands = |s: &str| {
        s.contains("\"source\":\"")
            && (s.contains("\"action\":\"") || s.contains("\"observation\":\""))
    };
    if compact == "[" || compact.starts_with("[{") {
        return openhands(&whole).then_some(Format::OpenHands);
    }
    if compact.starts_with("{\"instance_id\"")
        || (whole.contains("\"history\":[{") && openhands(&whole))
    {
        return Some(Format::OpenHands);
    }
    if compact.starts_with("{\"trajectory\"")
        || compact.starts_with("{\"history\"")
        || (compact == "{" && (text.contains("\"trajectory\"") || text.contains("\"history\"")))
    {
        return Some(Format::SweAgent);
    }
    if compact.contains("\"type\":\"session\"") {
        Some(Format::Pi)
    } else if compact.contains("\"type\":\"session_meta\"") {
        Some(Format::Codex)
    } else if compact.contains("\"parentUuid\"") || compact.contains("\"sessionId\"") {
        Some(Format::ClaudeCode)
    } else {
        None
    }
}

/// One OpenHands event: an `action` or an `observation`, with a `source`.
fn is_openhands_event(value: &Value) -> bool {
    value.get("source").is_some_and(Value::is_string)
        && (value.get("action").is_some_and(Value::is_string)
            || value.get("observation").is_some_and(Value::is_string))
}

/// The first line of a Codex rollout from before `session_meta`: a bare
/// object with the session's `id` and `timestamp` and its `instructions`
/// or `git` state, no `type`.
pub(crate) fn is_legacy_codex_header(value: &Value) -> bool {
    value.get("type").is_none()
        && value.get("id").is_some_and(Value::is_string)
        && value.get("timestamp").is_some_and(Value::is_string)
        && (value.get("instructions").is_some() || value.get("git").is_some())
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Format {
    type Err = ImportError;

    /// Accepts the names of [`Format::name`] and a few obvious aliases
    /// (`claude`, `swe`, `traj`, `codex-legacy`, `open-hands`), in any case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().replace('_', "-").as_str() {
            "pi" | "pi-mono" => Ok(Format::Pi),
            "claude-code" | "claude" | "claudecode" | "cc" => Ok(Format::ClaudeCode),
            "codex" | "codex-cli" | "rollout" | "codex-legacy" => Ok(Format::Codex),
            "swe-agent" | "sweagent" | "swe" | "traj" => Ok(Format::SweAgent),
            "aider" | "aider-chat" => Ok(Format::Aider),
            "openhands" | "open-hands" | "opendevin" => Ok(Format::OpenHands),
            _ => Err(ImportError::FormatName {
                name: s.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_names_round_trip() {
        for format in Format::ALL {
            assert_eq!(format.name().parse::<Format>().unwrap(), format);
        }
        assert_eq!("Claude".parse::<Format>().unwrap(), Format::ClaudeCode);
        assert_eq!(
            "gemini".parse::<Format>().unwrap_err().to_string(),
            "unknown import format \"gemini\"; expected pi, claude-code, codex, swe-agent, aider or openhands"
        );
    }

    #[test]
    fn detects_each_format_from_its_first_line() {
        let cases: [(&str, &[u8], Option<Format>); 15] = [
            (
                "a.jsonl",
                br#"{"type":"session","id":"x","timestamp":"t","cwd":"/"}"#,
                Some(Format::Pi),
            ),
            (
                "a.jsonl",
                br#"{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}"#,
                Some(Format::Codex),
            ),
            (
                "a.jsonl",
                br#"{"id":"x","timestamp":"2025-05-01T10:00:00.000Z","instructions":null,"git":{}}"#,
                Some(Format::Codex),
            ),
            (
                "a.jsonl",
                br#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#,
                Some(Format::Codex),
            ),
            (
                "a.jsonl",
                br#"{"type":"file-history-snapshot","messageId":"m","snapshot":{}}"#,
                Some(Format::ClaudeCode),
            ),
            (
                "a.json",
                b"{\n  \"trajectory\": [\n",
                Some(Format::SweAgent),
            ),
            (
                "a.json",
                br#"{"history":[{"role":"system","content":"x"}],"trajectory":[]}"#,
                Some(Format::SweAgent),
            ),
            ("a.traj", b"", Some(Format::SweAgent)),
            (
                "notes.md",
                b"\n# aider chat started at 2025-01-02 03:04:05\n",
                Some(Format::Aider),
            ),
            // Issue 27, point 8: a mode line before the first start line.
            (
                ".aider.chat.history.md",
                b"-*- mode: fundamental -*-\n\n# aider chat started at 2025-01-02 03:04:05\n",
                Some(Format::Aider),
            ),
            (
                "t.json",
                br#"[{"id":0,"timestamp":"t","source":"user","message":"m","action":"message","args":{}}]"#,
                Some(Format::OpenHands),
            ),
            (
                "t.json",
                b"[\n  {\n    \"id\": 0,\n    \"source\": \"agent\",\n    \"action\": \"system\",",
                Some(Format::OpenHands),
            ),
            (
                "output.jsonl",
                br#"{"instance_id":"x","history":[{"id":0,"source":"user","action":"message","args":{}}]}"#,
                Some(Format::OpenHands),
            ),
            (
                "output.jsonl",
                br#"{"instance_id":"x","test_result":{},"history":[{"id":0,"source":"user","action":"mess"#,
                Some(Format::OpenHands),
            ),
            ("a.jsonl", br#"{"hello":"world"}"#, None),
        ];
        for (name, head, expected) in cases {
            assert_eq!(
                Format::detect(Path::new(name), head),
                expected,
                "{name}: {}",
                String::from_utf8_lossy(head)
            );
        }
    }

    #[test]
    fn detection_survives_a_cut_first_line() {
        let head = br#"{"timestamp":"t","type":"session_meta","payload":{"id":"x","base_instructions":{"text":"lo"#;
        assert_eq!(
            Format::detect(Path::new("r.jsonl"), head),
            Some(Format::Codex)
        );
    }

    #[test]
    fn formats_serialize_as_their_names() {
        for format in Format::ALL {
            assert_eq!(
                serde_json::to_value(format).unwrap(),
                serde_json::Value::String(format.name().to_string())
            );
        }
    }
}
