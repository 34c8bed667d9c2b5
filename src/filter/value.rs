//! Typed metadata values, and the dates they and filters hold.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::format_description::well_known::Rfc3339;
use time::{Date, Month, OffsetDateTime};

/// Milliseconds in a day: a date without a time of day is its UTC midnight.
const DAY_MS: i64 = 86_400_000;

/// One typed value of a document's metadata; every chunk of the document inherits it.
///
/// From JSON (a JSON Lines record's `metadata`, or serde): a string is a [`Date`] when it is
/// exactly a date (`YYYY-MM-DD`) or an RFC 3339 date-time (`2024-03-01T09:30:00+01:00`), and
/// a [`String`] otherwise; a number is a [`Number`], `true`/`false` a [`Bool`], an array of
/// strings a [`List`]. Other JSON (objects, mixed arrays) is kept as its JSON text, a
/// [`String`]; `null` means no value. Dates serialise back as `YYYY-MM-DD` when they fall on
/// a UTC midnight, else as RFC 3339 in UTC, so a value survives a JSON round trip.
///
/// [`Date`]: MetadataValue::Date
/// [`String`]: MetadataValue::String
/// [`Number`]: MetadataValue::Number
/// [`Bool`]: MetadataValue::Bool
/// [`List`]: MetadataValue::List
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum MetadataValue {
    /// Text, compared bytewise.
    String(String),
    /// A number (finite from JSON; compared numerically).
    Number(f64),
    /// True or false.
    Bool(bool),
    /// An instant: Unix milliseconds, UTC (a plain date is its UTC midnight).
    Date(i64),
    /// A list of strings (tags, owners…): a filter test holds when it holds for any element.
    List(Vec<String>),
}

/// Numbers are equal when `f64::total_cmp` says so, so the relation is an equivalence.
impl PartialEq for MetadataValue {
    fn eq(&self, other: &Self) -> bool {
        use MetadataValue::*;
        match (self, other) {
            (String(a), String(b)) => a == b,
            (Number(a), Number(b)) => a.total_cmp(b) == Ordering::Equal,
            (Bool(a), Bool(b)) => a == b,
            (Date(a), Date(b)) => a == b,
            (List(a), List(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for MetadataValue {}

impl MetadataValue {
    /// The value a JSON value stands for (see the type's documentation); `None` for `null`.
    pub fn from_json(value: serde_json::Value) -> Option<Self> {
        use serde_json::Value;
        Some(match value {
            Value::Null => return None,
            Value::Bool(b) => MetadataValue::Bool(b),
            Value::Number(n) => match n.as_f64() {
                Some(x) if x.is_finite() => MetadataValue::Number(x),
                _ => MetadataValue::String(n.to_string()),
            },
            Value::String(s) => Self::from_text(s),
            Value::Array(items) if items.iter().all(Value::is_string) => MetadataValue::List(
                items
                    .into_iter()
                    .filter_map(|v| match v {
                        Value::String(s) => Some(s),
                        _ => None,
                    })
                    .collect(),
            ),
            other => MetadataValue::String(other.to_string()),
        })
    }

    /// A string read as JSON reads it: a [`MetadataValue::Date`] when it is exactly a date
    /// or an RFC 3339 date-time, else a [`MetadataValue::String`].
    pub fn from_text(text: String) -> Self {
        match parse_date(&text) {
            Some(ms) => MetadataValue::Date(ms),
            None => MetadataValue::String(text),
        }
    }

    /// The JSON value this is (dates as their text, see [`format_date`]).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            MetadataValue::String(s) => Value::String(s.clone()),
            MetadataValue::Number(x) => {
                serde_json::Number::from_f64(*x).map_or(Value::Null, Value::Number)
            }
            MetadataValue::Bool(b) => Value::Bool(*b),
            MetadataValue::Date(ms) => Value::String(format_date(*ms)),
            MetadataValue::List(items) => {
                Value::Array(items.iter().cloned().map(Value::String).collect())
            }
        }
    }
}

impl fmt::Display for MetadataValue {
    /// Strings and list items as they are, numbers as Rust prints them, dates as
    /// [`format_date`], lists as `[a, b]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetadataValue::String(s) => f.write_str(s),
            MetadataValue::Number(x) => write!(f, "{x}"),
            MetadataValue::Bool(b) => write!(f, "{b}"),
            MetadataValue::Date(ms) => f.write_str(&format_date(*ms)),
            MetadataValue::List(items) => write!(f, "[{}]", items.join(", ")),
        }
    }
}

impl Serialize for MetadataValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for MetadataValue {
    /// As [`MetadataValue::from_json`]; `null` is refused (leave the key out instead).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Self::from_json(value).ok_or_else(|| serde::de::Error::custom("a null metadata value"))
    }
}

