//! A client that counts the calls made through it, so the LLM mode can
//! say whether a model-backed method really called the model (a pass can
//! land without it: the default order falls through to model-free
//! methods).

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;

use abridge_llm::LlmClient;
use abridge_llm::LlmError;
use abridge_llm::Request;
use abridge_llm::Response;
use abridge_llm::ResponseStream;
use async_trait::async_trait;

/// Passes every call to the inner client and counts it.
#[derive(Debug)]
pub(crate) struct Counting {
    inner: Arc<dyn LlmClient>,
    calls: AtomicUsize,
}

impl Counting {
    pub(crate) fn new(inner: Arc<dyn LlmClient>) -> Self {
        Counting {
            inner,
            calls: AtomicUsize::new(0),
        }
    }

    /// Calls made so far, answered or not.
    pub(crate) fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }
}

#[async_trait]
impl LlmClient for Counting {
    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn native_dialect(&self) -> Option<&str> {
        self.inner.native_dialect()
    }

    fn native_account(&self) -> Option<&str> {
        self.inner.native_account()
    }

    async fn complete(&self, request: &Request) -> Result<Response, LlmError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.complete(request).await
    }

    async fn stream(&self, request: &Request) -> Result<ResponseStream, LlmError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.stream(request).await
    }
}
