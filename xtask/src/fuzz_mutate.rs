//! The fuzzer's structure-aware mutator: what `cargo xtask fuzz` does to
//! a real session before handing it to a target.
//!
//! Inputs are JSON lines (or one JSON document), so most mutations work on
//! that structure: whole lines are dropped, repeated, cut or swapped; a
//! line's fields are swapped, given values of the wrong type, nested
//! past the parser's depth limit or given huge strings; parent links are
//! pointed forwards or at the event itself. Byte flips and invalid UTF-8
//! reach what the structure-aware kinds cannot.

use serde_json::Value;

/// A small deterministic generator (SplitMix64): a seed names a whole run,
/// so a failure is replayed from the seed the run printed.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }
}

/// One kind of damage. The names are the first column of
/// docs/bad-input.md's fuzzer table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mutation {
    DropLine,
    DuplicateLine,
    TruncateLine,
    SwapLines,
    FlipBytes,
    SwapFields,
    WrongType,
    DeepNesting,
    HugeString,
    InvalidUtf8,
    ForwardParent,
    SelfParent,
}

impl Mutation {
    pub(crate) const ALL: [Mutation; 12] = [
        Mutation::DropLine,
        Mutation::DuplicateLine,
        Mutation::TruncateLine,
        Mutation::SwapLines,
        Mutation::FlipBytes,
        Mutation::SwapFields,
        Mutation::WrongType,
        Mutation::DeepNesting,
        Mutation::HugeString,
        Mutation::InvalidUtf8,
        Mutation::ForwardParent,
        Mutation::SelfParent,
    ];

    /// The kebab-case name used in logs and docs/bad-input.md.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mutation::DropLine => "drop-line",
            Mutation::DuplicateLine => "duplicate-line",
            Mutation::TruncateLine => "truncate-line",
            Mutation::SwapLines => "swap-lines",
            Mutation::FlipBytes => "flip-bytes",
            Mutation::SwapFields => "swap-fields",
            Mutation::WrongType => "wrong-type",
            Mutation::DeepNesting => "deep-nesting",
            Mutation::HugeString => "huge-string",
            Mutation::InvalidUtf8 => "invalid-utf8",
            Mutation::ForwardParent => "forward-parent",
            Mutation::SelfParent => "self-parent",
        }
    }
}

/// Fields that link an event to its parent, across the formats we read.
const PARENT_KEYS: [&str; 4] = ["parent", "parentId", "parentUuid", "parent_id"];
/// Fields that name an event, in the same order as [`PARENT_KEYS`].
const ID_KEYS: [&str; 4] = ["seq", "id", "uuid", "id"];

/// A seed cut down to a window: the first line (a header in most formats)
/// and up to `max_lines` consecutive lines after it, so one input parses
/// in milliseconds while still holding the real structure around it.
pub(crate) fn window(seed: &[u8], max_lines: usize, rng: &mut Rng) -> Vec<Vec<u8>> {
    let lines: Vec<&[u8]> = seed.split(|b| *b == b'\n').collect();
    if lines.len() <= max_lines + 1 {
        return lines.iter().map(|l| l.to_vec()).collect();
    }
    let len = 1 + rng.below(max_lines);
    let start = 1 + rng.below(lines.len() - len);
    let mut out = vec![lines[0].to_vec()];
    out.extend(lines[start..start + len].iter().map(|l| l.to_vec()));
    out
}

/// Applies 1 to 4 mutations to `lines` and returns the input and the kinds
/// applied, in order.
pub(crate) fn mutate(lines: &mut Vec<Vec<u8>>, rng: &mut Rng) -> Vec<Mutation> {
    let count = 1 + rng.below(4);
    let mut applied = Vec::with_capacity(count);
    for _ in 0..count {
        let kind = Mutation::ALL[rng.below(Mutation::ALL.len())];
        apply(kind, lines, rng);
        applied.push(kind);
    }
    applied
}

/// Joins lines with newlines; a trailing newline unless the last line was
/// cut (so torn tails are tried too).
pub(crate) fn join(lines: &[Vec<u8>], rng: &mut Rng) -> Vec<u8> {
    let mut out = lines.join(&b'\n');
    if !rng.chance(10) {
        out.push(b'\n');
    }
    out
}

