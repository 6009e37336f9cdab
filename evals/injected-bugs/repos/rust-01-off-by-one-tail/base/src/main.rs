use std::path::PathBuf;
use std::process::ExitCode;

use logtail::{filter, first_lines, read_lines};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next().map(PathBuf::from) else {
        eprintln!("usage: logtail FILE [--head N] [--grep TEXT]");
        return ExitCode::from(2);
    };
    let lines = match read_lines(&path) {
        Ok(lines) => lines,
        Err(e) => {
            eprintln!("logtail: {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    };
    let mut selected: Vec<String> = lines;
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_default();
        match flag.as_str() {
            "--head" => selected = first_lines(&selected, value.parse().unwrap_or(10)).to_vec(),
            "--grep" => selected = filter::numbered(&selected, &value),
            other => {
                eprintln!("logtail: unknown option {other}");
                return ExitCode::from(2);
            }
        }
    }
    for line in selected {
        println!("{line}");
    }
    ExitCode::SUCCESS
}
