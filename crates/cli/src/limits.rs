//! The settings a command compacts under: a settings file (`--settings`,
//! or `abridge.toml` beside the session), with the command line's flags
//! on top, resolved against the model's window in one place so `compact`
//! and `simulate` agree.

use std::path::Path;
use std::path::PathBuf;

use abridge::Limits;
use abridge::Settings;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct BudgetArgs {
    /// Methods to walk, in order (default: the settings' method order):
    /// prune, mask, shake, trim, digest, snapcompact, soft, handoff, remote.
    #[arg(long, value_delimiter = ',')]
    pub(crate) method: Vec<String>,
    /// The model to price and compact for (default: the session's last).
    #[arg(long)]
    pub(crate) model: Option<String>,
    /// The context window in tokens (default: the model's); at least
    /// 2048.
    #[arg(long)]
    pub(crate) window: Option<u64>,
    /// Newest tokens kept verbatim (default 20000, at most half the
    /// threshold).
    #[arg(long)]
    pub(crate) keep: Option<u64>,
    /// A settings file (TOML, or JSON by extension); default
    /// `abridge.toml` beside the session when there is one.
    #[arg(long, value_name = "FILE")]
    pub(crate) settings: Option<PathBuf>,
    /// Send and write history as logged, secrets included (the settings'
    /// `redact = false`); by default summarizer requests, checkpoints,
    /// frames and handoff documents carry `[redacted: KIND]` instead.
    #[arg(long)]
    pub(crate) no_redact: bool,
}

impl BudgetArgs {
    /// The settings with the flags applied, and the limits they give for
    /// a model whose window is `model_window`.
    pub(crate) fn resolve(
        &self,
        session: &Path,
        model_window: u64,
    ) -> anyhow::Result<(Settings, Limits)> {
        // The file's text is kept so a key that does not fit the window
        // is reported at its line.
        let file = match &self.settings {
            Some(path) => Some(path.clone()),
            None => Some(Settings::beside_path(session)).filter(|p| p.is_file()),
        };
        let (mut settings, source) = match &file {
            Some(path) => {
                let (settings, text) =
                    Settings::load_with_text_using(path, crate::registry::registry())?;
                (settings, Some((text, path.display().to_string())))
            }
            None => (Settings::default(), None),
        };
        if !self.method.is_empty() {
            if let Err(unknown) = crate::registry::registry().check_names(&self.method) {
                anyhow::bail!(
                    "unknown method {:?}; known methods: {}",
                    unknown.name,
                    unknown.known
                );
            }
            settings.method_order = self.method.clone();
        }
        if let Some(keep) = self.keep {
            settings.keep_recent_tokens = Some(keep);
        }
        if self.no_redact {
            settings.redact = false;
        }
        let window = self.window.unwrap_or(model_window);
        let limits = match &source {
            Some((text, origin)) => settings.limits_in(window, text, origin),
            None => settings.limits(window),
        }
        .map_err(|error| {
            let refused = self.window.and_then(|_| window_refused(&error));
            match (&error, self.keep, refused) {
                (_, _, Some(refused)) => refused,
                (
                    abridge::SettingsError::Invalid {
                        key: "keep_recent_tokens",
                        message,
                        ..
                    },
                    Some(_),
                    None,
                ) => anyhow::anyhow!("--keep {message}"),
                _ => anyhow::anyhow!("{error}")
                    .context(format!("settings for a {window}-token window")),
            }
        })?;
        Ok((settings, limits))
    }
}

/// `--window` for the commands that only show figures against a window
/// (`stats`, `report`).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct WindowArg {
    /// The context window in tokens (default: the model's); at least
    /// 2048.
    #[arg(long)]
    pub(crate) window: Option<u64>,
}

impl WindowArg {
    /// The limits a read-only command prints for `session`: the settings
    /// beside it (or the defaults) against `--window`, else the model's
    /// `model_window`, resolved and checked as [`BudgetArgs::resolve`]
    /// resolves them for `compact`.
    pub(crate) fn limits(&self, session: &Path, model_window: u64) -> anyhow::Result<Limits> {
        let args = BudgetArgs {
            method: Vec::new(),
            model: None,
            window: self.window,
            keep: None,
            settings: None,
            no_redact: false,
        };
        Ok(args.resolve(session, model_window)?.1)
    }
}

/// A window the settings refuse, said of the `--window` flag.
fn window_refused(error: &abridge::SettingsError) -> Option<anyhow::Error> {
    match error {
        abridge::SettingsError::Invalid {
            key: "window",
            message,
            ..
        } => Some(anyhow::anyhow!("--window {message}")),
        _ => None,
    }
}
