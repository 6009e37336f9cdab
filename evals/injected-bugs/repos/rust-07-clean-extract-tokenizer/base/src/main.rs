use std::io::Read;
use std::process::ExitCode;

const USAGE: &str = "usage: wordfreq [TOP] < TEXT";

fn main() -> std::io::Result<ExitCode> {
    let top: usize = match std::env::args().nth(1) {
        None => 10,
        Some(arg) if arg == "-h" || arg == "--help" => {
            println!("{USAGE}");
            return Ok(ExitCode::SUCCESS);
        }
        Some(arg) => match arg.parse() {
            Ok(n) => n,
            Err(_) => {
                eprintln!("{USAGE}");
                return Ok(ExitCode::from(2));
            }
        },
    };
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text)?;
    for (word, count) in wordfreq::frequencies(&text).into_iter().take(top) {
        println!("{count:>7} {word}");
    }
    Ok(ExitCode::SUCCESS)
}
