//! Which content coding of an editor file to send (RFC 9110, section 12.5.3): the
//! request's `Accept-Encoding`, with its q-values, `identity` and `*`, read against
//! the codings the file is stored in. Read here because tower-http's reader is private
//! to its file service and the crates that read this one header are unmaintained.

use axum::http::HeaderMap;
use axum::http::header::ACCEPT_ENCODING;

/// A content coding an editor file can be stored and sent in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// Brotli (`br`), the smallest.
    Brotli,
    /// gzip, which every client takes.
    Gzip,
    /// The file as it is.
    Identity,
}

impl Coding {
    /// The coding's token in `Accept-Encoding` and `Content-Encoding`.
    pub fn token(self) -> &'static str {
        match self {
            Coding::Brotli => "br",
            Coding::Gzip => "gzip",
            Coding::Identity => "identity",
        }
    }

    /// What `scripts/build-editor.sh` appends to a file's name for its copy in this
    /// coding (the names tower-http's file service looks for too).
    pub fn suffix(self) -> &'static str {
        match self {
            Coding::Brotli => ".br",
            Coding::Gzip => ".gz",
            Coding::Identity => "",
        }
    }
}

/// The coding to send of a file stored in `stored` (in the server's order of
/// preference, identity last): the one the request accepts with the highest q-value,
/// the server's order breaking ties. Without `Accept-Encoding` the file goes as it
/// is, since a client that names no coding may not decode one; and identity goes too
/// when the request refuses every stored coding, identity included, as tower-http's
/// file service does: a readable answer serves the client better than a 406.
pub fn choose(headers: &HeaderMap, stored: &[Coding]) -> Coding {
    let mut lines = headers.get_all(ACCEPT_ENCODING).iter().peekable();
    if lines.peek().is_none() {
        return Coding::Identity;
    }
    let mut named = Vec::new();
    for line in lines {
        let Ok(line) = line.to_str() else { continue };
        named.extend(line.split(',').filter_map(element));
    }
    let mut best = (Coding::Identity, 0);
    for &coding in stored {
        let quality = quality_of(&named, coding);
        if quality > best.1 {
            best = (coding, quality);
        }
    }
    best.0
}

/// How much the request wants `coding`, in thousandths: as named, else as `*` says,
/// else 0 for a real coding and a little for identity, which is acceptable unless
/// refused by name or by `*;q=0`.
fn quality_of(named: &[(String, u16)], coding: Coding) -> u16 {
    let names = |name: &str| match coding {
        // `x-gzip` is gzip's old name (RFC 9110, section 8.4.1.3).
        Coding::Gzip => name == "gzip" || name == "x-gzip",
        _ => name == coding.token(),
    };
    if let Some((_, q)) = named.iter().find(|(name, _)| names(name)) {
        return *q;
    }
    match named.iter().find(|(name, _)| name == "*") {
        Some((_, q)) => *q,
        None if coding == Coding::Identity => 1,
        None => 0,
    }
}

/// One element of the list: a coding (lowercased) and its q-value in thousandths;
/// `None` for an empty or malformed element, which is skipped.
fn element(text: &str) -> Option<(String, u16)> {
    let mut parts = text.split(';');
    let name = parts.next()?.trim().to_ascii_lowercase();
    if name.is_empty() {
        return None;
    }
    let mut quality = 1000;
    for parameter in parts {
        let (key, value) = parameter.split_once('=')?;
        if key.trim().eq_ignore_ascii_case("q") {
            quality = qvalue(value.trim())?;
        }
    }
    Some((name, quality))
}

/// A q-value (`0`, `0.5`, `1.000`: at most three decimals, at most 1) in thousandths.
fn qvalue(text: &str) -> Option<u16> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths = format!("{fraction:0<3}").parse::<u16>().ok()?;
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    const ALL: [Coding; 3] = [Coding::Brotli, Coding::Gzip, Coding::Identity];

    fn chosen(accept: &[&str], stored: &[Coding]) -> Coding {
        let mut headers = HeaderMap::new();
        for line in accept {
            headers.append(ACCEPT_ENCODING, HeaderValue::from_str(line).expect("a header value"));
        }
        choose(&headers, stored)
    }

    #[test]
    fn brotli_then_gzip_then_the_file_as_it_is() {
        assert_eq!(chosen(&["gzip, deflate, br, zstd"], &ALL), Coding::Brotli);
        assert_eq!(chosen(&["gzip, deflate"], &ALL), Coding::Gzip);
        assert_eq!(chosen(&["gzip, br"], &[Coding::Gzip, Coding::Identity]), Coding::Gzip);
        assert_eq!(chosen(&["deflate"], &ALL), Coding::Identity);
        assert_eq!(chosen(&[], &ALL), Coding::Identity, "no header: nothing the client may not decode");
        assert_eq!(chosen(&["gzip", "br"], &ALL), Coding::Brotli, "several lines are one list");
        assert_eq!(chosen(&["X-GZIP"], &ALL), Coding::Gzip, "gzip's old name, in any case");
    }

    #[test]
    fn q_values_order_and_refuse() {
        assert_eq!(chosen(&["br;q=0.5, gzip;q=0.8"], &ALL), Coding::Gzip);
        assert_eq!(chosen(&["br;q=0, gzip"], &ALL), Coding::Gzip);
        assert_eq!(chosen(&["br ; q=1.000 , gzip;q=0.999"], &ALL), Coding::Brotli);
        assert_eq!(chosen(&["br;q=0.001"], &ALL), Coding::Brotli, "any q above 0 accepts");
        assert_eq!(chosen(&["identity;q=1, br;q=0.5"], &ALL), Coding::Identity);
        assert_eq!(chosen(&["br;q=2, gzip"], &ALL), Coding::Gzip, "a malformed q-value skips its element");
        assert_eq!(chosen(&["br;q=0.5.1"], &ALL), Coding::Identity);
    }

    #[test]
    fn identity_and_star() {
        assert_eq!(chosen(&["identity"], &ALL), Coding::Identity);
        assert_eq!(chosen(&["*"], &ALL), Coding::Brotli, "* accepts every coding");
        assert_eq!(chosen(&["*;q=0.5, br;q=0"], &ALL), Coding::Gzip, "a named coding overrides *");
        assert_eq!(chosen(&["gzip;q=0.1, *;q=0"], &ALL), Coding::Gzip, "*;q=0 refuses identity too");
        assert_eq!(chosen(&["identity;q=0, gzip"], &ALL), Coding::Gzip);
        assert_eq!(
            chosen(&["identity;q=0, *;q=0"], &ALL),
            Coding::Identity,
            "nothing acceptable: the file as it is, rather than no answer"
        );
    }
}
