//! The one error type of this crate.

/// A failure of a reclaim pass or of an artifact store.
///
/// Passes that only compute rewrites never fail; errors come from
/// configuration that cannot work, from artifact storage, and from
/// references a tool passed in.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PruneError {
    /// A configuration value contradicts another; nothing was done.
    #[error("invalid {field}: {reason}")]
    Config {
        /// The offending field, for example `trim.head_chars`.
        field: &'static str,
        /// What is wrong, naming both values.
        reason: String,
    },
    /// An artifact id that this store could not have generated: refused
    /// before any path is built from it.
    #[error("artifact id {id:?} is not an id this store generates")]
    BadArtifactId {
        /// The id as given.
        id: String,
    },
    /// A path that resolves outside the artifact directory (traversal, an
    /// absolute path, a symbolic link).
    #[error("artifact path {path} is outside the store {root}")]
    OutsideStore {
        /// The path that was refused.
        path: String,
        /// The store's directory.
        root: String,
    },
    /// A reference that does not parse as `artifact://ID#START-END`.
    #[error("bad artifact reference {reference:?}: {reason}")]
    BadReference {
        /// The reference as given.
        reference: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The artifact exists, but the region asked for does not.
    #[error("region {start}-{end} is outside artifact {id} of {len} bytes")]
    RegionOutOfRange {
        /// The artifact.
        id: String,
        /// First byte asked for.
        start: u64,
        /// One past the last byte asked for.
        end: u64,
        /// The artifact's length.
        len: u64,
    },
    /// No artifact with this id exists in the store.
    #[error("no artifact {id} in {root}")]
    NotFound {
        /// The artifact asked for.
        id: String,
        /// The store's location.
        root: String,
    },
    /// Reading or writing the artifact directory failed.
    #[error("artifact store {path}: {source}")]
    Io {
        /// The file or directory involved.
        path: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

impl PruneError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        PruneError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}
