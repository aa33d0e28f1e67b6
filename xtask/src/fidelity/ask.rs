//! The LLM mode's questions: the probes asked of a model over the
//! compacted context, and its answers graded against the key.
//!
//! A probe is asked through its category's question ("which files did the
//! agent change?"), and the answer is graded against every probe of that
//! category: a question about one file would have to name the file, and
//! so give its answer away. No judge model: an answer holds a fact when it
//! quotes it (exact) or holds its needle once case, spaces and punctuation
//! are ignored (normalised, the model-free mode's match).

use std::time::Duration;

use abridge_llm::LlmClient;
use abridge_llm::Message;
use abridge_llm::Purpose;
use abridge_llm::Request;

use super::key::Key;
use super::probe::Category;
use super::probe::Probe;
use super::probe::normalise;

/// What the model is told before each question: the answer is read from
/// the conversation, not worked out with tools.
const PREAMBLE: &str = "Answer from the conversation above only; do not call any tool. Quote names, paths, commands and messages exactly as they appear.";

/// The question a category's probes are asked through.
pub(crate) fn question(category: Category) -> &'static str {
    match category {
        Category::Task => {
            "What did the user ask for? Quote the user's first request and their latest request, word for word."
        }
        Category::Constraints => {
            "What rules, constraints and instructions did the user give, including those of instruction files such as AGENTS.md or CLAUDE.md? Quote each one word for word, one per line."
        }
        Category::FilesChanged => {
            "Which files did the agent create, edit or write? List every path, one per line."
        }
        Category::FilesRead => {
            "Which files did the agent read or open? List every path, one per line."
        }
        Category::LastError => {
            "What was the last command that failed, and what error did it print? Quote the command and its error line exactly."
        }
        Category::Commands => {
            "Which commands build or test the project, as they were run? List each one exactly, one per line."
        }
        Category::Identifiers => {
            "Which functions, types, classes and tests did the agent define or edit? List every name, one per line."
        }
        Category::OpenItems => {
            "What work is still open: the request not yet answered and the planned items not done? Quote each one."
        }
    }
}

/// How an answer stands against one probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The answer quotes the fact as the key holds it.
    Exact,
    /// The answer holds the fact's needle once normalised.
    Normalised,
    /// The model answered without the fact.
    Missed,
    /// The question got no answer (the endpoint failed or timed out).
    Errored,
}

/// How `answer` stands against `probe`. An exact quote is also a
/// normalised match, so the two shares nest.
pub(crate) fn grade_answer(probe: &Probe, answer: &str) -> Answer {
    let fact = probe.text.trim();
    if !fact.is_empty() && answer.contains(fact) {
        Answer::Exact
    } else if normalise(answer).contains(&probe.needle) {
        Answer::Normalised
    } else {
        Answer::Missed
    }
}

/// Limits of one question.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AskLimits {
    /// Cap on the answer's length in tokens.
    pub(crate) answer_tokens: u32,
    /// Time one question may take before its probes count as errored.
    pub(crate) timeout: Duration,
}

/// Every probe's answer, and what asking cost.
#[derive(Debug, Clone, Default)]
pub(crate) struct Asked {
    /// Each probe's grade, in the key's order.
    pub(crate) answers: Vec<Answer>,
    /// Questions sent.
    pub(crate) questions: usize,
    /// Each failed question: its category and why.
    pub(crate) errors: Vec<String>,
}

/// The request that asks `category`'s question after `context`.
pub(crate) fn request(model: &str, context: &[Message], category: Category, cap: u32) -> Request {
    let mut messages = context.to_vec();
    messages.push(Message::user(format!(
        "{PREAMBLE}\n\n{}",
        question(category)
    )));
    let mut request = Request::new(model, messages, Purpose::Turn);
    request.max_output_tokens = Some(cap);
    request.temperature = Some(0.0);
    request
}

/// Asks every category of `key` that has probes, over `context`, and
/// grades each probe. A failed or timed-out question marks its probes
/// errored and is recorded; it never ends the run.
pub(crate) async fn ask_all(
    client: &dyn LlmClient,
    model: &str,
    context: &[Message],
    key: &Key,
    limits: AskLimits,
) -> Asked {
    let mut asked = Asked {
        answers: vec![Answer::Errored; key.probes.len()],
        ..Asked::default()
    };
    for category in Category::ALL {
        if key.of(category).next().is_none() {
            continue;
        }
        let request = request(model, context, category, limits.answer_tokens);
        asked.questions += 1;
        let answer = match tokio::time::timeout(limits.timeout, client.complete(&request)).await {
            Ok(Ok(response)) => response.message.plain_text(),
            Ok(Err(error)) => {
                asked.errors.push(format!("{category}: {error}"));
                continue;
            }
            Err(_) => {
                asked.errors.push(format!(
                    "{category}: no answer within {} s",
                    limits.timeout.as_secs()
                ));
                continue;
            }
        };
        for (slot, probe) in asked.answers.iter_mut().zip(&key.probes) {
            if probe.category == category {
                *slot = grade_answer(probe, &answer);
            }
        }
    }
    asked
}

/// Counts for one category: probes, answered, exact, normalised.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct AnswerTally {
    pub(crate) probes: usize,
    pub(crate) answered: usize,
    pub(crate) exact: usize,
    pub(crate) normalised: usize,
}

impl AnswerTally {
    /// Exact and normalised shares of every probe, in percent; `None`
    /// when there is no probe.
    pub(crate) fn percents(&self) -> Option<(f64, f64)> {
        (self.probes > 0).then(|| {
            let total = self.probes as f64;
            (
                100.0 * self.exact as f64 / total,
                100.0 * self.normalised as f64 / total,
            )
        })
    }

    pub(crate) fn add(&mut self, other: AnswerTally) {
        self.probes += other.probes;
        self.answered += other.answered;
        self.exact += other.exact;
        self.normalised += other.normalised;
    }

    /// Probes whose question got no answer.
    pub(crate) fn errored(&self) -> usize {
        self.probes - self.answered
    }
}

/// The tally of `category` (every category when `None`) from `answers`.
pub(crate) fn answer_tally(
    key: &Key,
    answers: &[Answer],
    category: Option<Category>,
) -> AnswerTally {
    let mut out = AnswerTally::default();
    for (probe, answer) in key.probes.iter().zip(answers) {
        if category.is_some_and(|c| c != probe.category) {
            continue;
        }
        out.probes += 1;
        out.answered += usize::from(*answer != Answer::Errored);
        out.exact += usize::from(*answer == Answer::Exact);
        out.normalised += usize::from(matches!(answer, Answer::Exact | Answer::Normalised));
    }
    out
}
