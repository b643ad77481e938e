//! The cell contract: what a spreadsheet value becomes on read, and which
//! values a write refuses because they would not come back as sent.
//!
//! Pure functions only; the readers and the writer call them per cell.

use calamine::{Data, DataRef, ExcelDateTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The largest magnitude at which every integer is an exact `f64`: 2^53.
pub const EXACT_INTEGER_LIMIT: i64 = 1 << 53;

/// Excel's limit on the characters of one cell.
pub const XLSX_MAX_CELL_CHARS: usize = 32_767;

/// One cell: a JSON scalar.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Cell {
    /// An empty cell (JSON `null`).
    Null,
    /// A boolean cell.
    Bool(bool),
    /// A number that is an integer within ±2^53 ([`EXACT_INTEGER_LIMIT`]).
    Int(i64),
    /// Any other finite number.
    Float(f64),
    /// Text, and what reads as text: dates and times as ISO-8601, error
    /// values, non-finite numbers.
    String(String),
}

impl Cell {
    /// A spreadsheet number: integral values within ±2^53 read as
    /// integers, everything else as a float. Non-finite values (which a
    /// hand-made file can hold) read as their text, since JSON has none.
    pub fn number(value: f64) -> Cell {
        if !value.is_finite() {
            return Cell::String(value.to_string());
        }
        if value.fract() == 0.0 && value.abs() <= EXACT_INTEGER_LIMIT as f64 {
            // Exact: integral and within ±2^53. `-0.0` reads as 0.
            return Cell::Int(value as i64);
        }
        Cell::Float(value)
    }

    /// A calamine value as a cell; `None` for an empty one.
    pub fn from_spreadsheet(value: &DataRef<'_>) -> Option<Cell> {
        Some(match value {
            DataRef::Empty => return None,
            DataRef::Int(value) => Cell::Int(*value),
            DataRef::Float(value) => Cell::number(*value),
            DataRef::String(text) => Cell::String(text.clone()),
            DataRef::SharedString(text) => Cell::String((*text).to_owned()),
            DataRef::Bool(value) => Cell::Bool(*value),
            DataRef::DateTime(value) => Cell::String(iso_8601(value)),
            DataRef::DateTimeIso(text) | DataRef::DurationIso(text) => Cell::String(text.clone()),
            DataRef::Error(error) => Cell::String(error.to_string()),
        })
    }

    /// A value of a sheet calamine read whole (`.xls`, `.ods`).
    pub fn from_data(value: &Data) -> Option<Cell> {
        Some(match value {
            Data::Empty => return None,
            Data::Int(value) => Cell::Int(*value),
            Data::Float(value) => Cell::number(*value),
            Data::String(text) | Data::DateTimeIso(text) | Data::DurationIso(text) => {
                Cell::String(text.clone())
            }
            Data::Bool(value) => Cell::Bool(*value),
            Data::DateTime(value) => Cell::String(iso_8601(value)),
            Data::Error(error) => Cell::String(error.to_string()),
        })
    }

    /// The cell as a column name; `None` when blank (null or only
    /// whitespace), which becomes a positional name.
    pub fn header_text(&self) -> Option<String> {
        let text = match self {
            Cell::Null => return None,
            Cell::Bool(value) => value.to_string(),
            Cell::Int(value) => value.to_string(),
            Cell::Float(value) => serde_json::Number::from_f64(*value)
                .map_or_else(|| value.to_string(), |number| number.to_string()),
            Cell::String(text) => text.clone(),
        };
        (!text.trim().is_empty()).then_some(text)
    }

    /// Bytes of the cell's compact JSON.
    pub fn json_len(&self) -> usize {
        serde_json::to_vec(self).map_or(0, |bytes| bytes.len())
    }
}

/// The positional name of column `index` (zero-based): `col_1`, `col_2`, …
pub fn positional_name(index: usize) -> String {
    format!("col_{}", index + 1)
}

