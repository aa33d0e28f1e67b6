//! `abridge context`: exactly the messages the model would receive next.

use std::path::PathBuf;

use abridge_llm::Block;
use abridge_llm::ImageSource;

use crate::open::open_session;

/// Arguments of `abridge context`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The abridge session file.
    session: PathBuf,
    /// Print the messages in the abridge-llm wire form (a JSON array).
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let (session, _) = open_session(&args.session, false)?;
    let messages = session.surface_messages();
    if args.json {
        let expanded = abridge::expand_frames(&session)?;
        println!("{}", serde_json::to_string_pretty(&expanded)?);
        return Ok(());
    }
    let mut out = String::new();
    for (position, message) in messages.iter().enumerate() {
        out.push_str(&format!("── {position} {} ──\n", message.role));
        render_blocks(&message.content, &mut out, "");
    }
    print!("{out}");
    Ok(())
}

/// The surface with snapcompact frame references drawn into PNG images:
/// the wire form a provider receives. References are never sent as they
/// are stored.
fn render_blocks(blocks: &[Block], out: &mut String, indent: &str) {
    for block in blocks {
        match block {
            Block::Text { text } => push_indented(out, indent, text),
            Block::Thinking { thinking, .. } => {
                push_indented(out, indent, &format!("[thinking] {thinking}"));
            }
            Block::RedactedThinking { .. } => push_indented(out, indent, "[redacted thinking]"),
            Block::Native { provider, item } => push_indented(
                out,
                indent,
                &format!(
                    "[{provider} native {}, {} bytes]",
                    item.get("type").and_then(|t| t.as_str()).unwrap_or("item"),
                    item.to_string().len()
                ),
            ),
            Block::Image {
                source,
                width,
                height,
            } => {
                let size = match (width, height) {
                    (Some(w), Some(h)) => format!("{w}x{h}"),
                    _ => "size unknown".to_string(),
                };
                let kind = match source {
                    ImageSource::Base64 { media_type, data } => {
                        format!("{media_type}, {} bytes of base64", data.len())
                    }
                    ImageSource::Url { url } => {
                        format!("url {}", url.chars().take(60).collect::<String>())
                    }
                    ImageSource::Blob { sha256, .. } => format!("blob {sha256}"),
                };
                push_indented(out, indent, &format!("[image {size}, {kind}]"));
            }
            Block::ToolCall {
                id,
                name,
                arguments,
            } => push_indented(out, indent, &format!("[call {id}] {name}({arguments})")),
            Block::ToolResult {
                call_id,
                content,
                is_error,
            } => {
                let tag = if *is_error { "error" } else { "result" };
                push_indented(out, indent, &format!("[{tag} for {call_id}]"));
                render_blocks(content, out, &format!("{indent}  "));
            }
        }
    }
}

fn push_indented(out: &mut String, indent: &str, text: &str) {
    for line in text.lines() {
        out.push_str(indent);
        out.push_str(line);
        out.push('\n');
    }
    if text.is_empty() {
        out.push('\n');
    }
}
