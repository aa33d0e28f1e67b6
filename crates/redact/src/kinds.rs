//! The kinds of secret the redactor knows, each with its placeholder and
//! the shape it is recognised by.
//!
//! The shapes are written from the public descriptions of each format
//! (prefixes, alphabets, lengths), tight enough that ordinary prose and
//! identifiers do not match: a bare `sk-` must be followed by a long
//! unbroken run, a GitHub token by its fixed prefix, and so on.

/// What every placeholder opens with; the kind and `]` follow.
pub const REDACTION_OPENING: &str = "[redacted: ";

/// A kind of secret, named in the placeholder that replaces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SecretKind {
    /// An OpenAI API key: `sk-proj-…`, `sk-svcacct-…`, `sk-admin-…`, or a
    /// legacy `sk-` followed by a long alphanumeric run.
    OpenAiKey,
    /// An Anthropic API key: `sk-ant-…`.
    AnthropicKey,
    /// An AWS access key id: `AKIA` or `ASIA` and 16 upper-case letters
    /// or digits.
    AwsAccessKeyId,
    /// The value of an `aws_secret_access_key = …` setting (any case, `=`
    /// or `:`), 40 base64 characters; the setting's name is kept.
    AwsSecretKey,
    /// A GitHub token: `ghp_`, `gho_`, `ghs_`, `ghu_`, `ghr_` or
    /// `github_pat_` and a long run.
    GithubToken,
    /// A Slack token: `xoxa-`, `xoxb-`, `xoxp-` or `xoxr-` and a run.
    SlackToken,
    /// A Slack incoming-webhook address (`https://hooks.slack.com/…`).
    SlackWebhook,
    /// A Google API key: `AIza` and 35 characters.
    GoogleApiKey,
    /// A JSON Web Token: three base64url parts joined by dots, the first
    /// two starting `eyJ` (an encoded `{"`).
    Jwt,
    /// A PEM private key of any type (RSA, EC, DSA, OPENSSH, encrypted,
    /// PKCS#8), from its `BEGIN` line to its `END` line; without an `END`
    /// line, the `BEGIN` line and the key-shaped lines after it.
    PrivateKey,
    /// The password in an address such as `scheme://user:PASSWORD@host`;
    /// the scheme, user and host are kept.
    UrlPassword,
    /// A match of a pattern from the settings (`redact_patterns`).
    Custom,
}

impl SecretKind {
    /// Every kind, in the order the patterns are tried at one position.
    pub const ALL: &'static [SecretKind] = &[
        SecretKind::PrivateKey,
        SecretKind::AnthropicKey,
        SecretKind::OpenAiKey,
        SecretKind::AwsAccessKeyId,
        SecretKind::AwsSecretKey,
        SecretKind::GithubToken,
        SecretKind::SlackToken,
        SecretKind::SlackWebhook,
        SecretKind::GoogleApiKey,
        SecretKind::Jwt,
        SecretKind::UrlPassword,
        SecretKind::Custom,
    ];

    /// The kind's name, as it appears in its placeholder.
    pub const fn name(self) -> &'static str {
        match self {
            SecretKind::OpenAiKey => "openai-key",
            SecretKind::AnthropicKey => "anthropic-key",
            SecretKind::AwsAccessKeyId => "aws-access-key-id",
            SecretKind::AwsSecretKey => "aws-secret-key",
            SecretKind::GithubToken => "github-token",
            SecretKind::SlackToken => "slack-token",
            SecretKind::SlackWebhook => "slack-webhook",
            SecretKind::GoogleApiKey => "google-api-key",
            SecretKind::Jwt => "jwt",
            SecretKind::PrivateKey => "private-key",
            SecretKind::UrlPassword => "url-password",
            SecretKind::Custom => "custom",
        }
    }

    /// The exact text that replaces a secret of this kind, for example
    /// `[redacted: openai-key]`.
    pub const fn placeholder(self) -> &'static str {
        match self {
            SecretKind::OpenAiKey => "[redacted: openai-key]",
            SecretKind::AnthropicKey => "[redacted: anthropic-key]",
            SecretKind::AwsAccessKeyId => "[redacted: aws-access-key-id]",
            SecretKind::AwsSecretKey => "[redacted: aws-secret-key]",
            SecretKind::GithubToken => "[redacted: github-token]",
            SecretKind::SlackToken => "[redacted: slack-token]",
            SecretKind::SlackWebhook => "[redacted: slack-webhook]",
            SecretKind::GoogleApiKey => "[redacted: google-api-key]",
            SecretKind::Jwt => "[redacted: jwt]",
            SecretKind::PrivateKey => "[redacted: private-key]",
            SecretKind::UrlPassword => "[redacted: url-password]",
            SecretKind::Custom => "[redacted: custom]",
        }
    }

    /// The regular expression for the kind, when it has one (private keys
    /// are found by a scanner, user patterns come from settings). When the
    /// pattern has a capture group, only what the first one matched is
    /// replaced (every other group is non-capturing).
    ///
    /// Patterns may open with an ASCII word boundary (`(?-u:\b)`, which
    /// keeps the lazy DFA usable on any input) but never end with one or
    /// with any other look-ahead: what follows a secret may itself be
    /// redacted, and a pattern that depended on it would match on a second
    /// pass what it refused on the first.
    pub(crate) const fn pattern(self) -> Option<&'static str> {
        Some(match self {
            SecretKind::AnthropicKey => r"(?-u:\b)sk-ant-[A-Za-z0-9_-]{20,}",
            SecretKind::OpenAiKey => {
                r"(?-u:\b)sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{32,})"
            }
            SecretKind::AwsAccessKeyId => r"(?-u:\b)(?:AKIA|ASIA)[0-9A-Z]{16}",
            SecretKind::AwsSecretKey => {
                r#"(?i:aws_secret_access_key)["']?[ \t]*[=:][ \t]*["']?([A-Za-z0-9/+=]{40})"#
            }
            SecretKind::GithubToken => {
                r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"
            }
            SecretKind::SlackToken => r"(?-u:\b)xox[abpr]-[A-Za-z0-9-]{10,}",
            SecretKind::SlackWebhook => {
                r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+"
            }
            SecretKind::GoogleApiKey => r"(?-u:\b)AIza[0-9A-Za-z_-]{35}",
            SecretKind::Jwt => {
                r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
            }
            SecretKind::UrlPassword => {
                r"[A-Za-z][A-Za-z0-9+.-]*://[^\s:@/?#\[\]]+:([^\s/?#\[\]]+)@"
            }
            SecretKind::PrivateKey | SecretKind::Custom => return None,
        })
    }
}
