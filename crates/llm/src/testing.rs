//! A scripted [`LlmClient`] for tests (feature `testing`): each call takes
//! the next [`Step`], and every request is kept with the time it came, so
//! a test can check what was sent, to which model, and how long the caller
//! waited between calls. abridge's own tests use it, and a framework can
//! drive its loop with it before wiring a real provider.
//!
//! ```
//! use abridge_llm::testing::{ScriptedClient, Step, text_reply};
//! use abridge_llm::{LlmClient, Message, Purpose, Request};
//!
//! let client = ScriptedClient::new(vec![Step::Reply(Box::new(text_reply("done")))]);
//! let request = Request::new("any-model", vec![Message::user("go")], Purpose::Turn);
//! let answer = futures::executor::block_on(client.complete(&request))?;
//! assert_eq!(answer.message.plain_text(), "done");
//! assert_eq!(client.requests().len(), 1);
//! # Ok::<(), abridge_llm::LlmError>(())
//! ```

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::Mutex;

use std::sync::PoisonError;
use std::time::Instant;

use async_trait::async_trait;
use futures::StreamExt;

use crate::client::LlmClient;
use crate::client::Request;
use crate::client::Response;
use crate::client::ResponseStream;
use crate::client::StreamEvent;
use crate::error::LlmError;
use crate::message::Message;
use crate::usage::StopReason;
use crate::usage::Usage;

/// What one call does.
#[derive(Debug)]
pub enum Step {
    /// Answer with this response.
    Reply(Box<Response>),
    /// Fail with this error.
    Fail(LlmError),
    /// Never answer (for timeouts and cancellation).
    Hang,
    /// Stream one text delta, then nothing (for stall detection).
    Stall,
}

/// A client that plays a script. When the script runs out it answers
/// with [`ScriptedClient::fallback`]'s text, or panics if none was set (a
/// test that calls more often than it planned has found something).
#[derive(Debug)]
pub struct ScriptedClient {
    provider: String,
    script: Mutex<VecDeque<Step>>,
    fallback: Option<String>,
    calls: Mutex<Vec<(Instant, Request)>>,
}

impl ScriptedClient {
    /// A client named `scripted` that plays `steps` in order.
    pub fn new(steps: Vec<Step>) -> Self {
        ScriptedClient {
            provider: "scripted".to_string(),
            script: Mutex::new(steps.into()),
            fallback: None,
            calls: Mutex::new(Vec::new()),
        }
    }

    /// Answers `text` once the script is spent, instead of panicking.
    pub fn fallback(mut self, text: &str) -> Self {
        self.fallback = Some(text.to_string());
        self
    }

    /// Shares it, as clients are passed.
    pub fn shared(self) -> Arc<Self> {
        Arc::new(self)
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(_, r)| r.clone())
            .collect()
    }

    /// The model each request asked for, in order.
    pub fn models(&self) -> Vec<String> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(_, r)| r.model.clone())
            .collect()
    }

    /// The time between consecutive calls.
    pub fn gaps(&self) -> Vec<std::time::Duration> {
        let calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        calls.windows(2).map(|w| w[1].0 - w[0].0).collect()
    }

    fn next(&self, request: &Request) -> Step {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((crate::timer::now(), request.clone()));
        let step = self
            .script
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        match (step, &self.fallback) {
            (Some(step), _) => step,
            (None, Some(text)) => Step::Reply(Box::new(text_reply(text))),
            (None, None) => panic!("the script is spent: call {}", self.requests().len()),
        }
    }
}

#[async_trait]
impl LlmClient for ScriptedClient {
    fn provider(&self) -> &str {
        &self.provider
    }

    async fn complete(&self, request: &Request) -> Result<Response, LlmError> {
        match self.next(request) {
            Step::Reply(response) => Ok(with_model(*response, request)),
            Step::Fail(error) => Err(error),
            Step::Hang | Step::Stall => std::future::pending().await,
        }
    }

    async fn stream(&self, request: &Request) -> Result<ResponseStream, LlmError> {
        match self.next(request) {
            Step::Reply(response) => {
                let done = StreamEvent::Done(Box::new(with_model(*response, request)));
                Ok(futures::stream::iter([Ok(done)]).boxed())
            }
            Step::Fail(error) => Err(error),
            Step::Hang => std::future::pending().await,
            Step::Stall => Ok(
                futures::stream::iter([Ok(StreamEvent::TextDelta("Hi".into()))])
                    .chain(futures::stream::pending())
                    .boxed(),
            ),
        }
    }
}

/// A scripted response names the model asked for unless it names one.
fn with_model(mut response: Response, request: &Request) -> Response {
    if response.model.is_empty() {
        response.model = request.model.clone();
    }
    response
}

/// A finished answer of `message`, costing 1,000 input and 50 output
/// tokens, from whatever model was asked for.
pub fn reply(message: Message, stop_reason: StopReason) -> Response {
    Response {
        message,
        usage: Usage {
            input: 1000,
            output: 50,
            ..Usage::default()
        },
        stop_reason,
        model: String::new(),
        native: None,
    }
}

/// A finished text answer.
pub fn text_reply(text: &str) -> Response {
    reply(Message::assistant(text), StopReason::EndTurn)
}

/// The error a provider gives for input over the window.
pub fn overflow() -> LlmError {
    LlmError::ContextOverflow {
        provider: "scripted".into(),
        message: "prompt is too long".into(),
    }
}

/// A 503.
pub fn server_error() -> LlmError {
    LlmError::Server {
        provider: "scripted".into(),
        status: 503,
        retry_after: None,
        message: "busy".into(),
    }
}
