//! The summarizer contract: boxed and shared summarizers pass every call
//! on.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use abridge_compact_basic::FnSummarizer;
use abridge_compact_basic::Summarizer;
use abridge_compact_basic::Summary;
use abridge_compact_basic::SummaryFuture;
use abridge_compact_basic::SummaryRequest;
use abridge_llm::Message;

#[tokio::test]
async fn boxed_and_shared_summarizers_pass_the_request_on() {
    let summarizer = || {
        FnSummarizer::new("echo", |request: &SummaryRequest| -> SummaryFuture {
            let text = format!("{} messages", request.messages.len());
            Box::pin(async move { Ok(Summary::text(text)) })
        })
    };
    let request = SummaryRequest::new(vec![Message::user("one").into()]);
    let boxed: Box<dyn Summarizer> = Box::new(summarizer());
    let shared: std::sync::Arc<dyn Summarizer> = std::sync::Arc::new(summarizer());
    for wrapped in [&boxed as &dyn Summarizer, &shared] {
        assert_eq!(wrapped.name(), "echo");
        let summary = wrapped.summarize(&request).await.unwrap();
        assert_eq!(summary.text, "1 messages");
    }
}
