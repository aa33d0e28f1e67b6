//! The corpus `cargo xtask wire` checks: every request body our encoders
//! write for a set of histories, each through the request builder as a
//! turn would send it.
//!
//! The histories are the bundled sessions (imported) and three written
//! here to reach what the samples may not: signed and redacted thinking,
//! OpenAI reasoning items with and without their encrypted content,
//! images inline and by URL, tool results with images and errors, a user
//! message between a call and its result, a result whose call is gone, a
//! system message mid-conversation, and a checkpoint written by each
//! provider's native compaction (replayed by the builder). Each history
//! goes to Chat, Responses and Messages (whole and streamed) and to
//! Anthropic's token count; the native compaction calls are written for a
//! span headed by an earlier native compaction.

use std::path::Path;

use abridge::RequestTarget;
use abridge::build_request;
use abridge_compact::Checkpoint;
use abridge_compact::CompactionMethod;
use abridge_compact::Details;
use abridge_compact::MethodError;
use abridge_compact::MethodOutput;
use abridge_compact::Plan;
use abridge_compact::Policy;
use abridge_compact::Trigger;
use abridge_compact_basic::NativeRecord;
use abridge_compact_basic::RemoteConfig;
use abridge_compact_basic::RemoteKind;
use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_llm::LlmClient;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Origin;
use abridge_llm::Purpose;
use abridge_llm::Request;
use abridge_llm::Role;
use abridge_llm::ToolSpec;
use abridge_providers::AnthropicClient;
use abridge_providers::AnthropicOptions;
use abridge_providers::ChatOptions;
use abridge_providers::CountTokensClient;
use abridge_providers::OpenAiChatClient;
use abridge_providers::OpenAiResponsesClient;
use abridge_providers::ProviderConfig;
use abridge_providers::ResponsesOptions;
use abridge_session::MemoryStore;
use abridge_session::Session;
use anyhow::Context;
use serde_json::Value;
use serde_json::json;

/// The bundled sessions, in `assets/sessions`.
const SAMPLES: &[&str] = &[
    "claude-code__spotter__4d5611e5.jsonl",
    "codex__localpush__rollout-2026-02-23T12-54-34-redacted.jsonl",
    "pi-mono__large-session.jsonl",
    "swe-agent__marshmallow-1867__function_calling_replace_from_source.traj",
];

/// Where the clients point: never contacted, but their account (base and
/// key) decides which native output they are sent.
const OPENAI_BASE: &str = "https://api.openai.com/v1";
const ANTHROPIC_BASE: &str = "https://api.anthropic.com";
const KEY: &str = "sk-wire-check";

pub(crate) use crate::wire_case::Case;

/// Writes every body of the corpus into `out` (emptied first), one JSON
/// file each; returns how many.
pub(crate) fn write(root: &Path, out: &Path) -> anyhow::Result<usize> {
    let _ = std::fs::remove_dir_all(out);
    std::fs::create_dir_all(out)?;
    let clients = Clients::new()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut histories: Vec<(String, Session)> = Vec::new();
    for sample in SAMPLES {
        let path = root.join("assets").join("sessions").join(sample);
        let imported = abridge_import::read(&path, None)
            .with_context(|| format!("cannot import {}", path.display()))?;
        let (session, _) = imported.into_session(Box::new(MemoryStore::new()))?;
        histories.push((stem(sample), session));
    }
    histories.push(("every-block".into(), every_block()?));
    for (name, dialect, account) in [
        (
            "openai-native",
            OpenAiResponsesClient::NAME,
            clients.responses.native_account(),
        ),
        (
            "anthropic-native",
            AnthropicClient::NAME,
            clients.anthropic.native_account(),
        ),
    ] {
        let account = account.unwrap_or_default().to_string();
        let session = runtime.block_on(natively_compacted(dialect, &account))?;
        histories.push((name.into(), session));
    }
    let mut cases = Vec::new();
    for (name, session) in &histories {
        cases.extend(clients.turns(name, session)?);
    }
    cases.extend(native_compactions(&runtime, &clients)?);
    let replayed: Vec<(String, Vec<Message>)> = histories
        .iter()
        .take(SAMPLES.len())
        .map(|(name, session)| {
            let surface = session.surface_messages();
            (
                name.clone(),
                surface.iter().map(|m| (**m).clone()).collect(),
            )
        })
        .collect();
    cases.extend(crate::wire_proxy::cases(&replayed)?);
    for (index, case) in cases.iter().enumerate() {
        let file = out.join(format!("{index:03}-{}.json", case.name));
        let text = serde_json::to_vec(&json!({
            "endpoint": case.endpoint,
            "streaming": case.streaming,
            "headers": {"anthropic-beta": case.beta},
            "body": case.body,
        }))?;
        std::fs::write(&file, text).with_context(|| format!("cannot write {}", file.display()))?;
    }
    Ok(cases.len())
}

