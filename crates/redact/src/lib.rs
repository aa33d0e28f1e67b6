//! Redaction: secrets taken out of the history a method reads, so that no
//! API key, token, private key or password leaves the process or lands in
//! a derived artifact (a checkpoint, a summarizer request, a frame, a
//! handoff document, a report).
//!
//! # Where it applies
//!
//! The compaction seam (`abridge-compact`) applies it once, when a `Plan`
//! is built under a `Policy` that carries a [`Redactor`]: every message the
//! plan hands a method (the span, the head, the kept tail) and the previous
//! checkpoint's summary are the redacted view, so no method has to
//! remember. The log itself is never modified: kept messages stay verbatim
//! on the surface, and the originals stay in the file.
//!
//! # What a redaction looks like
//!
//! Each secret becomes a visible placeholder naming its kind,
//! `[redacted: openai-key]` (see [`SecretKind::placeholder`]), so a reader
//! (or a model) knows something was there and what it was. Where a secret
//! has a readable frame, the frame is kept: `aws_secret_access_key =
//! [redacted: aws-secret-key]`, `postgres://app:[redacted: url-password]@db`.
//!
//! # Guarantees
//!
//! - Idempotent: redacting redacted text changes nothing (placeholders are
//!   recognised and left alone).
//! - Never panics, on any input.
//! - Linear in the text: private keys are found by a scanner that never
//!   searches the same bytes twice, everything else by one combined regular
//!   expression (the `regex` crate runs in time linear in the input).

mod kinds;
mod message;
mod pem;

use std::borrow::Cow;

use regex::Regex;

pub use kinds::REDACTION_OPENING;
pub use kinds::SecretKind;

/// How an existing placeholder is recognised, so it is never redacted
/// again.
const PLACEHOLDER_PATTERN: &str = r"\[redacted: [a-z0-9-]{1,40}\]";

/// A user pattern that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RedactError {
    /// The pattern is not a valid regular expression.
    #[error("pattern {pattern:?} is not a valid regular expression: {reason}")]
    InvalidPattern {
        /// The pattern as given.
        pattern: String,
        /// What the parser said.
        reason: String,
    },
    /// The pattern can match empty text, which would put a placeholder
    /// between characters.
    #[error("pattern {pattern:?} can match empty text; make it match at least one character")]
    MatchesEmpty {
        /// The pattern as given.
        pattern: String,
    },
    /// The patterns are valid one by one but not together (two of them use
    /// the same group name, or together they pass the size limit).
    #[error("the patterns cannot be combined: {reason}")]
    Combined {
        /// What the compiler said.
        reason: String,
    },
}

/// One alternative of the combined expression.
#[derive(Debug, Clone, Copy)]
struct Alternative {
    /// The capture group that wraps it.
    group: usize,
    /// What it finds; `None` for an existing placeholder, kept as is.
    kind: Option<SecretKind>,
    /// The group of the part to replace, when not the whole match.
    secret: Option<usize>,
}

/// Finds secrets and replaces each with its placeholder. Cheap to share
/// (`Arc<Redactor>`); building one compiles the patterns, so build it once.
#[derive(Debug, Clone)]
pub struct Redactor {
    regex: Regex,
    alternatives: Vec<Alternative>,
    user_patterns: Vec<String>,
}

impl Redactor {
    /// The built-in patterns only.
    ///
    /// # Errors
    /// None in practice (the built-in patterns are tested); typed rather
    /// than a panic because the library never panics on configuration.
    pub fn builtin() -> Result<Self, RedactError> {
        Self::new(&[])
    }

    /// The built-in patterns plus `user_patterns` (regular expressions in
    /// the `regex` crate's syntax; each match becomes
    /// `[redacted: custom]`).
    ///
    /// # Errors
    /// [`RedactError`] naming the first pattern that does not parse or can
    /// match empty text.
    pub fn new(user_patterns: &[String]) -> Result<Self, RedactError> {
        let mut combined = Combined::default();
        combined.push(PLACEHOLDER_PATTERN, None, false)?;
        for kind in SecretKind::ALL {
            if let Some(pattern) = kind.pattern() {
                combined.push(pattern, Some(*kind), true)?;
            }
        }
        for pattern in user_patterns {
            check_user_pattern(pattern)?;
            combined.push(pattern, Some(SecretKind::Custom), false)?;
        }
        let regex = Regex::new(&combined.pattern).map_err(|e| RedactError::Combined {
            reason: e.to_string(),
        })?;
        Ok(Redactor {
            regex,
            alternatives: combined.alternatives,
            user_patterns: user_patterns.to_vec(),
        })
    }

    /// The user patterns this redactor was built with.
    pub fn user_patterns(&self) -> &[String] {
        &self.user_patterns
    }

