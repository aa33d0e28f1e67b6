//! Writes example frames to a directory: `cargo run -p abridge-snapcompact
//! --example frames -- OUT_DIR [SHAPE] [WIDTH] [MAX_HEIGHT]`. The PNGs in
//! docs/snapcompact/ are made with it.
//!
//! The history is a small made-up coding session covering every scope, so
//! the PNGs in docs/snapcompact/ can be regenerated and compared by eye.

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Role;
use abridge_snapcompact::FrameSpec;
use abridge_snapcompact::SerializeConfig;
use abridge_snapcompact::Shape;
use abridge_snapcompact::render_messages;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let out = std::path::PathBuf::from(args.get(1).map_or("frames-out", String::as_str));
    let shape = Shape::by_name(args.get(2).map_or("11on16-bw", String::as_str))?;
    let width: u32 = args.get(3).map_or(Ok(1568), |s| s.parse())?;
    let max_height: u32 = args.get(4).map_or(Ok(752), |s| s.parse())?;
    std::fs::create_dir_all(&out)?;
    let spec = FrameSpec::for_model("claude")
        .with_shape(shape)
        .with_size(width, max_height);
    let frames = render_messages(&history(), &spec, &SerializeConfig::default())?;
    for (index, frame) in frames.iter().enumerate() {
        let name = format!("{}-{width}-{index:02}.png", shape.name);
        std::fs::write(out.join(name), &frame.png)?;
    }
    Ok(())
}

fn history() -> Vec<Message> {
    let call = Message::tool_call;
    vec![
        Message::user(
            "The parser test fails since the 0.4 upgrade. Fix it and keep the API; the id OBJ_0O1lI must stay as is.",
        ),
        Message {
            role: Role::Assistant,
            content: vec![
                Block::Thinking {
                    thinking: "Start from the failing test, then read the parser.".into(),
                    signature: None,
                },
                Block::text("I'll run the tests first."),
            ],
            meta: Meta::default(),
        },
        call(
            "c1",
            "bash",
            serde_json::json!({"command": "cargo test -p parser 2>&1 | tail -20"}),
        ),
        Message::tool_result(
            "c1",
            "running 12 tests\ntest lexer::tests::numbers ... ok\ntest parser::tests::nested_lists ... FAILED\n\n---- parser::tests::nested_lists stdout ----\nthread 'parser::tests::nested_lists' panicked at src/parser.rs:88:9:\nassertion `left == right` failed\n  left: [Int(10), List([Int(0)])]\n right: [Int(10), List([Int(0), Int(1)])]\n\ntest result: FAILED. 11 passed; 1 failed",
            true,
        ),
        call(
            "c2",
            "read",
            serde_json::json!({"path": "src/parser.rs", "offset": 70, "limit": 30}),
        ),
        Message::tool_result(
            "c2",
            "fn list(&mut self) -> Result<Value, Error> {\n    let mut items = Vec::new();\n    while let Some(tok) = self.next() {\n        match tok {\n            Token::Close => break,\n            Token::Comma => continue,\n            t => { items.push(self.value(t)?); break; }\n        }\n    }\n    Ok(Value::List(items))\n}",
            false,
        ),
        Message::assistant(
            "Found it: the `break` after the first item ends the list early. Removing it.",
        ),
        call(
            "c3",
            "edit",
            serde_json::json!({"path": "src/parser.rs", "old": "items.push(self.value(t)?); break;", "new": "items.push(self.value(t)?);"}),
        ),
        Message::tool_result("c3", "Applied 1 edit to src/parser.rs", false),
        call(
            "c4",
            "bash",
            serde_json::json!({"command": "cargo test -p parser"}),
        ),
        Message::tool_result(
            "c4",
            "running 12 tests\n............\ntest result: ok. 12 passed; 0 failed \u{2705}",
            false,
        ),
        Message::assistant(
            "All 12 tests pass. The list parser no longer stops after its first element; OBJ_0O1lI is untouched. 東京 and café print too.",
        ),
        Message::user(
            "日本語のログも読めますか？ 한국어도 확인해 주세요. Ελληνικά, кириллица ✅ 🦀",
        ),
    ]
}