fn stem(file: &str) -> String {
    file.split("__").next().unwrap_or(file).to_string()
}

/// One client of each dialect, with the account native output is keyed
/// by.
struct Clients {
    chat: OpenAiChatClient,
    responses: OpenAiResponsesClient,
    anthropic: AnthropicClient,
    counter: CountTokensClient,
}

impl Clients {
    fn new() -> anyhow::Result<Self> {
        let openai = ProviderConfig::new(OPENAI_BASE).with_api_key(KEY);
        let anthropic = ProviderConfig::new(ANTHROPIC_BASE).with_api_key(KEY);
        Ok(Clients {
            chat: OpenAiChatClient::new(openai.clone(), ChatOptions::openai())?,
            responses: OpenAiResponsesClient::new(openai, ResponsesOptions::default())?,
            anthropic: AnthropicClient::new(anthropic.clone(), AnthropicOptions::default())?,
            counter: CountTokensClient::new(anthropic)?,
        })
    }

    /// The bodies of a turn on `session` for each dialect and a model of
    /// each rule (reasoning or not, preserved thinking or not).
    fn turns(&self, name: &str, session: &Session) -> anyhow::Result<Vec<Case>> {
        let mut cases = Vec::new();
        let request = |client: &dyn LlmClient, model: &str| -> anyhow::Result<Request> {
            let entry = abridge_llm::Catalog::shared().lookup(model).entry;
            let target = RequestTarget::for_client(client, model, &entry);
            let mut request = Request::new(model, build_request(session, &target)?, Purpose::Turn);
            request.tools = tools();
            request.max_output_tokens = Some(4096);
            Ok(request)
        };
        for model in ["gpt-5", "gpt-4o"] {
            let turn = request(&self.chat, model)?;
            for streaming in [false, true] {
                cases.push(Case {
                    name: format!("{name}-chat-{model}"),
                    endpoint: "openai-chat",
                    streaming,
                    beta: String::new(),
                    body: self.chat.build_body(&turn, streaming)?,
                });
            }
            let turn = request(&self.responses, model)?;
            for streaming in [false, true] {
                cases.push(Case {
                    name: format!("{name}-responses-{model}"),
                    endpoint: "openai-responses",
                    streaming,
                    beta: String::new(),
                    body: self.responses.build_body(&turn, streaming)?,
                });
            }
        }
        for model in ["claude-sonnet-4-5", "claude-fable-5-1"] {
            let turn = request(&self.anthropic, model)?;
            for streaming in [false, true] {
                cases.push(Case {
                    name: format!("{name}-messages-{model}"),
                    endpoint: "anthropic-messages",
                    streaming,
                    beta: self.anthropic.betas(&turn),
                    body: self.anthropic.build_body(&turn, streaming)?,
                });
            }
            cases.push(Case {
                name: format!("{name}-count-{model}"),
                endpoint: "anthropic-count-tokens",
                streaming: false,
                beta: self.counter.betas(&turn),
                body: self.counter.build_body(&turn)?,
            });
        }
        Ok(cases)
    }
}

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "read".into(),
            description: "Read a file.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        },
        ToolSpec {
            name: "noop".into(),
            description: String::new(),
            parameters: Value::Null,
        },
    ]
}