/// `YYYY-MM-DD` (its UTC midnight) or an RFC 3339 date-time, as Unix milliseconds; `None`
/// for anything else, so only an exact date is ever taken for one.
pub fn parse_date(text: &str) -> Option<i64> {
    if text.len() == 10 {
        let bytes = text.as_bytes();
        let digits = |r: std::ops::Range<usize>| bytes[r].iter().all(u8::is_ascii_digit);
        if bytes[4] != b'-' || bytes[7] != b'-' || !digits(0..4) || !digits(5..7) {
            return None;
        }
        if !digits(8..10) {
            return None;
        }
        let year: i32 = text[0..4].parse().ok()?;
        let month: u8 = text[5..7].parse().ok()?;
        let day: u8 = text[8..10].parse().ok()?;
        let date = Date::from_calendar_date(year, Month::try_from(month).ok()?, day).ok()?;
        return Some(i64::from(date.to_julian_day() - UNIX_EPOCH_JULIAN_DAY) * DAY_MS);
    }
    if !text
        .as_bytes()
        .get(10)
        .is_some_and(|b| matches!(b, b'T' | b't'))
    {
        return None;
    }
    let instant = OffsetDateTime::parse(text, &Rfc3339).ok()?;
    i64::try_from(instant.unix_timestamp_nanos() / 1_000_000).ok()
}

/// The Julian day of 1970-01-01.
const UNIX_EPOCH_JULIAN_DAY: i32 = 2_440_588;

/// A date as [`parse_date`] reads it back: `YYYY-MM-DD` at a UTC midnight, else RFC 3339 in
/// UTC (milliseconds only when there are some); a number of milliseconds outside the years
/// RFC 3339 can write is printed as that number.
pub fn format_date(ms: i64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    let Ok(instant) = OffsetDateTime::from_unix_timestamp_nanos(nanos) else {
        return ms.to_string();
    };
    if ms.rem_euclid(DAY_MS) == 0 && (0..=9999).contains(&instant.year()) {
        let date = instant.date();
        return format!(
            "{:04}-{:02}-{:02}",
            date.year(),
            u8::from(date.month()),
            date.day()
        );
    }
    instant.format(&Rfc3339).unwrap_or_else(|_| ms.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_parse_exactly_and_round_trip() {
        assert_eq!(parse_date("1970-01-02"), Some(DAY_MS));
        assert_eq!(parse_date("1969-12-31"), Some(-DAY_MS));
        assert_eq!(parse_date("2024-02-29"), Some(1_709_164_800_000));
        assert_eq!(parse_date("2023-02-29"), None);
        assert_eq!(parse_date("2024-1-01"), None);
        assert_eq!(parse_date("2024-01-01 "), None);
        assert_eq!(parse_date("version 2024-01-01"), None);
        assert_eq!(
            parse_date("2024-01-01T01:00:00+01:00"),
            parse_date("2024-01-01")
        );
        assert_eq!(
            parse_date("2024-01-01T00:00:00.250Z"),
            parse_date("2024-01-01").map(|d| d + 250)
        );
        assert_eq!(parse_date("2024-01-01T00:00:00"), None);
        for text in [
            "2024-02-29",
            "1969-07-20",
            "2024-03-01T09:30:00Z",
            "2024-03-01T09:30:00.5Z",
        ] {
            let ms = parse_date(text).expect(text);
            assert_eq!(parse_date(&format_date(ms)), Some(ms), "{text}");
        }
        assert_eq!(format_date(0), "1970-01-01");
        assert_eq!(format_date(1_500), "1970-01-01T00:00:01.5Z");
        assert_eq!(format_date(i64::MAX), i64::MAX.to_string());
    }

    #[test]
    fn json_values_become_typed_values() {
        let json: serde_json::Value = serde_json::json!({
            "s": "refunds", "n": 2.5, "b": true, "d": "2024-01-15",
            "l": ["a", "b"], "mixed": ["a", 1], "o": {"x": 1}, "z": null,
        });
        let serde_json::Value::Object(map) = json else {
            panic!("an object")
        };
        let typed: Vec<(String, Option<MetadataValue>)> = map
            .into_iter()
            .map(|(k, v)| (k, MetadataValue::from_json(v)))
            .collect();
        let get = |key: &str| {
            typed
                .iter()
                .find(|(k, _)| k == key)
                .and_then(|(_, v)| v.clone())
        };
        assert_eq!(get("s"), Some(MetadataValue::String("refunds".into())));
        assert_eq!(get("n"), Some(MetadataValue::Number(2.5)));
        assert_eq!(get("b"), Some(MetadataValue::Bool(true)));
        assert_eq!(get("d"), parse_date("2024-01-15").map(MetadataValue::Date));
        assert_eq!(
            get("l"),
            Some(MetadataValue::List(vec!["a".into(), "b".into()]))
        );
        assert_eq!(
            get("mixed"),
            Some(MetadataValue::String("[\"a\",1]".into()))
        );
        assert_eq!(get("o"), Some(MetadataValue::String("{\"x\":1}".into())));
        assert_eq!(get("z"), None);
        for (_, value) in typed.iter().filter_map(|(k, v)| Some((k, v.clone()?))) {
            let text = serde_json::to_string(&value).expect("serialises");
            let back: MetadataValue = serde_json::from_str(&text).expect("deserialises");
            assert_eq!(back, value);
        }
    }
}
