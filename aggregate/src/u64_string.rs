//! `u64` values written as JSON strings. Seeds span the whole `u64` range, and JSON numbers above
//! 2^53 are read as a different value by JavaScript (and by any parser that stores numbers as
//! doubles), so summary.json writes them as decimal strings. Reading accepts a number too, so
//! summaries written before the change still load.

use serde::{Deserialize, Deserializer, Serializer};

pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Text(String),
        Number(u64),
    }
    match Either::deserialize(d)? {
        Either::Text(t) => t.parse().map_err(serde::de::Error::custom),
        Either::Number(n) => Ok(n),
    }
}

/// The same for an optional value (null stays null).
pub mod option {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.collect_str(v),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        #[derive(Deserialize)]
        struct Wrapped(#[serde(with = "super")] u64);
        Ok(Option::<Wrapped>::deserialize(d)?.map(|w| w.0))
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct T {
        #[serde(with = "super")]
        seed: u64,
        #[serde(with = "super::option")]
        maybe: Option<u64>,
    }

    #[test]
    fn seeds_above_2_pow_53_survive_as_text() {
        let t = T { seed: 7_882_267_113_055_153_763, maybe: None };
        let j = serde_json::to_string(&t).unwrap();
        assert_eq!(j, r#"{"seed":"7882267113055153763","maybe":null}"#);
        assert_eq!(serde_json::from_str::<T>(&j).unwrap(), t);
        // Older summaries wrote a number.
        let old: T = serde_json::from_str(r#"{"seed":7882267113055153763,"maybe":"42"}"#).unwrap();
        assert_eq!(old, T { seed: 7_882_267_113_055_153_763, maybe: Some(42) });
        assert!(serde_json::from_str::<T>(r#"{"seed":"x","maybe":null}"#).is_err());
    }
}
