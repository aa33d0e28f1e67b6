//! Reading settings from text and files, with `method_order` checked
//! against a method registry: the built-in one, or a host's that knows
//! its own methods too.

use std::path::Path;

use super::Settings;
use super::SettingsError;
use super::Unlocated;
use crate::registry::MethodRegistry;
use crate::registry::builtin;

impl Settings {
    /// Parses TOML text. `origin` names it in errors (a path, usually).
    /// Method names are checked against the built-in methods.
    ///
    /// # Errors
    /// [`SettingsError::Parse`] with the line and the key.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self, SettingsError> {
        Self::from_toml_using(text, origin, builtin())
    }

    /// [`from_toml`](Self::from_toml), accepting the methods `registry`
    /// knows in `method_order`.
    ///
    /// # Errors
    /// As [`from_toml`](Self::from_toml).
    pub fn from_toml_using(
        text: &str,
        origin: &str,
        registry: &MethodRegistry,
    ) -> Result<Self, SettingsError> {
        let settings: Settings = toml::from_str(text).map_err(|error| {
            let line = error
                .span()
                .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
            SettingsError::Parse {
                origin: origin.to_string(),
                line,
                message: error.message().trim().to_string(),
            }
        })?;
        settings
            .validate_with(registry)
            .map_err(|e| e.locate(text, origin))?;
        Ok(settings)
    }

    /// Parses JSON text. `origin` names it in errors. Method names are
    /// checked against the built-in methods.
    ///
    /// # Errors
    /// [`SettingsError::Parse`] with the line and the key.
    pub fn from_json(text: &str, origin: &str) -> Result<Self, SettingsError> {
        Self::from_json_using(text, origin, builtin())
    }

    /// [`from_json`](Self::from_json), accepting the methods `registry`
    /// knows in `method_order`.
    ///
    /// # Errors
    /// As [`from_json`](Self::from_json).
    pub fn from_json_using(
        text: &str,
        origin: &str,
        registry: &MethodRegistry,
    ) -> Result<Self, SettingsError> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let settings: Settings =
            serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
                let path = error.path().to_string();
                let inner = error.into_inner();
                SettingsError::Parse {
                    origin: origin.to_string(),
                    line: Some(inner.line()),
                    message: if path == "." {
                        inner.to_string()
                    } else {
                        format!("{path}: {inner}")
                    },
                }
            })?;
        settings
            .validate_with(registry)
            .map_err(|e| e.locate(text, origin))?;
        Ok(settings)
    }

    /// Loads a file: `.json` as JSON, anything else as TOML.
    ///
    /// # Errors
    /// [`SettingsError::Read`], or as [`from_toml`](Self::from_toml).
    pub fn load(path: &Path) -> Result<Self, SettingsError> {
        Self::load_with_text(path).map(|(settings, _)| settings)
    }

    /// [`load`](Self::load), accepting the methods `registry` knows in
    /// `method_order`.
    ///
    /// # Errors
    /// As [`load`](Self::load).
    pub fn load_using(path: &Path, registry: &MethodRegistry) -> Result<Self, SettingsError> {
        Self::load_with_text_using(path, registry).map(|(settings, _)| settings)
    }

    /// Loads a file and keeps its text, so a later check against a window
    /// ([`limits_in`](Self::limits_in)) can name the line of a bad key.
    ///
    /// # Errors
    /// As [`load`](Self::load).
    pub fn load_with_text(path: &Path) -> Result<(Self, String), SettingsError> {
        Self::load_with_text_using(path, builtin())
    }

    /// [`load_with_text`](Self::load_with_text), accepting the methods
    /// `registry` knows in `method_order`.
    ///
    /// # Errors
    /// As [`load`](Self::load).
    pub fn load_with_text_using(
        path: &Path,
        registry: &MethodRegistry,
    ) -> Result<(Self, String), SettingsError> {
        let text = std::fs::read_to_string(path).map_err(|error| SettingsError::Read {
            path: path.to_path_buf(),
            reason: error.to_string(),
        })?;
        let origin = path.display().to_string();
        let settings = if path.extension().is_some_and(|e| e == "json") {
            Self::from_json_using(&text, &origin, registry)
        } else {
            Self::from_toml_using(&text, &origin, registry)
        }?;
        Ok((settings, text))
    }

    /// `abridge.toml` in the session file's directory, when there is one.
    ///
    /// # Errors
    /// As [`load`](Self::load), for a file that exists but cannot work.
    pub fn beside(session_path: &Path) -> Result<Option<Self>, SettingsError> {
        Self::beside_using(session_path, builtin())
    }

    /// [`beside`](Self::beside), accepting the methods `registry` knows in
    /// `method_order`.
    ///
    /// # Errors
    /// As [`load`](Self::load).
    pub fn beside_using(
        session_path: &Path,
        registry: &MethodRegistry,
    ) -> Result<Option<Self>, SettingsError> {
        let candidate = Self::beside_path(session_path);
        if candidate.is_file() {
            Self::load_using(&candidate, registry).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Every name of `method_order` is a registered method, then the
    /// checks that need no window.
    fn validate_with(&self, registry: &MethodRegistry) -> Result<(), Unlocated> {
        registry
            .check_names(&self.method_order)
            .map_err(|unknown| Unlocated {
                key: "method_order",
                message: unknown.to_string(),
            })?;
        self.validate_fields()
    }
}