fn by(provider: &str, model: &str, content: Vec<Block>) -> Message {
    Message {
        role: Role::Assistant,
        content,
        meta: Meta {
            origin: Some(Origin::Model {
                provider: provider.into(),
                model: model.into(),
            }),
            ..Meta::default()
        },
    }
}

fn call(id: &str, arguments: Value) -> Block {
    Block::ToolCall {
        id: id.into(),
        name: "read".into(),
        arguments,
    }
}

/// A 1 x 1 PNG, inline.
fn pixel() -> Block {
    Block::Image {
        source: ImageSource::Base64 {
            media_type: "image/png".into(),
            data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==".into(),
        },
        width: Some(1),
        height: Some(1),
    }
}

/// Every kind of block and every irregular shape the builder repairs.
fn every_block() -> anyhow::Result<Session> {
    let reasoning = |encrypted: bool| {
        let mut item = json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "plan"}]});
        if encrypted {
            item["encrypted_content"] = json!("gAAAAB");
        }
        Block::Thinking {
            thinking: "plan".into(),
            signature: Some(item.to_string()),
        }
    };
    let mut session = Session::in_memory("every-block");
    let messages = vec![
        Message::system("You are a coding agent."),
        Message::text(Role::Developer, "Prefer small diffs."),
        Message::tool_result("gone", "its call was compacted away", false),
        Message {
            role: Role::User,
            content: vec![
                Block::text("What is in this picture and this page?"),
                pixel(),
                Block::Image {
                    source: ImageSource::Url {
                        url: "https://example.com/cat.png".into(),
                    },
                    width: None,
                    height: None,
                },
                Block::text(""),
            ],
            meta: Meta::default(),
        },
        by(
            "anthropic",
            "claude-sonnet-4-5-20250929",
            vec![
                Block::Thinking {
                    thinking: "Look first.".into(),
                    signature: Some("EqQBCkYIBxgCKkA".into()),
                },
                Block::RedactedThinking {
                    data: "EmwKAhgBEgy3va3".into(),
                },
                Block::text("Reading it."),
                call("c1", json!({"path": "a.rs"})),
                call("c2", json!("not an object")),
            ],
        ),
        Message::tool_result("c1", "fn main() {}", false),
        Message::user("Steering: look at b.rs too."),
        Message {
            role: Role::Tool,
            content: vec![Block::ToolResult {
                call_id: "c2".into(),
                content: vec![Block::text("a screenshot"), pixel()],
                is_error: true,
            }],
            meta: Meta::default(),
        },
        Message::system("The user switched to plan mode."),
        by(
            "openai-responses",
            "gpt-5",
            vec![
                reasoning(false),
                reasoning(true),
                Block::text("Calling again."),
                call("c3", json!({"path": "b.rs"})),
            ],
        ),
        by(
            "openai-chat",
            "gpt-4o",
            vec![Block::text("A dangling call."), call("c4", json!({}))],
        ),
        Message::user("Go on."),
        // The current turn's tool loop: its thinking is read by every
        // model that wrote it.
        by(
            "openai-responses",
            "gpt-5",
            vec![reasoning(true), call("c5", json!({"path": "c.rs"}))],
        ),
        Message::tool_result("c5", "fn c() {}", false),
        by(
            "anthropic",
            "claude-sonnet-4-5-20250929",
            vec![
                Block::Thinking {
                    thinking: "One more file.".into(),
                    signature: Some("EqQBCkYIBxgCKkB".into()),
                },
                call("c6", json!({"path": "d.rs"})),
            ],
        ),
        Message::tool_result("c6", "fn d() {}", false),
    ];
    for message in messages {
        session.append_message(message)?;
    }
    Ok(session)
}

/// A method that writes a checkpoint carrying a native compaction's
/// output for `dialect` at `account`, as the `remote` method records it.
#[derive(Debug)]
struct NativeCheckpoint {
    dialect: &'static str,
    account: String,
}

