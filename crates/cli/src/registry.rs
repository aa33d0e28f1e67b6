//! The methods this process's command line can name: the built-in ones,
//! or the registry a binary that embeds the command line installed
//! ([`main_with`](crate::main_with)).

use std::sync::OnceLock;

use abridge::MethodRegistry;

static INSTALLED: OnceLock<MethodRegistry> = OnceLock::new();

/// Makes `registry` the process's, unless one is already installed.
pub(crate) fn install(registry: MethodRegistry) {
    let _ = INSTALLED.set(registry);
}

/// The process's registry (the built-in one when none was installed).
pub(crate) fn registry() -> &'static MethodRegistry {
    INSTALLED.get_or_init(MethodRegistry::builtin)
}
