use std::error::Error;
use std::path::PathBuf;

use kvconf::store::Config;

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((file, command)) = args.split_first() else {
        return Err("usage: kvconf FILE get KEY".into());
    };
    let path = PathBuf::from(file);
    let config = Config::load(&path)?;
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    match command.as_slice() {
        ["get", key] => match config.get(key) {
            Some(value) => println!("{value}"),
            None => return Err(format!("{key} is not set").into()),
        },
        _ => return Err("usage: kvconf FILE get KEY".into()),
    }
    Ok(())
}