/// An Excel date or time as ISO-8601: `YYYY-MM-DDTHH:MM:SS` (with
/// `.mmm` when there are milliseconds), `HH:MM:SS` for a time of day alone
/// (a serial below one day), and a duration as `PT<h>H<m>M<s>S`.
pub fn iso_8601(value: &ExcelDateTime) -> String {
    let serial = value.as_f64();
    if value.is_duration() {
        let millis = (serial * 86_400_000.0).round() as i64;
        let sign = if millis < 0 { "-" } else { "" };
        let millis = millis.unsigned_abs();
        let (hours, rest) = (millis / 3_600_000, millis % 3_600_000);
        let (minutes, rest) = (rest / 60_000, rest % 60_000);
        let (seconds, millis) = (rest / 1000, rest % 1000);
        let fraction = if millis == 0 {
            String::new()
        } else {
            format!(".{millis:03}")
        };
        return format!("{sign}PT{hours}H{minutes}M{seconds}{fraction}S");
    }
    let (year, month, day, hour, minute, second, millis) = value.to_ymd_hms_milli();
    let fraction = if millis == 0 {
        String::new()
    } else {
        format!(".{millis:03}")
    };
    let time = format!("{hour:02}:{minute:02}:{second:02}{fraction}");
    if (0.0..1.0).contains(&serial) {
        return time;
    }
    format!("{year:04}-{month:02}-{day:02}T{time}")
}

/// Whether a CSV consumer could take the text for a formula: its first
/// non-whitespace character is `=`, `+`, `-` or `@`.
pub fn formula_like(text: &str) -> bool {
    matches!(
        text.trim_start().chars().next(),
        Some('=' | '+' | '-' | '@')
    )
}

/// Why a JSON value is not a cell, or `None` when it is one.
pub fn not_a_scalar(value: &Value) -> Option<&'static str> {
    match value {
        Value::Array(_) => Some("an array"),
        Value::Object(_) => Some("an object"),
        _ => None,
    }
}

/// Why an XLSX write would not read back `value` unchanged (with
/// rust_xlsxwriter writing and calamine reading), or `None` when it would.
pub fn xlsx_hazard(value: &Value) -> Option<String> {
    match value {
        Value::String(text) if text.is_empty() => Some(
            "is an empty string, which XLSX stores as no cell at all, so it would read back as null; send null for \"no value\", or write .csv".to_owned(),
        ),
        Value::String(text) => {
            let chars = text.chars().count();
            (chars > XLSX_MAX_CELL_CHARS).then(|| {
                format!(
                    "has {chars} characters, over Excel's {XLSX_MAX_CELL_CHARS}-character cell limit; shorten it or write .csv"
                )
            })
        }
        Value::Number(number) => number_hazard(number),
        _ => None,
    }
}

