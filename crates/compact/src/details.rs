//! What a method records about its compaction, as typed, versioned
//! sections.
//!
//! A checkpoint's `compaction/summary` event carries method-specific data:
//! the digest's running state (so the next digest continues it), a
//! provider's native compaction items (replayed to that provider), the
//! frames of a snapcompact archive, the attempts a remote method made.
//! Each of these is a [`DetailSection`]: a serde type that names its key
//! and its format version. The seam stores sections without knowing them
//! (backends depend on the seam, never the other way), and reads them back
//! typed, so a misspelt key or a changed shape is a compile error or a
//! typed [`DetailsError`], never a silent `null`.
//!
//! # Stored shape
//!
//! `{"<key>": {"v": <version>, ...the section's fields}}`, one entry per
//! section. A section whose serde form is not an object (a list, a number)
//! is stored as `{"v": <version>, "value": ...}`. Logs written before
//! sections were versioned hold the bare section under its key; reading
//! such an entry takes it as the section's first format.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Map;
use serde_json::Value;

/// The version field inside every stored section.
const VERSION_FIELD: &str = "v";
/// Where a section whose serde form is not an object is kept.
const VALUE_FIELD: &str = "value";

/// One method's typed record in a compaction's details.
///
/// # Contract
///
/// - [`KEY`](Self::KEY) is unique across methods and never changes: it is
///   how logs written years ago find the section again. Use the method's
///   name, or the method's name and a suffix.
/// - [`VERSION`](Self::VERSION) changes when the serde shape changes in a
///   way old readers cannot read. A reader refuses a stored version that
///   differs from its own (see [`DetailsError::Version`]); it never guesses.
/// - The serde form must not use the field names `v` or `value` at its top
///   level: the store adds them.
pub trait DetailSection: Serialize + DeserializeOwned {
    /// The key the section is stored under.
    const KEY: &'static str;
    /// The section's format version, starting at 1.
    const VERSION: u32;
}

/// Why a section could not be written or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DetailsError {
    /// The section did not serialize (a map with non-string keys, a
    /// failing `Serialize` impl).
    #[error("details section {key}: cannot serialize: {message}")]
    Serialize {
        /// The section's key.
        key: &'static str,
        /// serde's message.
        message: String,
    },
    /// The stored section does not have the shape this reader expects.
    #[error("details section {key}: stored data does not match: {message}")]
    Deserialize {
        /// The section's key.
        key: &'static str,
        /// serde's message, naming the field.
        message: String,
    },
    /// The stored section was written in another format version.
    #[error(
        "details section {key}: stored as version {found}, this reader knows version {expected}"
    )]
    Version {
        /// The section's key.
        key: &'static str,
        /// The version found in the log.
        found: u64,
        /// The version the reader's type declares.
        expected: u32,
    },
}

/// The method-specific record of one compaction: named, versioned
/// sections. Empty when the method had nothing to say.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Details {
    sections: Map<String, Value>,
}

impl<'de> serde::Deserialize<'de> for Details {
    /// An object of sections; `null` (as very old logs may hold) reads as
    /// no sections.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let sections =
            <Option<Map<String, Value>> as serde::Deserialize>::deserialize(deserializer)?;
        Ok(Details {
            sections: sections.unwrap_or_default(),
        })
    }
}

impl Details {
    /// No sections.
    pub fn new() -> Self {
        Details::default()
    }

    /// These details with `section` added (or replaced).
    ///
    /// # Errors
    /// [`DetailsError::Serialize`] when the section does not serialize.
    pub fn with<T: DetailSection>(mut self, section: &T) -> Result<Self, DetailsError> {
        self.insert(section)?;
        Ok(self)
    }

    /// Adds `section`, replacing any earlier section under its key.
    ///
    /// # Errors
    /// [`DetailsError::Serialize`] when the section does not serialize;
    /// nothing is changed then.
    pub fn insert<T: DetailSection>(&mut self, section: &T) -> Result<(), DetailsError> {
        let value = serde_json::to_value(section).map_err(|error| DetailsError::Serialize {
            key: T::KEY,
            message: error.to_string(),
        })?;
        let mut stored = match value {
            Value::Object(fields) => fields,
            other => Map::from_iter([(VALUE_FIELD.to_string(), other)]),
        };
        stored.insert(VERSION_FIELD.to_string(), Value::from(T::VERSION));
        self.sections
            .insert(T::KEY.to_string(), Value::Object(stored));
        Ok(())
    }

