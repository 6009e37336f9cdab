//! A plain-text ledger: one entry per line, `DATE|PAYEE|AMOUNT|MEMO`.

pub mod report;

/// One ledger entry; amounts are in cents, negative for spending.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub date: String,
    pub payee: String,
    pub amount_cents: i64,
    pub memo: String,
}

/// Parses one line; None when it is not an entry.
pub fn parse_line(line: &str) -> Option<Entry> {
    let mut parts = line.splitn(4, '|');
    let date = parts.next()?.trim().to_string();
    let payee = parts.next()?.trim().to_string();
    let amount_cents = parse_amount(parts.next()?.trim())?;
    let memo = parts.next().unwrap_or("").trim().to_string();
    Some(Entry { date, payee, amount_cents, memo })
}

/// "12.34", "-5" or "0.5" as cents.
fn parse_amount(text: &str) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (units, cents) = digits.split_once('.').unwrap_or((digits, "0"));
    if cents.is_empty() || cents.len() > 2 {
        return None;
    }
    let cents: i64 = format!("{cents:0<2}").parse().ok()?;
    let value = units.parse::<i64>().ok()? * 100 + cents;
    Some(if negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_read_as_cents() {
        assert_eq!(parse_amount("12.34"), Some(1234));
        assert_eq!(parse_amount("-5"), Some(-500));
        assert_eq!(parse_amount("0.5"), Some(50));
        assert_eq!(parse_amount("1.234"), None);
    }
}