fn apply(kind: Mutation, lines: &mut Vec<Vec<u8>>, rng: &mut Rng) {
    if lines.is_empty() {
        lines.push(Vec::new());
    }
    let i = rng.below(lines.len());
    match kind {
        Mutation::DropLine => {
            if lines.len() > 1 {
                lines.remove(i);
            }
        }
        Mutation::DuplicateLine => {
            let copy = lines[i].clone();
            let at = rng.below(lines.len() + 1);
            lines.insert(at, copy);
        }
        Mutation::TruncateLine => {
            let cut = rng.below(lines[i].len() + 1);
            lines[i].truncate(cut);
        }
        Mutation::SwapLines => {
            let j = rng.below(lines.len());
            lines.swap(i, j);
        }
        Mutation::FlipBytes => {
            let line = &mut lines[i];
            for _ in 0..1 + rng.below(8) {
                if line.is_empty() {
                    break;
                }
                let at = rng.below(line.len());
                line[at] ^= 1 << rng.below(8);
            }
        }
        Mutation::InvalidUtf8 => {
            const BAD: [&[u8]; 5] = [
                b"\xff",
                b"\xc3",
                b"\xed\xa0\x80",
                b"\xf4\x90\x80\x80",
                b"\x80",
            ];
            let line = &mut lines[i];
            let at = rng.below(line.len() + 1);
            let bad = BAD[rng.below(BAD.len())];
            line.splice(at..at, bad.iter().copied());
        }
        _ => {
            let later = lines.get(i + 1 + rng.below(lines.len())).cloned();
            let Some(mut value) = serde_json::from_slice::<Value>(&lines[i]).ok() else {
                // Not JSON (already damaged, or a Markdown chat): flip instead.
                apply(Mutation::FlipBytes, lines, rng);
                return;
            };
            let later = later.and_then(|l| serde_json::from_slice::<Value>(&l).ok());
            structural(kind, &mut value, later.as_ref(), rng);
            lines[i] = serde_json::to_vec(&value).unwrap_or_default();
        }
    }
}

/// The mutations that need a parsed line.
fn structural(kind: Mutation, value: &mut Value, later: Option<&Value>, rng: &mut Rng) {
    match kind {
        Mutation::SwapFields => {
            let Some(object) = pick_object(value, rng) else {
                return;
            };
            let keys: Vec<String> = object.keys().cloned().collect();
            if keys.len() < 2 {
                return;
            }
            let a = keys[rng.below(keys.len())].clone();
            let b = keys[rng.below(keys.len())].clone();
            let va = object.get(&a).cloned().unwrap_or(Value::Null);
            let vb = object.get(&b).cloned().unwrap_or(Value::Null);
            object.insert(a, vb);
            object.insert(b, va);
        }
        Mutation::WrongType => {
            if let Some(slot) = pick_slot(value, rng) {
                *slot = wrong_type(slot, rng);
            }
        }
        Mutation::DeepNesting => {
            // Past serde_json's limit of 128 most of the time, under it
            // sometimes, so both paths are tried.
            let depth = 100 + rng.below(20_000);
            let Some(slot) = pick_slot(value, rng) else {
                return;
            };
            let inner = slot.take();
            let open = if rng.chance(50) { "[" } else { "{\"a\":" };
            let close = if open == "[" { "]" } else { "}" };
            let text = format!(
                "{}{}{}",
                open.repeat(depth),
                serde_json::to_string(&inner).unwrap_or_default(),
                close.repeat(depth)
            );
            // serde_json refuses to build such a value, so the nesting is
            // spliced in as raw text after serialization.
            *slot = Value::String(format!("\u{0}NEST\u{0}{text}"));
        }
        Mutation::HugeString => {
            let size = [1 << 10, 1 << 16, 1 << 20, 4 << 20][rng.below(4)];
            let fill = ["x", "\n", "\u{1b}[31m", "é", "🙂", "\t "][rng.below(6)];
            if let Some(slot) = pick_slot(value, rng) {
                *slot = Value::String(fill.repeat(size / fill.len()));
            }
        }
        Mutation::ForwardParent | Mutation::SelfParent => {
            let Value::Object(object) = value else {
                return;
            };
            let Some(k) = PARENT_KEYS.iter().position(|k| object.contains_key(*k)) else {
                return;
            };
            let target = if kind == Mutation::SelfParent {
                object.get(ID_KEYS[k]).cloned()
            } else {
                later
                    .and_then(|l| l.get(ID_KEYS[k]).cloned())
                    .or_else(|| object.get(ID_KEYS[k]).map(bump))
            };
            if let Some(target) = target {
                object.insert(PARENT_KEYS[k].to_string(), target);
            }
        }
        _ => {}
    }
}

/// A later id when no later line is in the window: seq + 1000.
fn bump(id: &Value) -> Value {
    match id {
        Value::Number(n) => Value::from(n.as_u64().unwrap_or(0).saturating_add(1000)),
        Value::String(s) => Value::String(format!("{s}-later")),
        other => other.clone(),
    }
}

