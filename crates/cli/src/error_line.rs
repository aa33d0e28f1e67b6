//! The one line `abridge` prints when a command fails.

/// An error and its causes on one line, outermost first, joined by `": "`,
/// with each cause printed once.
///
/// The library crates write their cause into their own message (so a
/// server's JSON body or a log line is whole without walking the chain) and
/// also return it from `source()`. Joining the chain as anyhow's `{:#}` does
/// would then print "cannot read: Is a directory: Is a directory"; a cause
/// whose text the line already holds adds nothing and is left out.
pub(crate) fn error_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if text.is_empty() || line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::error_line;

    use abridge::import::ImportError;

    fn is_a_directory() -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::IsADirectory, "Is a directory")
    }

    #[test]
    fn a_cause_already_in_the_message_is_printed_once() {
        let error = anyhow::Error::new(ImportError::Io {
            file: "/tmp".into(),
            source: is_a_directory(),
        })
        .context("cannot open /tmp as an abridge session");
        assert_eq!(
            error_line(&error),
            "cannot open /tmp as an abridge session: /tmp: cannot read: Is a directory"
        );
    }

    #[test]
    fn a_cause_the_message_leaves_out_is_printed() {
        let error = anyhow::Error::new(is_a_directory()).context("writing frame 3");
        assert_eq!(error_line(&error), "writing frame 3: Is a directory");
    }

    #[test]
    fn every_level_of_a_context_chain_is_printed_in_order() {
        let error = anyhow::anyhow!("disk full")
            .context("writing the checkpoint")
            .context("compact s.jsonl");
        assert_eq!(
            error_line(&error),
            "compact s.jsonl: writing the checkpoint: disk full"
        );
    }
}
