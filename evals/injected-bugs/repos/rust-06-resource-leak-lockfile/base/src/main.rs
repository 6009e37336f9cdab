use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [src, dest] = args.as_slice() else {
        eprintln!("usage: snapback SOURCE DEST");
        return ExitCode::from(2);
    };
    match snapback::run_backup(src, dest) {
        Ok(bytes) => {
            println!("copied {bytes} bytes");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("snapback: {e}");
            ExitCode::FAILURE
        }
    }
}
