//! The kept-counts file beside a session: read before measuring, written
//! back after, so a session is tokenized once (see abridge-meter's
//! `KeptCounts` and docs/token-accounting.md).
//!
//! The file is a cache: when it is missing it is built; when it cannot be
//! read, is malformed or was made for another cost model, a note says so
//! and it is rebuilt; a count whose message changed is recounted by the
//! meter (every count is keyed by a hash of its message's content).

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::path::PathBuf;

use abridge_meter::KeptCounts;
use abridge_meter::KeptError;
use abridge_meter::TokenMeter;

/// The kept-counts file of the session at `session`: its path with
/// `.counts` added.
pub(crate) fn counts_path(session: &Path) -> PathBuf {
    let mut name = session.as_os_str().to_owned();
    name.push(".counts");
    PathBuf::from(name)
}

/// Gives `meter` the counts kept beside `session`, or an empty set when
/// there are none or they cannot be used (with a note on stderr, except
/// for a missing file). Does nothing for a meter whose cost model keeps
/// no counts.
pub(crate) fn load(meter: &mut TokenMeter, session: &Path) {
    let Some(model) = meter.cost_model().kept_id() else {
        return;
    };
    let path = counts_path(session);
    let kept = match File::open(&path) {
        Ok(file) => match KeptCounts::read(BufReader::new(file), &model) {
            Ok(kept) => kept,
            Err(KeptError::OtherModel { .. }) => KeptCounts::new(model),
            Err(error) => {
                eprintln!(
                    "note: {}: {error}; counting again and rewriting it",
                    path.display()
                );
                KeptCounts::new(model)
            }
        },
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => KeptCounts::new(model),
        Err(error) => {
            eprintln!(
                "note: {}: cannot read kept counts ({error}); counting again",
                path.display()
            );
            KeptCounts::new(model)
        }
    };
    meter.keep_counts(kept);
}

/// Writes `meter`'s kept counts beside `session` when it counted anything
/// new, through `write_private` (whole, renamed into place, 0600), so a
/// reader never sees half of it. A failure is a note,
/// not an error: the counts are a cache.
pub(crate) fn save(meter: &mut TokenMeter, session: &Path) {
    let Some(mut kept) = meter.take_kept_counts() else {
        return;
    };
    if !kept.changed() {
        meter.keep_counts(kept);
        return;
    }
    let path = counts_path(session);
    let mut bytes = Vec::new();
    let written = kept
        .write(&mut bytes)
        .and_then(|()| abridge_session::write_private(&path, &bytes).map_err(KeptError::from));
    if let Err(error) = written {
        eprintln!("note: {}: {error}; counts not kept", path.display());
    }
    meter.keep_counts(kept);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counts_file_sits_beside_the_session() {
        assert_eq!(
            counts_path(Path::new("/tmp/a.abridge.jsonl")),
            PathBuf::from("/tmp/a.abridge.jsonl.counts")
        );
    }
}
