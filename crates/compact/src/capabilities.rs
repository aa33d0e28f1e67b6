//! What a compaction method is, as the method itself declares it.
//!
//! The host (Maintenance, speculation, the command line) decides what to
//! do with a method by asking these questions, never by its name: a new
//! method that calls a model is speculated like `soft` without anyone
//! adding its name to a list.

/// What a method's output does to the surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OutputKind {
    /// It replaces the planned span with one checkpoint message.
    Checkpoint,
    /// It rewrites individual tool results in place (pruning, masking).
    Rewrites,
}

/// The answers a [`CompactionMethod`](crate::CompactionMethod) gives about
/// itself.
///
/// The default ([`Capabilities::MODEL_FREE`]) is the answer that is never
/// wrong for a method nobody described: it calls no model (so it is not
/// started early on a snapshot), it does not resend its input (so it may
/// run when the provider refused the request as too long), and it writes a
/// checkpoint. A method changes what differs with the `with_`/`calling_`
/// builders:
///
/// ```
/// use abridge_compact::{Capabilities, OutputKind};
///
/// // A method that asks a model for a summary of the whole history as is.
/// let handoff_like = Capabilities::model_backed().resending_input();
/// assert!(handoff_like.calls_model());
/// assert!(!handoff_like.runs_on_overflow());
/// assert_eq!(Capabilities::rewriting().output(), OutputKind::Rewrites);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Capabilities {
    calls_model: bool,
    resends_input: bool,
    runs_on_overflow: bool,
    speculated: bool,
    output: OutputKind,
}

impl Default for Capabilities {
    fn default() -> Self {
        Self::MODEL_FREE
    }
}

impl Capabilities {
    /// A model-free method that writes a checkpoint (`digest`,
    /// `snapcompact`): the default.
    pub const MODEL_FREE: Capabilities = Capabilities {
        calls_model: false,
        resends_input: false,
        runs_on_overflow: true,
        speculated: false,
        output: OutputKind::Checkpoint,
    };

    /// A model-free method that rewrites tool results (`prune`, `shake`).
    pub const fn rewriting() -> Self {
        Capabilities {
            output: OutputKind::Rewrites,
            ..Self::MODEL_FREE
        }
    }

    /// A method that asks a model for its checkpoint (`soft`, `remote`):
    /// it takes seconds, so Maintenance may start it early on a snapshot
    /// when the context nears the threshold.
    pub const fn model_backed() -> Self {
        Capabilities {
            calls_model: true,
            speculated: true,
            ..Self::MODEL_FREE
        }
    }

    /// The same method, sending its input to the model as it is rather
    /// than in windows that fit (`handoff`): after the provider refused a
    /// request as too long, it would be refused too, so it does not run on
    /// overflow.
    pub const fn resending_input(self) -> Self {
        Capabilities {
            resends_input: true,
            runs_on_overflow: false,
            ..self
        }
    }

    /// The same method, with speculation switched on or off (a model
    /// call that is cheap, or one whose result must not be computed
    /// before it is needed).
    pub const fn with_speculation(self, speculated: bool) -> Self {
        Capabilities { speculated, ..self }
    }

    /// The same method, allowed or not to run after an overflow.
    pub const fn with_overflow(self, runs_on_overflow: bool) -> Self {
        Capabilities {
            runs_on_overflow,
            ..self
        }
    }

    /// Whether it calls a model (and so costs money and seconds).
    pub const fn calls_model(&self) -> bool {
        self.calls_model
    }

    /// Whether it sends the history it compacts to a model as it is.
    pub const fn resends_input(&self) -> bool {
        self.resends_input
    }

    /// Whether it may run when the provider rejected the request as too
    /// long.
    pub const fn runs_on_overflow(&self) -> bool {
        self.runs_on_overflow
    }

    /// Whether Maintenance may start it early on a snapshot (see the
    /// `abridge` crate's speculation).
    pub const fn speculated(&self) -> bool {
        self.speculated
    }

    /// Whether it writes a checkpoint or rewrites tool results.
    pub const fn output(&self) -> OutputKind {
        self.output
    }
}
