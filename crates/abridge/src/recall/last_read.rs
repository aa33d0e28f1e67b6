//! `{"path": ...}`: what the last read of a file returned, so the model
//! need not read an unchanged file again (issue 32, point 5).

use std::collections::BTreeMap;

use abridge_compact_basic::read_path;
use abridge_compact_basic::written_paths;
use abridge_llm::Role;
use abridge_session::Seq;
use abridge_session::Session;

use super::miss::RecallMiss;

/// The last read of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LastRead {
    /// The seq of the read's result.
    pub(crate) result: Seq,
    /// The newest call that wrote the path after that result, if any.
    pub(crate) changed_after: Option<Seq>,
}

/// Two spellings of one file: equal, or one is the other under a
/// directory (`src/a.rs` and `/w/src/a.rs`).
fn same_file(a: &str, b: &str) -> bool {
    a == b || a.ends_with(&format!("/{b}")) || b.ends_with(&format!("/{a}"))
}

/// The last successful read of `path` anywhere in the log (every branch,
/// hidden or not), and whether a later call wrote it.
///
/// # Errors
/// [`RecallMiss::NoRead`] when no read of it succeeded.
pub(crate) fn last_read(session: &Session, path: &str) -> Result<LastRead, RecallMiss> {
    let mut reads: BTreeMap<String, ()> = BTreeMap::new();
    let mut result: Option<Seq> = None;
    let mut written: Option<Seq> = None;
    for event in session.events() {
        let Some(message) = event.message_event().map(|m| &m.message) else {
            continue;
        };
        match message.role {
            Role::Assistant => {
                for (id, name, arguments) in message.tool_calls() {
                    if read_path(name, arguments).is_some_and(|p| same_file(&p, path)) {
                        reads.insert(id.to_string(), ());
                    }
                    if written_paths(name, arguments)
                        .iter()
                        .any(|p| same_file(p, path))
                    {
                        written = Some(event.seq);
                    }
                }
            }
            Role::Tool => {
                if let Some((id, _, is_error)) = message.tool_result_block()
                    && !is_error
                    && reads.remove(id).is_some()
                {
                    result = Some(event.seq);
                }
            }
            _ => {}
        }
    }
    let result = result.ok_or_else(|| RecallMiss::NoRead {
        path: path.to_string(),
    })?;
    Ok(LastRead {
        result,
        changed_after: written.filter(|w| *w > result),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_match_under_a_directory_only_at_a_separator() {
        assert!(same_file("/w/src/a.rs", "src/a.rs"));
        assert!(same_file("src/a.rs", "src/a.rs"));
        assert!(!same_file("/w/src/ba.rs", "a.rs"));
    }
}
