//! The kept-counts file beside a session, for `stats`, which measures with
//! a meter of its own: read before measuring, with a note on stderr when
//! the file could not be used, and never written (a read-only command
//! creates no file). The file's place and life belong to abridge-meter's
//! `KeptFile` (see docs/token-accounting.md); `import` writes it as it
//! goes and `compact` reaches it through the Harness.

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