#[async_trait::async_trait]
impl CompactionMethod for NativeCheckpoint {
    fn name(&self) -> &str {
        "remote"
    }

    async fn run(&self, _plan: &Plan) -> Result<MethodOutput, MethodError> {
        let output = if self.dialect == AnthropicClient::NAME {
            json!([{"type": "compaction", "content": "Parser work; tests pass.", "encrypted_content": "EqQBCkYI", "signature": "sig-cmp"}])
        } else {
            json!([
                {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "old instructions"}]},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix the parser."}]},
                {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAABcompacted"},
            ])
        };
        let details = Details::new().with(&NativeRecord {
            provider: self.dialect.to_string(),
            endpoint: "wire-check".to_string(),
            account: Some(self.account.clone()),
            model: "wire-check".to_string(),
            output,
        })?;
        Ok(MethodOutput::Checkpoint(
            Checkpoint::new("## Goal\nFix the parser.").with_details(details),
        ))
    }
}

/// A session compacted once by `dialect`'s native compaction, then a few
/// turns more, thinking and tool calls among them.
async fn natively_compacted(dialect: &'static str, account: &str) -> anyhow::Result<Session> {
    let mut session = every_block()?;
    for round in 0..4 {
        session.append_message(by(
            "anthropic",
            "claude-fable-5-1",
            vec![
                Block::Thinking {
                    thinking: format!("Round {round}."),
                    signature: Some(format!("sig-{round}")),
                },
                Block::text("x ".repeat(400)),
            ],
        ))?;
        session.append_message(Message::user(format!("Round {round} done.")))?;
    }
    let method = NativeCheckpoint {
        dialect,
        account: account.to_string(),
    };
    abridge_compact::compact_session(&mut session, &method, &policy(), Trigger::Manual)
        .await
        .context("the scripted native compaction did not commit")?;
    session.append_message(by(
        "anthropic",
        "claude-fable-5-1",
        vec![
            Block::Thinking {
                thinking: "After the checkpoint.".into(),
                signature: Some("sig-after".into()),
            },
            call("c9", json!({"path": "c.rs"})),
        ],
    ))?;
    session.append_message(Message::tool_result("c9", "fn c() {}", false))?;
    session.append_message(Message::user("Next."))?;
    Ok(session)
}

fn policy() -> Policy {
    Policy::default().with_keep_recent_tokens(200)
}

/// The native compaction calls for a span headed by an earlier native
/// compaction of the same provider.
fn native_compactions(
    runtime: &tokio::runtime::Runtime,
    clients: &Clients,
) -> anyhow::Result<Vec<Case>> {
    let mut cases = Vec::new();
    for (kind, url, model, dialect, account, endpoint) in [
        (
            RemoteKind::ResponsesCompact,
            OPENAI_BASE,
            "gpt-5-codex",
            OpenAiResponsesClient::NAME,
            clients.responses.native_account(),
            "openai-responses-compact",
        ),
        (
            RemoteKind::AnthropicCompaction,
            ANTHROPIC_BASE,
            "claude-fable-5-1",
            AnthropicClient::NAME,
            clients.anthropic.native_account(),
            "anthropic-messages",
        ),
    ] {
        let mut session =
            runtime.block_on(natively_compacted(dialect, account.unwrap_or_default()))?;
        for round in 0..3 {
            session.append_message(Message::assistant("y ".repeat(400)))?;
            session.append_message(Message::user(format!("More {round}.")))?;
        }
        let plan = abridge_compact::host::plan(&session, &policy())
            .context("the compacted session has nothing to compact")?;
        let mut config = RemoteConfig::new(kind, url, model);
        config.api_key = Some(KEY.into());
        config.prefix = Some(abridge_compact_basic::ConversationPrefix::new(
            "You are a coding agent.",
            tools(),
        ));
        let Some(native) = abridge_compact_basic::native_request(&config, &plan)? else {
            continue;
        };
        cases.push(Case {
            name: format!("{dialect}-native-compaction"),
            endpoint,
            streaming: false,
            beta: native.beta,
            body: native.body,
        });
    }
    Ok(cases)
}
