//! Numbers as the editor writes them into text, styles and SVG attributes. In the
//! editor's wasm, the standard library's float formatting would add about 10 KB to the wasm bundle
//! beside the formatter serde_json already links (`zmij`), so every `f64` the editor
//! shows goes through here: [`shortest`] for values that must read back the same,
//! [`fixed`] for a set number of decimals.

/// The shortest text that reads back as `value`, without a trailing `.0` (so `3.0`
/// is `3`, as a person types it); non-finite values, which no conclave holds, are `0`.
pub fn shortest(value: f64) -> String {
    if !value.is_finite() {
        return "0".to_string();
    }
    let mut buffer = zmij::Buffer::new();
    let text = buffer.format_finite(value);
    text.strip_suffix(".0").unwrap_or(text).to_string()
}

/// `value` rounded to `decimals` places (at most 9), with exactly that many digits
/// after the point; non-finite values are `0`.
pub fn fixed(value: f64, decimals: u32) -> String {
    let decimals = decimals.min(9);
    let scale = 10u64.pow(decimals);
    let scaled = if value.is_finite() { (value.abs() * scale as f64).round() } else { 0.0 };
    // Beyond u64 the cast saturates; no coordinate, percentage or cost comes near it.
    let scaled = scaled as u64;
    let sign = if value < 0.0 && scaled > 0 { "-" } else { "" };
    let (whole, fraction) = (scaled / scale, scaled % scale);
    if decimals == 0 {
        format!("{sign}{whole}")
    } else {
        format!("{sign}{whole}.{fraction:0width$}", width = decimals as usize)
    }
}

/// A CSS length in pixels, to a hundredth of a pixel.
pub fn px(value: f64) -> String {
    format!("{}px", fixed(value, 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortest_reads_back_as_the_same_number_and_drops_a_trailing_point_zero() {
        for (value, text) in [(3.0, "3"), (0.1, "0.1"), (-2.5, "-2.5"), (1e-7, "1e-7"), (f64::NAN, "0")] {
            assert_eq!(shortest(value), text);
        }
        for value in [0.1, 1.0 / 3.0, 123456.789, -0.000123] {
            assert_eq!(shortest(value).parse::<f64>(), Ok(value));
        }
    }

    #[test]
    fn fixed_rounds_to_the_asked_places_and_pads_them() {
        for (value, decimals, text) in [
            (12.345, 1, "12.3"),
            (0.00005, 4, "0.0001"),
            (0.0, 4, "0.0000"),
            (99.96, 0, "100"),
            (-1.25, 2, "-1.25"),
            (-0.001, 2, "0.00"),
            (7.5, 3, "7.500"),
            (f64::INFINITY, 1, "0.0"),
        ] {
            assert_eq!(fixed(value, decimals), text, "{value} to {decimals} places");
        }
    }
}
