//! One module per subcommand.

pub(crate) mod branch;
pub(crate) mod check;
pub(crate) mod compact;
pub(crate) mod context;
pub(crate) mod import;
pub(crate) mod pin;
pub(crate) mod pins;
pub(crate) mod proxy;
pub(crate) mod recall;
pub(crate) mod render;
pub(crate) mod repair;
pub(crate) mod report;
pub(crate) mod serve;
pub(crate) mod simulate;
pub(crate) mod stats;
