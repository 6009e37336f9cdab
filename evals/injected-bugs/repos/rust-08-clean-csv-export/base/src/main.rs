use std::process::ExitCode;

use ledger::{parse_line, report, Entry};

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: ledger FILE");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("ledger: {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let entries: Vec<Entry> = text.lines().filter_map(parse_line).collect();
    for (payee, cents) in report::totals(&entries) {
        println!("{payee:<30} {:>10.2}", cents as f64 / 100.0);
    }
    ExitCode::SUCCESS
}