fn number_hazard(number: &serde_json::Number) -> Option<String> {
    if let Some(integer) = number.as_i64() {
        return (integer.unsigned_abs() > EXACT_INTEGER_LIMIT as u64).then(|| {
            format!(
                "is the integer {integer}, beyond ±2^53 ({EXACT_INTEGER_LIMIT}): XLSX stores numbers as 64-bit floats, so it would read back changed or as a float; send it as a string"
            )
        });
    }
    if number.is_u64() {
        return Some(format!(
            "is the integer {number}, beyond ±2^53 ({EXACT_INTEGER_LIMIT}): XLSX stores numbers as 64-bit floats, so it would read back changed; send it as a string"
        ));
    }
    let value = number.as_f64()?;
    (value.fract() == 0.0 && value.abs() <= EXACT_INTEGER_LIMIT as f64).then(|| {
        format!(
            "is the float {number} with no fractional part: XLSX has one number type and whole numbers read back as integers, so its type would change; send it as the integer {} or as a string",
            value as i64
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use calamine::ExcelDateTimeType;
    use serde_json::json;

    #[test]
    fn numbers_read_as_integers_only_when_exact_and_whole() {
        let cases = [
            (3.0, Cell::Int(3)),
            (-0.0, Cell::Int(0)),
            (2.5, Cell::Float(2.5)),
            (9_007_199_254_740_992.0, Cell::Int(EXACT_INTEGER_LIMIT)),
            (1e16, Cell::Float(1e16)),
            (1e20, Cell::Float(1e20)),
            (f64::NAN, Cell::String("NaN".to_owned())),
            (f64::INFINITY, Cell::String("inf".to_owned())),
        ];
        for (value, expected) in cases {
            assert_eq!(Cell::number(value), expected, "{value}");
        }
    }

    #[test]
    fn cells_serialise_as_json_scalars() {
        let row = vec![
            Cell::Null,
            Cell::Bool(true),
            Cell::Int(-4),
            Cell::Float(0.5),
            Cell::String("a\"b".to_owned()),
        ];
        let text = serde_json::to_string(&row).unwrap();
        assert_eq!(text, r#"[null,true,-4,0.5,"a\"b"]"#);
        assert_eq!(Cell::String("a\"b".to_owned()).json_len(), 6);
        let back: Vec<Cell> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, row);
    }

    #[test]
    fn header_text_is_none_for_blanks() {
        assert_eq!(Cell::Null.header_text(), None);
        assert_eq!(Cell::String("  ".to_owned()).header_text(), None);
        assert_eq!(Cell::Int(7).header_text().as_deref(), Some("7"));
        assert_eq!(Cell::Float(1.5).header_text().as_deref(), Some("1.5"));
        assert_eq!(Cell::Bool(false).header_text().as_deref(), Some("false"));
        assert_eq!(positional_name(0), "col_1");
    }

    #[test]
    fn excel_dates_become_iso_8601() {
        let at = |serial, kind| iso_8601(&ExcelDateTime::new(serial, kind, false));
        assert_eq!(
            at(45_306.0, ExcelDateTimeType::DateTime),
            "2024-01-15T00:00:00"
        );
        assert_eq!(
            at(45_306.75, ExcelDateTimeType::DateTime),
            "2024-01-15T18:00:00"
        );
        assert_eq!(at(0.5, ExcelDateTimeType::DateTime), "12:00:00");
        assert_eq!(at(1.5, ExcelDateTimeType::TimeDelta), "PT36H0M0S");
        let epoch_1904 = ExcelDateTime::new(0.0, ExcelDateTimeType::DateTime, true);
        assert_eq!(iso_8601(&epoch_1904), "00:00:00");
        let day_1904 = ExcelDateTime::new(1.0, ExcelDateTimeType::DateTime, true);
        assert_eq!(iso_8601(&day_1904), "1904-01-02T00:00:00");
    }

    #[test]
    fn formula_like_text_is_found_after_leading_whitespace() {
        for text in ["=1+1", "+3", "-5", "@SUM(A1)", "  =x", "\t-1"] {
            assert!(formula_like(text), "{text:?}");
        }
        for text in ["", "a=b", "5", "x-1", " plain", "'=quoted"] {
            assert!(!formula_like(text), "{text:?}");
        }
    }

    #[test]
    fn only_scalars_are_cells() {
        assert_eq!(not_a_scalar(&json!([1])), Some("an array"));
        assert_eq!(not_a_scalar(&json!({"a": 1})), Some("an object"));
        for value in [json!(null), json!(1), json!("x"), json!(true)] {
            assert_eq!(not_a_scalar(&value), None);
        }
    }

    #[test]
    fn xlsx_hazards_are_exactly_the_values_that_would_change() {
        let refused = [
            json!(""),
            json!(100.0),
            json!(-0.0),
            json!(9_007_199_254_740_993_i64),
            json!(-9_007_199_254_740_993_i64),
            json!(u64::MAX),
            json!("x".repeat(XLSX_MAX_CELL_CHARS + 1)),
        ];
        for value in refused {
            assert!(xlsx_hazard(&value).is_some(), "{value}");
        }
        let accepted = [
            json!(" "),
            json!("a\r\nb"),
            json!("_x0041_"),
            json!("\u{fffe}"),
            json!(0.1),
            json!(1e16),
            json!(9_007_199_254_740_992_i64),
            json!(-9_007_199_254_740_992_i64),
            json!(true),
            json!(null),
            json!("x".repeat(XLSX_MAX_CELL_CHARS)),
        ];
        for value in accepted {
            assert_eq!(xlsx_hazard(&value), None, "{value}");
        }
    }
}
