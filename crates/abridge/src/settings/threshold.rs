//! How a threshold is written in settings: an absolute token count, or a
//! share of the window such as `"85%"`.

use serde::Deserialize;
use serde::Serialize;

/// When to compact: an absolute token count, or a share of the window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged, try_from = "ThresholdRepr")]
pub enum Threshold {
    /// Compact when the context passes this many tokens.
    Tokens(u64),
    /// Compact at this share of the window, written `"85%"`.
    Percent(Percent),
}

/// How a threshold is written: a number, or a string like `"85%"`.
#[derive(Deserialize)]
#[serde(untagged)]
enum ThresholdRepr {
    Tokens(u64),
    Text(String),
}

impl TryFrom<ThresholdRepr> for Threshold {
    type Error = String;
    fn try_from(repr: ThresholdRepr) -> Result<Self, Self::Error> {
        match repr {
            ThresholdRepr::Tokens(tokens) => Ok(Threshold::Tokens(tokens)),
            ThresholdRepr::Text(text) => Percent::try_from(text).map(Threshold::Percent),
        }
    }
}

/// A percentage written as a string such as `"85%"` (1 to 100).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Percent(pub f64);

impl TryFrom<String> for Percent {
    type Error = String;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        let number = text
            .trim()
            .strip_suffix('%')
            .ok_or_else(|| format!("{text:?} is not a percentage; write it like \"85%\""))?;
        let value: f64 = number
            .trim()
            .parse()
            .map_err(|_| format!("{text:?} is not a percentage; write it like \"85%\""))?;
        if !(value > 0.0 && value <= 100.0) {
            return Err(format!("{text:?} must be above 0% and at most 100%"));
        }
        Ok(Percent(value))
    }
}

impl From<Percent> for String {
    fn from(percent: Percent) -> Self {
        format!("{}%", percent.0)
    }
}
