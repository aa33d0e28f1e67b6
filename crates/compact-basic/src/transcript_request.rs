//! The flattened-transcript summary request, and the tail every summary
//! request ends with (both request modes share it).

use crate::summarizer::SummaryRequest;
use abridge_llm::Message;
use abridge_llm::Purpose;
use abridge_llm::Request;

use crate::prompts::BRANCH_SUMMARY;
use crate::prompts::SUMMARIZE_INITIAL;
use crate::prompts::SUMMARIZE_SYSTEM;
use crate::prompts::SUMMARIZE_TURN_PREFIX;
use crate::prompts::SUMMARIZE_UPDATE;
use crate::transcript::render_transcript;

/// Appends what every summary request ends with: the previous checkpoint to
/// merge (when there is one to show), the host's notes, the task prompt and
/// the user's focus. Both request modes end this way.
pub(crate) fn push_summary_tail(
    text: &mut String,
    previous: Option<&str>,
    request: &SummaryRequest,
    task: &str,
) {
    if let Some(previous) = previous {
        text.push_str("<previous-checkpoint>\n");
        text.push_str(previous.trim());
        text.push_str("\n</previous-checkpoint>\n\n");
    }
    if !request.extra_context.is_empty() {
        text.push_str("<host-notes>\n");
        for note in &request.extra_context {
            text.push_str(note.trim());
            text.push('\n');
        }
        text.push_str("</host-notes>\n\n");
    }
    text.push_str(task.trim());
    if let Some(instructions) = &request.instructions {
        text.push_str("\n\nThe user asked this checkpoint to focus on: ");
        text.push_str(instructions.trim());
    }
}

/// Builds the transcript request for `request`: the system prompt that
/// treats history as untrusted data, then one user message with the
/// conversation, the previous checkpoint, host notes, the task prompt and
/// any focus. No tools are offered.
pub(crate) fn transcript_request(model: &str, request: &SummaryRequest) -> Request {
    let (history, task) = if request.purpose == Purpose::BranchSummary {
        (&request.messages, BRANCH_SUMMARY)
    } else if request.messages.is_empty() && !request.turn_prefix.is_empty() {
        (&request.turn_prefix, SUMMARIZE_TURN_PREFIX)
    } else if request.previous.is_some() {
        (&request.messages, SUMMARIZE_UPDATE)
    } else {
        (&request.messages, SUMMARIZE_INITIAL)
    };
    let mut text = String::new();
    text.push_str("<conversation>\n");
    text.push_str(&render_transcript(history));
    text.push_str("\n</conversation>\n\n");
    push_summary_tail(&mut text, request.previous.as_deref(), request, task);
    let mut out = Request::new(
        model,
        vec![
            Message::system(SUMMARIZE_SYSTEM.trim()),
            Message::user(text),
        ],
        request.purpose,
    );
    out.max_output_tokens = Some(request.max_output_tokens);
    out
}