    /// `text` with every secret replaced by its placeholder; borrowed when
    /// nothing was found.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let keys = pem::private_key_ranges(text);
        let staged: Cow<'t, str> = if keys.is_empty() {
            Cow::Borrowed(text)
        } else {
            let mut out = String::with_capacity(text.len());
            let mut last = 0;
            for range in keys {
                out.push_str(&text[last..range.start]);
                out.push_str(SecretKind::PrivateKey.placeholder());
                last = range.end;
            }
            out.push_str(&text[last..]);
            Cow::Owned(out)
        };
        match self.replace_matches(&staged) {
            Some(replaced) => Cow::Owned(replaced),
            None => staged,
        }
    }

    /// Whether `text` holds anything this redactor would replace.
    pub fn finds_secret(&self, text: &str) -> bool {
        matches!(self.redact(text), Cow::Owned(_))
    }

    /// The pattern pass: `None` when nothing was replaced.
    ///
    /// After each match (a secret or an existing placeholder) the search
    /// starts afresh on the rest of the text, as if the text began there:
    /// a placeholder ends with `]`, so a leading word boundary right after
    /// a secret must hold on this pass exactly as it will on the next one.
    /// That, and patterns that never look past their end, is what makes
    /// redaction idempotent.
    fn replace_matches(&self, text: &str) -> Option<String> {
        let mut out = String::new();
        let mut pos = 0;
        let mut changed = false;
        while pos < text.len() {
            let rest = &text[pos..];
            let Some(captures) = self.regex.captures(rest) else {
                break;
            };
            let Some(whole) = captures.get(0) else {
                break;
            };
            let alternative = self
                .alternatives
                .iter()
                .find(|a| captures.get(a.group).is_some());
            let secret = alternative.and_then(|a| {
                let kind = a.kind?;
                let span = a
                    .secret
                    .and_then(|g| captures.get(g))
                    .or_else(|| captures.get(a.group))?;
                (!span.is_empty()).then_some((kind, span))
            });
            let next = pos + whole.end().max(1);
            let next = (next..=text.len())
                .find(|i| text.is_char_boundary(*i))
                .unwrap_or(text.len());
            match secret {
                Some((kind, span)) => {
                    // The match's text before the part it replaces (a
                    // URL's scheme and user name) is searched on its own:
                    // a secret there (a key used as the user name) would
                    // otherwise be copied out, and found only by a second
                    // pass.
                    let before = &rest[..span.start()];
                    match self.replace_matches(before) {
                        Some(redacted) => out.push_str(&redacted),
                        None => out.push_str(before),
                    }
                    out.push_str(kind.placeholder());
                    out.push_str(&text[pos + span.end()..next]);
                    changed = true;
                }
                None => out.push_str(&text[pos..next]),
            }
            pos = next;
        }
        if !changed {
            return None;
        }
        out.push_str(&text[pos..]);
        Some(out)
    }
}

/// `text` through `redactor` when there is one, unchanged otherwise: for
/// callers whose redaction is a setting.
pub fn redact_with<'t>(redactor: Option<&Redactor>, text: &'t str) -> Cow<'t, str> {
    match redactor {
        Some(redactor) => redactor.redact(text),
        None => Cow::Borrowed(text),
    }
}

/// Rejects a user pattern that does not parse or can match empty text.
fn check_user_pattern(pattern: &str) -> Result<(), RedactError> {
    let hir =
        regex_syntax::Parser::new()
            .parse(pattern)
            .map_err(|e| RedactError::InvalidPattern {
                pattern: pattern.to_string(),
                reason: e.to_string(),
            })?;
    if hir.properties().minimum_len() == Some(0) {
        return Err(RedactError::MatchesEmpty {
            pattern: pattern.to_string(),
        });
    }
    Ok(())
}

/// The combined expression as it is built: each pattern wrapped in its own
/// group, joined by `|`, so one search tries them all at every position.
#[derive(Default)]
struct Combined {
    pattern: String,
    alternatives: Vec<Alternative>,
    next_group: usize,
}

impl Combined {
    /// Adds `pattern`; with `first_group_is_secret`, its first capture
    /// group (when it has one) is the part replaced.
    fn push(
        &mut self,
        pattern: &str,
        kind: Option<SecretKind>,
        first_group_is_secret: bool,
    ) -> Result<(), RedactError> {
        let alone = Regex::new(pattern).map_err(|e| RedactError::InvalidPattern {
            pattern: pattern.to_string(),
            reason: e.to_string(),
        })?;
        if self.next_group == 0 {
            self.next_group = 1;
        } else {
            self.pattern.push('|');
        }
        let inner_groups = alone.captures_len().saturating_sub(1);
        let group = self.next_group;
        self.alternatives.push(Alternative {
            group,
            kind,
            secret: (first_group_is_secret && inner_groups > 0).then_some(group + 1),
        });
        self.next_group += 1 + inner_groups;
        self.pattern.push('(');
        self.pattern.push_str(pattern);
        self.pattern.push(')');
        Ok(())
    }
}

#[cfg(test)]
mod tests;
