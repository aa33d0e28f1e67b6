//! Where the e2e checks, the wire check and the aider e2e keep what they
//! install (the llama.cpp server, the model, the providers' Python
//! packages, aider): outside the repository, so a fresh clone reuses it.
//! Its own module so that no check reaches into another check for it.

use std::path::PathBuf;

/// The cache directory: `ABRIDGE_E2E_CACHE`, else `~/.cache/abridge-e2e`.
pub(crate) fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ABRIDGE_E2E_CACHE") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    home.join(".cache").join("abridge-e2e")
}
