//! The kept-counts file beside a session, for the commands that measure
//! with a meter of their own (`stats`, `import`): read before measuring,
//! written back after, with a note on stderr when the file could not be
//! used. The file's place and life belong to abridge-meter's `KeptFile`
//! (see docs/token-accounting.md); `compact` reaches it through the
//! Harness.

use std::path::Path;

use abridge_meter::KeptFile;
use abridge_meter::KeptLoad;
use abridge_meter::TokenMeter;

/// Gives `meter` the counts kept beside `session`, or an empty set when
/// there are none or they cannot be used (with a note on stderr, except
/// for a missing file or one made for another cost model).
pub(crate) fn load(meter: &mut TokenMeter, session: &Path) {
    let file = KeptFile::beside(session);
    if let KeptLoad::Refused(error) = file.load(meter) {
        eprintln!(
            "note: {}: {error}; counting again and rewriting it",
            file.path().display()
        );
    }
}

/// Writes `meter`'s kept counts beside `session` when it counted anything
/// new. A failure is a note, not an error: the counts are a cache.
pub(crate) fn save(meter: &mut TokenMeter, session: &Path) {
    let file = KeptFile::beside(session);
    if let Err(error) = file.save(meter) {
        eprintln!("note: {}: {error}; counts not kept", file.path().display());
    }
}
