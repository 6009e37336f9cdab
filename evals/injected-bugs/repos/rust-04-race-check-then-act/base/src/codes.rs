//! Short codes: numbers written in base 62.

const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// `n` in base 62, at least one character.
pub fn encode(mut n: u64) -> String {
    let mut out = Vec::new();
    loop {
        out.push(ALPHABET[(n % 62) as usize]);
        n /= 62;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).expect("the alphabet is ASCII")
}

#[cfg(test)]
mod tests {
    use super::encode;

    #[test]
    fn small_numbers_are_one_character() {
        assert_eq!(encode(0), "0");
        assert_eq!(encode(61), "Z");
        assert_eq!(encode(62), "10");
    }
}