/// A value of another JSON type than `old`.
fn wrong_type(old: &Value, rng: &mut Rng) -> Value {
    let choices = [
        Value::Null,
        Value::Bool(true),
        Value::from(-1),
        Value::from(u64::MAX),
        Value::from(1e308),
        Value::String(String::new()),
        Value::Array(Vec::new()),
        Value::Object(serde_json::Map::new()),
    ];
    let same = |v: &Value| std::mem::discriminant(v) == std::mem::discriminant(old);
    let others: Vec<&Value> = choices.iter().filter(|v| !same(v)).collect();
    others[rng.below(others.len())].clone()
}

/// A random value inside `value` (any depth), or `value` itself. The path
/// is chosen on a shared borrow, then followed as a JSON pointer.
fn pick_slot<'a>(value: &'a mut Value, rng: &mut Rng) -> Option<&'a mut Value> {
    let mut pointer = String::new();
    let mut here: &Value = value;
    loop {
        let len = match here {
            Value::Object(o) => o.len(),
            Value::Array(a) => a.len(),
            _ => 0,
        };
        if len == 0 || rng.chance(30) {
            break;
        }
        let i = rng.below(len);
        let next = match here {
            Value::Object(o) => o.iter().nth(i).map(|(k, v)| {
                pointer.push('/');
                pointer.push_str(&k.replace('~', "~0").replace('/', "~1"));
                v
            }),
            Value::Array(a) => a.get(i).inspect(|_| pointer.push_str(&format!("/{i}"))),
            _ => None,
        };
        match next {
            Some(next) => here = next,
            None => break,
        }
    }
    value.pointer_mut(&pointer)
}

/// A random object inside `value`, preferring the top level.
fn pick_object<'a>(
    value: &'a mut Value,
    rng: &mut Rng,
) -> Option<&'a mut serde_json::Map<String, Value>> {
    if rng.chance(50) {
        return value.as_object_mut();
    }
    pick_slot(value, rng)?.as_object_mut()
}

/// Replaces the nesting placeholders [`structural`] left as strings by the
/// raw nesting they stand for.
pub(crate) fn splice_nesting(bytes: Vec<u8>) -> Vec<u8> {
    const MARK: &[u8] = b"\"\\u0000NEST\\u0000";
    let Some(start) = find(&bytes, MARK) else {
        return bytes;
    };
    // The placeholder is a JSON string: find its closing quote.
    let body_start = start + MARK.len();
    let mut end = body_start;
    while end < bytes.len() {
        match bytes[end] {
            b'\\' => end += 2,
            b'"' => break,
            _ => end += 1,
        }
    }
    let end = end.min(bytes.len());
    let escaped = [b"\"", &bytes[body_start..end], b"\""].concat();
    let raw: String = serde_json::from_slice(&escaped).unwrap_or_default();
    let mut out = bytes[..start].to_vec();
    out.extend_from_slice(raw.as_bytes());
    out.extend_from_slice(bytes.get(end + 1..).unwrap_or_default());
    splice_nesting(out)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_input() {
        let seed =
            b"{\"seq\":0,\"parent\":null}\n{\"seq\":1,\"parent\":0,\"data\":{\"a\":[1,2]}}\n";
        let run = |s| {
            let mut rng = Rng::new(s);
            let mut lines = window(seed, 8, &mut rng);
            let kinds = mutate(&mut lines, &mut rng);
            (splice_nesting(join(&lines, &mut rng)), kinds)
        };
        assert_eq!(run(7), run(7));
    }

    #[test]
    fn nesting_placeholders_become_raw_nesting() {
        let mut value = serde_json::json!({"a": 1});
        let mut rng = Rng::new(1);
        structural(Mutation::DeepNesting, &mut value, None, &mut rng);
        let bytes = splice_nesting(serde_json::to_vec(&value).unwrap());
        let text = String::from_utf8(bytes).unwrap();
        assert!(!text.contains("NEST"), "{}", &text[..80]);
        assert!(text.contains("[[[[") || text.contains("{\"a\":{\"a\":"));
    }

    #[test]
    fn a_self_parent_points_at_its_own_id() {
        let mut value = serde_json::json!({"seq": 5, "parent": 4});
        structural(Mutation::SelfParent, &mut value, None, &mut Rng::new(3));
        assert_eq!(value["parent"], 5);
        let later = serde_json::json!({"seq": 9});
        structural(
            Mutation::ForwardParent,
            &mut value,
            Some(&later),
            &mut Rng::new(3),
        );
        assert_eq!(value["parent"], 9);
    }
}
