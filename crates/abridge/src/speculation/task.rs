//! The background task a speculation runs in: a tokio task with the
//! `tokio` feature inside a runtime, and nothing otherwise.

use abridge_compact::MethodError;
use abridge_compact::MethodOutput;

/// What a speculative run resolves to.
type Output = Result<MethodOutput, MethodError>;

#[cfg(feature = "tokio")]
/// A speculative run on the host's tokio runtime.
pub(crate) struct Task(tokio::task::JoinHandle<Output>);

#[cfg(feature = "tokio")]
impl Task {
    /// Spawns `run` on the current tokio runtime.
    pub(crate) fn spawn(
        run: impl Future<Output = Output> + Send + 'static,
    ) -> Result<Self, &'static str> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| "no tokio runtime is running on this thread")?;
        Ok(Task(runtime.spawn(run)))
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.0.is_finished()
    }

    pub(crate) fn abort(&self) {
        self.0.abort();
    }

    pub(crate) async fn join(&mut self) -> Output {
        match (&mut self.0).await {
            Ok(result) => result,
            Err(error) => Err(MethodError::Cancelled {
                by: format!("the speculative task ({error})"),
            }),
        }
    }
}

#[cfg(not(feature = "tokio"))]
/// No task can exist without a runtime to spawn on.
pub(crate) enum Task {}

#[cfg(not(feature = "tokio"))]
impl Task {
    /// Always refuses: abridge was built without tokio.
    pub(crate) fn spawn(
        _run: impl Future<Output = Output> + Send + 'static,
    ) -> Result<Self, &'static str> {
        Err("abridge was built without its `tokio` feature")
    }

    pub(crate) fn is_finished(&self) -> bool {
        match *self {}
    }

    pub(crate) fn abort(&self) {
        match *self {}
    }

    pub(crate) async fn join(&mut self) -> Output {
        match *self {}
    }
}
