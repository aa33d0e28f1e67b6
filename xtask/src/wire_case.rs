//! One request body for the wire check, wherever it came from (the
//! encoders' corpus or the proxy's replays).

use serde_json::Value;

/// One body to check.
pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) endpoint: &'static str,
    pub(crate) streaming: bool,
    pub(crate) beta: String,
    pub(crate) body: Value,
}
