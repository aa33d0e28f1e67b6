use abridge_llm::Meta;

use super::*;

const REMINDER: &str = "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# claudeMd\nCodebase and user instructions are shown below.\n\nContents of /repo/CLAUDE.md (project instructions, checked into the codebase):\n\nNever push to main.\n</system-reminder>";

#[test]
fn a_claude_md_reminder_is_found_by_block_with_its_path() {
    let mut message = Message::user("fix the build");
    message.content.insert(0, Block::text(REMINDER));
    assert_eq!(
        claude_md(&message),
        vec![(0, Some("/repo/CLAUDE.md".to_string()))]
    );
    let other = Message::user("<system-reminder>be brief</system-reminder>");
    assert!(claude_md(&other).is_empty());
}

#[test]
fn a_codex_agents_md_message_is_found_by_its_origin_with_its_directory() {
    let injected = |text: &str, source: &str| {
        Message::user(text).with_meta(Meta {
            origin: Some(Origin::Injected {
                source: source.to_string(),
            }),
            ..Meta::default()
        })
    };
    assert_eq!(
        agents_md(&injected(
            "# AGENTS.md instructions for /work/app\n\n<INSTRUCTIONS>\nRun tests.\n</INSTRUCTIONS>",
            "agents-md"
        )),
        Some(Some("/work/app/AGENTS.md".to_string()))
    );
    assert_eq!(
        agents_md(&injected(
            "<user_instructions>x</user_instructions>",
            "user_instructions"
        )),
        Some(None)
    );
    assert_eq!(
        agents_md(&injected("<environment_context/>", "environment_context")),
        None
    );
    assert_eq!(
        agents_md(&Message::user("# AGENTS.md instructions for /x")),
        None
    );
}

/// What the proxy pins as messages arrive: each CLAUDE.md block of a
/// request, a Codex AGENTS.md message by its header, nothing else.
#[test]
fn instruction_pins_name_the_claude_md_block_and_the_agents_md_message() {
    let mut message = Message::user("fix the build");
    message.content.insert(0, Block::text(REMINDER));
    let pins = instruction_pins(&message, 7);
    assert_eq!(pins.len(), 1);
    assert_eq!(
        (pins[0].seq, pins[0].block, pins[0].origin.as_str()),
        (Some(7), Some(0), CLAUDE_MD)
    );
    assert_eq!(pins[0].label.as_deref(), Some("/repo/CLAUDE.md"));

    let agents = Message::user(
        "# AGENTS.md instructions for /work/app\n\n<INSTRUCTIONS>\nRun tests.\n</INSTRUCTIONS>",
    );
    let pins = instruction_pins(&agents, 3);
    assert_eq!(pins.len(), 1);
    assert_eq!((pins[0].block, pins[0].origin.as_str()), (None, AGENTS_MD));
    assert_eq!(pins[0].label.as_deref(), Some("/work/app/AGENTS.md"));

    assert!(instruction_pins(&Message::user("please read AGENTS.md"), 1).is_empty());
}
