//! One module per subcommand.

pub(crate) mod import;
pub(crate) mod stats;