    /// The section of type `T`, or `None` when these details hold none.
    ///
    /// # Errors
    /// [`DetailsError::Version`] when it was stored in another version;
    /// [`DetailsError::Deserialize`] when its shape does not match.
    pub fn get<T: DetailSection>(&self) -> Result<Option<T>, DetailsError> {
        let Some(stored) = self.sections.get(T::KEY) else {
            return Ok(None);
        };
        let unversioned = match stored {
            Value::Object(fields) => match fields.get(VERSION_FIELD) {
                Some(version) => {
                    let found = version.as_u64().unwrap_or(u64::MAX);
                    if found != u64::from(T::VERSION) {
                        return Err(DetailsError::Version {
                            key: T::KEY,
                            found,
                            expected: T::VERSION,
                        });
                    }
                    let mut fields = fields.clone();
                    fields.remove(VERSION_FIELD);
                    match fields.remove(VALUE_FIELD) {
                        Some(value) if fields.is_empty() => value,
                        Some(value) => {
                            fields.insert(VALUE_FIELD.to_string(), value);
                            Value::Object(fields)
                        }
                        None => Value::Object(fields),
                    }
                }
                // Written before sections carried a version.
                None => stored.clone(),
            },
            legacy => legacy.clone(),
        };
        serde_json::from_value(unversioned)
            .map(Some)
            .map_err(|error| DetailsError::Deserialize {
                key: T::KEY,
                message: error.to_string(),
            })
    }

    /// True when a section is stored under `T`'s key, whatever its shape.
    pub fn contains<T: DetailSection>(&self) -> bool {
        self.sections.contains_key(T::KEY)
    }

    /// Adds every section of `other`, replacing sections under the same
    /// keys: a method that fell back to another keeps the other's record
    /// beside its own.
    pub fn merge(&mut self, other: Details) {
        self.sections.extend(other.sections);
    }

    /// True when there are no sections.
    pub fn is_empty(&self) -> bool {
        self.sections.is_empty()
    }

    /// The stored form, for reports that print a compaction's record.
    pub fn as_json(&self) -> &Map<String, Value> {
        &self.sections
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Windows {
        windows: u32,
    }
    impl DetailSection for Windows {
        const KEY: &'static str = "windows";
        const VERSION: u32 = 2;
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Items(Vec<String>);
    impl DetailSection for Items {
        const KEY: &'static str = "items";
        const VERSION: u32 = 1;
    }

    #[test]
    fn sections_round_trip_through_the_log_form() {
        let details = Details::new()
            .with(&Windows { windows: 3 })
            .unwrap()
            .with(&Items(vec!["a".into()]))
            .unwrap();
        let stored = serde_json::to_value(&details).unwrap();
        assert_eq!(
            stored,
            json!({"windows": {"v": 2, "windows": 3}, "items": {"v": 1, "value": ["a"]}})
        );
        let back: Details = serde_json::from_value(stored).unwrap();
        assert_eq!(back.get::<Windows>().unwrap(), Some(Windows { windows: 3 }));
        assert_eq!(back.get::<Items>().unwrap(), Some(Items(vec!["a".into()])));
    }

    #[test]
    fn a_missing_section_is_none_and_a_wrong_one_is_an_error() {
        assert_eq!(Details::new().get::<Windows>().unwrap(), None);
        let wrong: Details =
            serde_json::from_value(json!({"windows": {"v": 2, "windows": "three"}})).unwrap();
        assert!(matches!(
            wrong.get::<Windows>(),
            Err(DetailsError::Deserialize { key: "windows", .. })
        ));
        let newer: Details =
            serde_json::from_value(json!({"windows": {"v": 3, "windows": 1}})).unwrap();
        assert_eq!(
            newer.get::<Windows>().unwrap_err().to_string(),
            "details section windows: stored as version 3, this reader knows version 2"
        );
    }

    #[test]
    fn unversioned_sections_from_older_logs_still_read() {
        let old: Details =
            serde_json::from_value(json!({"windows": {"windows": 4}, "items": ["x"]})).unwrap();
        assert_eq!(old.get::<Windows>().unwrap(), Some(Windows { windows: 4 }));
        assert_eq!(old.get::<Items>().unwrap(), Some(Items(vec!["x".into()])));
    }

    #[test]
    fn a_section_that_cannot_serialize_is_an_error_and_changes_nothing() {
        #[derive(Debug, Serialize, Deserialize)]
        struct Keyed(std::collections::BTreeMap<(u8, u8), u8>);
        impl DetailSection for Keyed {
            const KEY: &'static str = "keyed";
            const VERSION: u32 = 1;
        }
        let mut details = Details::new();
        let error = details
            .insert(&Keyed([((1, 2), 3)].into_iter().collect()))
            .unwrap_err();
        assert!(matches!(
            error,
            DetailsError::Serialize { key: "keyed", .. }
        ));
        assert!(details.is_empty());
    }
}
