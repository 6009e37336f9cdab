//! Totals per payee.

use std::collections::BTreeMap;

use crate::Entry;

/// The sum of the amounts of each payee, in payee order.
pub fn totals(entries: &[Entry]) -> BTreeMap<&str, i64> {
    let mut out = BTreeMap::new();
    for entry in entries {
        *out.entry(entry.payee.as_str()).or_insert(0) += entry.amount_cents;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_line;

    #[test]
    fn amounts_of_one_payee_add_up() {
        let entries: Vec<Entry> =
            ["2024-01-02|Grocer|-12.50|", "2024-01-05|Grocer|-7.50|milk"].iter().filter_map(|l| parse_line(l)).collect();
        assert_eq!(totals(&entries)["Grocer"], -2000);
    }
}
