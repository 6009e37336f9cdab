//! A minimal HTTP/1.1 file server for local previews.

pub mod files;

/// The parts of a request line the server uses.
#[derive(Debug, PartialEq)]
pub struct Request {
    pub method: String,
    pub path: String,
}

/// Parses the first line of a request, such as `GET /index.html HTTP/1.1`.
pub fn parse_request_line(line: &str) -> Option<Request> {
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let version = parts.next()?;
    if !version.starts_with("HTTP/1.") || !path.starts_with('/') {
        return None;
    }
    Some(Request { method, path })
}

/// A response: status line, headers and body.
pub fn response(status: &str, headers: &[(String, String)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n", body.len()).into_bytes();
    for (name, value) in headers {
        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_are_parsed() {
        let request = parse_request_line("GET /a.html HTTP/1.1").unwrap();
        assert_eq!(request.path, "/a.html");
        assert_eq!(parse_request_line("GET a.html HTTP/1.1"), None);
    }
}
