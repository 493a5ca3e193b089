//! Counts a config may leave to the machine (`#[serde(with = "cfzero_settings::auto")]` on a
//! `usize`): written `"auto"`, held as 0 until the program that runs them sizes them to the
//! machine it runs on, and written back as `"auto"`, so that a run's frozen config sizes itself
//! anew on every machine that reads it.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserializer, Serializer};

/// The word for a count left to the machine.
pub const AUTO: &str = "auto";

/// Writes a count: 0 (left to the machine) as `"auto"`, else the number.
pub fn serialize<S: Serializer>(count: &usize, s: S) -> Result<S::Ok, S::Error> {
    match count {
        0 => s.serialize_str(AUTO),
        n => s.serialize_u64(*n as u64),
    }
}

/// Reads `"auto"` (or 0) as 0 and a positive whole number as itself.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    d.deserialize_any(CountVisitor)
}

struct CountVisitor;

impl Visitor<'_> for CountVisitor {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a whole number or \"{AUTO}\"")
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<usize, E> {
        usize::try_from(n).map_err(|_| E::custom(format!("{n} is too large")))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<usize, E> {
        u64::try_from(n)
            .map_err(|_| E::custom(format!("expected a whole number or \"{AUTO}\", got {n}")))
            .and_then(|n| self.visit_u64(n))
    }

    fn visit_str<E: de::Error>(self, word: &str) -> Result<usize, E> {
        match word {
            AUTO => Ok(0),
            other => Err(E::custom(format!(
                "expected a whole number or \"{AUTO}\", got \"{other}\""
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Table {
        #[serde(with = "super")]
        actors: usize,
    }

    fn read(text: &str) -> Result<usize, String> {
        toml::from_str::<Table>(text)
            .map(|t| t.actors)
            .map_err(|e| e.message().to_string())
    }

    #[test]
    fn auto_is_zero_and_a_number_is_itself_both_ways() {
        assert_eq!(read("actors = \"auto\""), Ok(0));
        assert_eq!(read("actors = 0"), Ok(0));
        assert_eq!(read("actors = 14"), Ok(14));
        let err = read("actors = \"many\"").unwrap_err();
        assert!(err.contains("whole number or \"auto\""), "{err}");
        assert!(read("actors = -2").unwrap_err().contains("-2"));
        assert!(read("actors = 1.5").is_err());
        let written = toml::to_string(&Table { actors: 0 }).unwrap();
        assert_eq!(written.trim(), "actors = \"auto\"");
        assert_eq!(read(&toml::to_string(&Table { actors: 3 }).unwrap()), Ok(3));
    }
}
