use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

use minserve::files::Site;
use minserve::{parse_request_line, response};

fn main() -> std::io::Result<()> {
    let root = std::env::args().nth(1).unwrap_or_else(|| ".".to_string());
    let site = Site::new(root);
    let listener = TcpListener::bind("127.0.0.1:8000")?;
    eprintln!("serving on 127.0.0.1:8000");
    for stream in listener.incoming() {
        let mut stream = stream?;
        let mut first = String::new();
        BufReader::new(&stream).read_line(&mut first)?;
        let reply = match parse_request_line(first.trim_end()) {
            Some(request) => site.handle(&request),
            None => response("400 Bad Request", &[], b"bad request"),
        };
        stream.write_all(&reply)?;
    }
    Ok(())
}
