//! Bearer tokens and the tenants they stand for.
//!
//! A token maps to one tenant; a tenant sees only the sessions it created.
//! Token values are secrets: they are compared, never printed (the
//! `Debug` form of [`Tokens`] lists tenants only) and never logged.
//!
//! # The tokens file
//!
//! Either plain text, one `TOKEN TENANT` pair per line (blank lines and
//! lines starting with `#` are skipped):
//!
//! ```text
//! # token                          tenant
//! 3f9c1e0b6d2a47e8a1c5b7d9e2f40a6c  team-a
//! ```
//!
//! or a JSON object mapping each token to its tenant:
//!
//! ```json
//! {"3f9c1e0b6d2a47e8a1c5b7d9e2f40a6c": "team-a"}
//! ```
//!
//! A tenant name is 1 to 64 characters of ASCII letters, digits, `-` and
//! `_` (it names a directory under a JSONL store).

use std::collections::HashMap;
use std::fmt;

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;

/// The tenant a request acts for, once its token is accepted.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Tenant(String);

impl Tenant {
    /// A tenant name, checked.
    ///
    /// # Errors
    /// [`TokensError::BadTenant`] for an empty, long or unsafe name.
    pub fn new(name: &str) -> Result<Self, TokensError> {
        let ok = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if ok {
            Ok(Tenant(name.to_string()))
        } else {
            Err(TokensError::BadTenant {
                tenant: name.to_string(),
            })
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Tenant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The accepted tokens. Lookups compare every byte of every token, so the
/// time taken does not tell how much of a guess was right.
#[derive(Clone, Default)]
pub struct Tokens {
    by_token: HashMap<String, Tenant>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut tenants: Vec<&str> = self.by_token.values().map(Tenant::as_str).collect();
        tenants.sort_unstable();
        f.debug_struct("Tokens")
            .field("count", &self.by_token.len())
            .field("tenants", &tenants)
            .finish()
    }
}

impl Tokens {
    /// One token for one tenant (an environment variable's token, a test).
    ///
    /// # Errors
    /// As [`Tokens::insert`].
    pub fn single(token: &str, tenant: &str) -> Result<Self, TokensError> {
        let mut tokens = Tokens::default();
        tokens.insert(token, tenant, "token")?;
        Ok(tokens)
    }

    /// Parses a tokens file's text (see the module docs); `origin` names
    /// it in errors.
    ///
    /// # Errors
    /// [`TokensError`] naming the line (or key) that is wrong, never the
    /// token itself.
    pub fn parse(text: &str, origin: &str) -> Result<Self, TokensError> {
        let mut tokens = Tokens::default();
        if text.trim_start().starts_with('{') {
            // The parser's own message can quote what it read; say only
            // where and what kind of fault.
            let map: HashMap<String, String> =
                serde_json::from_str(text).map_err(|e| TokensError::Json {
                    origin: origin.to_string(),
                    message: format!(
                        "{} at line {} column {}",
                        json_fault(e.classify()),
                        e.line(),
                        e.column()
                    ),
                })?;
            for (token, tenant) in &map {
                tokens.insert(token, tenant, origin)?;
            }
        } else {
            for (index, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let mut words = line.split_whitespace();
                let (Some(token), Some(tenant), None) = (words.next(), words.next(), words.next())
                else {
                    return Err(TokensError::BadLine {
                        origin: origin.to_string(),
                        line: index + 1,
                    });
                };
                tokens.insert(token, tenant, &format!("{origin}:{}", index + 1))?;
            }
        }
        if tokens.by_token.is_empty() {
            return Err(TokensError::Empty {
                origin: origin.to_string(),
            });
        }
        Ok(tokens)
    }

    /// Adds `token` for `tenant`; `place` names where it came from.
    ///
    /// # Errors
    /// [`TokensError::Short`] for a token under 16 characters,
    /// [`TokensError::Duplicate`] for one already present,
    /// [`TokensError::BadTenant`] for a bad tenant name.
    pub fn insert(&mut self, token: &str, tenant: &str, place: &str) -> Result<(), TokensError> {
        let token_ok = token.len() >= MIN_TOKEN_LEN && token.bytes().all(|b| b.is_ascii_graphic());
        let tenant_ok = Tenant::new(tenant).is_ok();
        // Neither value is ever repeated in an error: with the columns
        // swapped, the one in the tenant's place is the secret.
        if !tenant_ok && Tenant::new(token).is_ok() && tenant.len() >= MIN_TOKEN_LEN {
            return Err(TokensError::Swapped {
                place: place.to_string(),
            });
        }
        if !token_ok {
            return Err(TokensError::Short {
                place: place.to_string(),
            });
        }
        let Ok(tenant) = Tenant::new(tenant) else {
            return Err(TokensError::BadTenantAt {
                place: place.to_string(),
            });
        };
        if self.by_token.insert(token.to_string(), tenant).is_some() {
            return Err(TokensError::Duplicate {
                place: place.to_string(),
            });
        }
        Ok(())
    }

    /// Adds every token of `other` (read from `origin`).
    ///
    /// # Errors
    /// [`TokensError::Duplicate`] when a token is in both.
    pub fn merge(&mut self, other: Tokens, origin: &str) -> Result<(), TokensError> {
        for (token, tenant) in other.by_token {
            if self.by_token.insert(token, tenant).is_some() {
                return Err(TokensError::Duplicate {
                    place: origin.to_string(),
                });
            }
        }
        Ok(())
    }

    /// Refuses a tokens file whose permission bits (`mode`, as the file
    /// system reports them) let anyone but its owner read or write it, as
    /// ssh refuses such a private key: the tokens are every tenant's keys.
    ///
    /// # Errors
    /// [`TokensError::Exposed`] naming the file, its mode and the fix.
    pub fn check_file_mode(path: &str, mode: u32) -> Result<(), TokensError> {
        if mode & 0o077 == 0 {
            return Ok(());
        }
        Err(TokensError::Exposed {
            path: path.to_string(),
            mode: mode & 0o7777,
        })
    }

    /// How many tokens are accepted.
    pub fn len(&self) -> usize {
        self.by_token.len()
    }

    /// True when no token is accepted (every request is refused).
    pub fn is_empty(&self) -> bool {
        self.by_token.is_empty()
    }

    /// The tenant of the request's `Authorization: Bearer` token; `None`
    /// when the header is missing, malformed or the token unknown.
    pub fn tenant_of(&self, headers: &HeaderMap) -> Option<Tenant> {
        let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
        let (scheme, token) = value.split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let token = token.trim().as_bytes();
        let mut found = None;
        for (known, tenant) in &self.by_token {
            if same_bytes(known.as_bytes(), token) {
                found = Some(tenant.clone());
            }
        }
        found
    }
}

/// What kind of fault a JSON parse met, in words (never what it read).
fn json_fault(category: serde_json::error::Category) -> &'static str {
    use serde_json::error::Category;
    match category {
        Category::Io => "a read error",
        Category::Syntax => "not JSON",
        Category::Data => "a value that is not a string",
        Category::Eof => "the text ends early",
    }
}

/// Shortest token accepted, so a typo'd one-word file is refused.
pub const MIN_TOKEN_LEN: usize = 16;

/// Byte equality whose time depends on the lengths only.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A tokens file or variable that cannot be used. Messages name the place,
/// never a token's value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokensError {
    /// The file could not be read.
    #[error("cannot read the tokens file {path}: {message}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        message: String,
    },
    /// A line is not two words.
    #[error("{origin} line {line}: expected `TOKEN TENANT` (two words)")]
    BadLine {
        /// The file.
        origin: String,
        /// 1-based line number.
        line: usize,
    },
    /// The JSON form does not parse as an object of strings.
    #[error("{origin}: expected a JSON object mapping each token to its tenant: {message}")]
    Json {
        /// The file.
        origin: String,
        /// The parser's complaint.
        message: String,
    },
    /// A token is too short or holds spaces or control characters.
    #[error(
        "{place}: a token must be at least {} printable characters without spaces",
        MIN_TOKEN_LEN
    )]
    Short {
        /// Where it is (file and line, or the variable).
        place: String,
    },
    /// The same token twice.
    #[error("{place}: this token is listed twice")]
    Duplicate {
        /// Where the second one is.
        place: String,
    },
    /// A tenant name that is not 1-64 of `A-Za-z0-9-_` (given directly,
    /// not in a tokens file: there the value is not repeated, see
    /// [`TokensError::BadTenantAt`]).
    #[error("tenant {tenant:?}: use 1 to 64 ASCII letters, digits, `-` or `_`")]
    BadTenant {
        /// The name given.
        tenant: String,
    },
    /// A tenant in a tokens file that is not 1-64 of `A-Za-z0-9-_`. The
    /// value is not repeated: it may be a token in the wrong column.
    #[error("{place}: the tenant must be 1 to 64 ASCII letters, digits, `-` or `_`")]
    BadTenantAt {
        /// Where it is (file and line, or the variable).
        place: String,
    },
    /// A line whose columns look swapped: a tenant name first, a token
    /// second. Neither value is repeated.
    #[error(
        "{place}: the columns look swapped; write the token first, then the tenant (`TOKEN TENANT`)"
    )]
    Swapped {
        /// Where it is (file and line, or the variable).
        place: String,
    },
    /// The tokens file can be read by others than its owner. Refused, as
    /// ssh refuses such a private key.
    #[error(
        "the tokens file {path} is open to others than its owner (mode {mode:o}); make it its owner's alone: chmod 600 {path}"
    )]
    Exposed {
        /// The file.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// Nothing to accept: every request would be refused.
    #[error("{origin}: no tokens; add a `TOKEN TENANT` line")]
    Empty {
        /// The file or variable.
        origin: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "aaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbb";

    fn bearer(token: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            AUTHORIZATION,
            format!("Bearer {token}").parse().expect("header"),
        );
        headers
    }

    #[test]
    fn lines_and_json_give_the_same_tokens() {
        let lines =
            Tokens::parse(&format!("# comment\n\n{A} team-a\n{B}  team_b\n"), "f").expect("lines");
        let json =
            Tokens::parse(&format!(r#"{{"{A}":"team-a","{B}":"team_b"}}"#), "f").expect("json");
        for tokens in [lines, json] {
            assert_eq!(tokens.len(), 2);
            assert_eq!(tokens.tenant_of(&bearer(A)).expect("a").as_str(), "team-a");
            assert_eq!(tokens.tenant_of(&bearer(B)).expect("b").as_str(), "team_b");
            assert_eq!(tokens.tenant_of(&bearer("cccccccccccccccccccc")), None);
            assert_eq!(tokens.tenant_of(&HeaderMap::new()), None);
        }
    }

    #[test]
    fn errors_name_the_line_and_never_the_token() {
        let error = Tokens::parse(&format!("{A} team-a\n{B}\n"), "tokens.txt").unwrap_err();
        assert_eq!(
            error.to_string(),
            "tokens.txt line 2: expected `TOKEN TENANT` (two words)"
        );
        let error = Tokens::parse("short team-a\n", "tokens.txt").unwrap_err();
        assert!(!error.to_string().contains("short"), "{error}");
        let error = Tokens::parse(&format!("{A} ../etc\n"), "tokens.txt").unwrap_err();
        assert_eq!(
            error.to_string(),
            "tokens.txt:1: the tenant must be 1 to 64 ASCII letters, digits, `-` or `_`"
        );
        let error = Tokens::parse(&format!("{A} x\n{A} y\n"), "t").unwrap_err();
        assert!(matches!(error, TokensError::Duplicate { .. }));
        assert!(matches!(
            Tokens::parse("# nothing\n", "t"),
            Err(TokensError::Empty { .. })
        ));
    }

    // Issue 28: with the columns swapped, the error quoted the token as a
    // bad tenant name.
    #[test]
    fn swapped_columns_are_named_without_the_token() {
        let secret = "s3cr3t+token/with=base64chars";
        for text in [
            format!("analytics-pipeline-prod {secret}\n"),
            format!("team-a {secret}\n"),
            format!(r#"{{"analytics-pipeline-prod": "{secret}"}}"#),
        ] {
            let error = Tokens::parse(&text, "tokens.txt").unwrap_err();
            let shown = format!("{error} {error:?}");
            assert!(!shown.contains(secret), "{shown}");
            assert!(matches!(error, TokensError::Swapped { .. }), "{shown}");
        }
        let error = Tokens::parse(&format!(r#"{{"{A}": 5, "x": "{B}"}}"#), "t.json").unwrap_err();
        assert!(!error.to_string().contains(B), "{error}");
    }

    // Issue 28: a tokens file anyone could read was loaded without a word.
    #[test]
    fn a_tokens_file_others_can_read_is_refused() {
        for open in [0o644, 0o666, 0o640, 0o604, 0o620] {
            let error =
                Tokens::check_file_mode("/etc/abridge/tokens", 0o100_000 | open).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!(
                    "the tokens file /etc/abridge/tokens is open to others than its owner (mode {open:o}); make it its owner's alone: chmod 600 /etc/abridge/tokens"
                )
            );
        }
        for private in [0o600, 0o400] {
            Tokens::check_file_mode("t", private).expect("its owner's alone");
        }
    }

    #[test]
    fn debug_lists_tenants_not_tokens() {
        let tokens = Tokens::single(A, "team-a").expect("tokens");
        let shown = format!("{tokens:?}");
        assert!(!shown.contains(A), "{shown}");
        assert!(shown.contains("team-a"), "{shown}");
    }

    #[test]
    fn other_schemes_are_refused() {
        let tokens = Tokens::single(A, "team-a").expect("tokens");
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, format!("Basic {A}").parse().expect("h"));
        assert_eq!(tokens.tenant_of(&headers), None);
    }
}
