//! [`CompactService`](abridge_compact::CompactService) for Maintenance:
//! hosts written against the seam's service trait get the same walk.

use abridge_compact::CompactError;
use abridge_compact::Outcome;
use abridge_compact::SharedSession;
use abridge_compact::Span;
use abridge_compact::Trigger;

use super::Maintenance;

#[async_trait::async_trait]
impl abridge_compact::CompactService for Maintenance {
    async fn compact_if_needed(
        &self,
        session: &SharedSession,
        trigger: Trigger,
    ) -> Result<Option<Outcome>, CompactError> {
        let pass = self.run(session, trigger).await?;
        Ok(pass.outcomes.into_iter().last())
    }

    async fn compact_now(
        &self,
        session: &SharedSession,
        request: abridge_compact::CompactRequest,
    ) -> Result<Outcome, CompactError> {
        let mut maintenance = self.clone();
        if let Some(keep) = request.keep_recent_tokens {
            maintenance.policy.keep_recent_tokens = keep;
        }
        let pass = maintenance
            .run_with(
                session,
                request.trigger,
                &request.methods,
                request.instructions,
            )
            .await?;
        let failures = pass.failures;
        match pass.outcomes.into_iter().last() {
            Some(mut outcome) => {
                outcome.failures = failures;
                Ok(outcome)
            }
            None => Err(CompactError::AllFailed { failures }),
        }
    }

    async fn compact_region(
        &self,
        session: &SharedSession,
        span: Span,
    ) -> Result<Outcome, CompactError> {
        self.region(session, span).await
    }
}
