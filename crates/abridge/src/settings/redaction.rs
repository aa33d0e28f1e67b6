//! The redaction settings (`redact`, `redact_patterns`,
//! `recall_originals`) turned into the one [`Redactor`] a harness, a
//! report and recall share.

use std::sync::Arc;

use abridge_compact::host::Redactor;

use super::Settings;
use super::SettingsError;
use super::Unlocated;

impl Settings {
    /// The redactor these settings ask for: `None` when `redact` is off.
    ///
    /// # Errors
    /// [`SettingsError::Invalid`] naming `redact_patterns` and the pattern
    /// that cannot be used.
    pub fn redactor(&self) -> Result<Option<Arc<Redactor>>, SettingsError> {
        self.redactor_unlocated()
            .map_err(|e| e.into_error("settings", None))
    }

    /// The redactor `recall` answers through: `None` when `redact` is off
    /// or `recall_originals` allows the logged text.
    ///
    /// # Errors
    /// As [`redactor`](Self::redactor).
    pub fn recall_redactor(&self) -> Result<Option<Arc<Redactor>>, SettingsError> {
        if self.recall_originals {
            return Ok(None);
        }
        self.redactor()
    }

    /// [`redactor`](Self::redactor) before the error is placed in a file.
    /// The patterns are checked even with `redact` off, so turning it on
    /// later cannot surface a bad pattern.
    pub(super) fn redactor_unlocated(&self) -> Result<Option<Arc<Redactor>>, Unlocated> {
        let redactor = Redactor::new(&self.redact_patterns).map_err(|error| Unlocated {
            key: "redact_patterns",
            message: error.to_string(),
        })?;
        Ok(self.redact.then(|| Arc::new(redactor)))
    }
}
