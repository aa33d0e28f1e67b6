//! One-document formats read without building the document: the array
//! under one top-level key is handed over entry by entry, each entry's
//! JSON tree freed before the next is parsed, and every other top-level
//! value is skipped (arrays counted) without being kept.
//!
//! SWE-agent trajectories are mostly their `trajectory` steps, which
//! repeat the `history` the importer converts; skipping them unbuilt is
//! what keeps a trajectory's import near the size of its history.

use std::fmt;

use serde::de::DeserializeSeed;
use serde::de::Error as _;
use serde::de::IgnoredAny;
use serde::de::MapAccess;
use serde::de::SeqAccess;
use serde::de::Visitor;
use serde_json::Value;

use crate::ImportError;
use crate::input::Input;
use crate::json::At;

/// What a walk saw besides the streamed entries.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    /// Every other top-level key in file order, with its element count
    /// when its value is an array.
    pub(crate) others: Vec<(String, Option<usize>)>,
}

/// Reads the document of `input` as an object and calls `entry` with the
/// index and value of each element of the array under `key`, in order.
/// `what` names the document in an error when it is not an object (for
/// example "a trajectory object").
///
/// # Errors
/// A JSON error naming the line and column (a document cut short is
/// [`ImportError::Truncated`]); a field error when the document is not an
/// object or `key` is missing or not an array; the first error `entry`
/// returns.
pub(crate) fn walk(
    file: &str,
    input: &Input<'_>,
    what: &str,
    key: &str,
    entry: &mut dyn FnMut(usize, Value) -> Result<(), ImportError>,
) -> Result<Walk, ImportError> {
    let mut failure = None;
    let root = Root {
        key,
        entry,
        failure: &mut failure,
    };
    let outcome = parse(file, input, root)?;
    let at = At {
        file,
        line: None,
        path: "",
    };
    match (outcome, failure) {
        (_, Some(failure)) => Err(failure),
        (Err(e), None) => Err(json_error(file, input, &e)),
        (Ok(Outcome::NotAnObject(kind)), None) => {
            Err(at.error("", format!("expected {what}, found {kind}")))
        }
        (Ok(Outcome::Object { streamed, walk }), None) => match streamed {
            None => Err(at.error(key, "missing")),
            Some(Some(kind)) => Err(at.error(key, format!("expected an array, found {kind}"))),
            Some(None) => Ok(walk),
        },
    }
}

/// Reads the document of `input` as an array and calls `entry` with the
/// index and value of each element, in order, each element's JSON tree
/// freed before the next is parsed. `what` names the document in an error
/// when it is not an array (for example "an array of events").
///
/// # Errors
/// As [`walk`]: a JSON error naming the line and column, a field error
/// when the document is not an array, the first error `entry` returns.
pub(crate) fn each_element(
    file: &str,
    input: &Input<'_>,
    what: &str,
    entry: &mut dyn FnMut(usize, Value) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let mut failure = None;
    let mut index = 0;
    let seed = Entries {
        entry,
        failure: &mut failure,
        index: &mut index,
    };
    let outcome = parse(file, input, seed)?;
    match (outcome, failure) {
        (_, Some(failure)) => Err(failure),
        (Err(e), None) => Err(json_error(file, input, &e)),
        (Ok(Some(kind)), None) => Err(At {
            file,
            line: None,
            path: "",
        }
        .error("", format!("expected {what}, found {kind}"))),
        (Ok(None), None) => Ok(()),
    }
}

/// Runs `seed` over the whole document of `input`, which must hold nothing
/// after it.
fn parse<T>(
    file: &str,
    input: &Input<'_>,
    seed: impl for<'de> DeserializeSeed<'de, Value = T>,
) -> Result<Result<T, serde_json::Error>, ImportError> {
    Ok(match input {
        Input::Bytes(bytes) => {
            let mut de = serde_json::Deserializer::from_slice(bytes);
            seed.deserialize(&mut de).and_then(|o| de.end().map(|()| o))
        }
        Input::File(_) => {
            let mut de = serde_json::Deserializer::from_reader(input.reader(file)?);
            seed.deserialize(&mut de).and_then(|o| de.end().map(|()| o))
        }
    })
}

/// A serde error of the document as an import error: a document that
/// ends early is a truncated file; anything else names line and column.
fn json_error(file: &str, input: &Input<'_>, e: &serde_json::Error) -> ImportError {
    if e.classify() == serde_json::error::Category::Eof {
        ImportError::Truncated {
            file: file.to_string(),
            line: e.line() as u64,
            len: input.len(),
        }
    } else {
        ImportError::Json {
            file: file.to_string(),
            line: e.line() as u64,
            column: e.column() as u64,
            reason: e.to_string(),
        }
    }
}

/// What the root visitor found.
enum Outcome {
    /// The root is not an object; its kind.
    NotAnObject(&'static str),
    /// An object. `streamed`: `None` when the key is missing,
    /// `Some(Some(kind))` when its value is not an array, `Some(None)` when
    /// it was streamed.
    Object {
        streamed: Option<Option<&'static str>>,
        walk: Walk,
    },
}

/// The visitor of the document's root.
struct Root<'a, 'f> {
    key: &'a str,
    entry: &'a mut dyn FnMut(usize, Value) -> Result<(), ImportError>,
    failure: &'f mut Option<ImportError>,
}

/// Answers every kind of JSON value with its name (after consuming it),
/// except those the visitor handles itself.
macro_rules! other_kinds {
    ($answer:expr) => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($answer("a boolean"))
        }
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($answer("a number"))
        }
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($answer("a number"))
        }
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($answer("a number"))
        }
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($answer("a string"))
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok($answer("null"))
        }
    };
}

impl<'de> DeserializeSeed<'de> for Root<'_, '_> {
    type Value = Outcome;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Root<'_, '_> {
    type Value = Outcome;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON document")
    }

    other_kinds!(Outcome::NotAnObject);

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Outcome, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Outcome::NotAnObject("an array"))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Outcome, A::Error> {
        let mut walk = Walk::default();
        let mut streamed = None;
        let mut index = 0;
        while let Some(key) = map.next_key::<String>()? {
            if key == self.key {
                let seed = Entries {
                    entry: &mut *self.entry,
                    failure: &mut *self.failure,
                    index: &mut index,
                };
                streamed = Some(map.next_value_seed(seed)?);
            } else {
                let len = map.next_value_seed(Length)?;
                walk.others.push((key, len));
            }
        }
        Ok(Outcome::Object { streamed, walk })
    }
}

/// The streamed array: each element parsed alone and handed to `entry`.
/// Its value is `None` when it was an array, else the kind it was.
struct Entries<'a> {
    entry: &'a mut dyn FnMut(usize, Value) -> Result<(), ImportError>,
    failure: &'a mut Option<ImportError>,
    index: &'a mut usize,
}

impl<'de> DeserializeSeed<'de> for Entries<'_> {
    type Value = Option<&'static str>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Entries<'_> {
    type Value = Option<&'static str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }

    other_kinds!(Some);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Some("an object"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while let Some(value) = seq.next_element::<Value>()? {
            if let Err(e) = (self.entry)(*self.index, value) {
                *self.failure = Some(e);
                // Stops the parse; the error kept above is the one reported.
                return Err(A::Error::custom("entry refused"));
            }
            *self.index += 1;
        }
        Ok(None)
    }
}

/// Any other top-level value, skipped: its element count when an array.
struct Length;

impl<'de> DeserializeSeed<'de> for Length {
    type Value = Option<usize>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Length {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    other_kinds!(|_| None);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut len = 0;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            len += 1;
        }
        Ok(Some(len))
    }
}
