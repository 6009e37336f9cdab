//! Memory of `read_file` on a 200 MB file: the peak resident size above idle while
//! reading from the start, from the middle (line 2,000,000) and past a long line,
//! sampled every millisecond while each read is repeated 20 times (so short reads
//! are sampled too). Reads are streamed, so the target is under 20 MB.
//!
//! Run with `cargo bench -p conclave-review --bench tools`.

use conclave_core::{ToolCall, ToolRunner};
use conclave_review::tools::RepoTools;
use serde_json::json;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How many times each read runs while memory is sampled.
const REPEAT: u32 = 20;
use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};

/// The resident size of this process, in bytes.
fn rss(system: &mut System, pid: Pid) -> u64 {
    system.refresh_processes_specifics(
        ProcessesToUpdate::Some(&[pid]),
        false,
        ProcessRefreshKind::nothing().with_memory(),
    );
    system.process(pid).map_or(0, |p| p.memory())
}

/// The peak resident size while `work` runs, sampled every millisecond.
fn peak_during(work: impl FnOnce()) -> u64 {
    let (stop, peak) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            let pid = sysinfo::get_current_pid().expect("pid");
            let mut system = System::new();
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(rss(&mut system, pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    work();
    stop.store(true, Ordering::Relaxed);
    sampler.join().expect("sampler");
    peak.load(Ordering::Relaxed)
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("big.txt");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    let mut written = 0usize;
    let mut n = 0u64;
    while written < 200 * 1024 * 1024 {
        n += 1;
        let line = if n == 1_000 {
            format!("{}\n", "y".repeat(5 * 1024 * 1024))
        } else {
            format!("line {n} of a large generated file\n")
        };
        written += line.len();
        file.write_all(line.as_bytes()).expect("write");
    }
    file.flush().expect("flush");
    drop(file);
    let tools = RepoTools::new(dir.path(), &[]).expect("tools");
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let pid = sysinfo::get_current_pid().expect("pid");
    let idle = rss(&mut System::new(), pid);
    println!("read_file on a {} MB file ({n} lines); idle RSS {:.1} MB", written / (1024 * 1024), idle as f64 / 1e6);
    for (what, start) in [("from the start", 1u64), ("past a 5 MB line", 999), ("from line 2,000,000", 2_000_000)] {
        let started = Instant::now();
        let mut answered = 0;
        let peak = peak_during(|| {
            let call = ToolCall {
                id: "c".into(),
                name: "read_file".into(),
                arguments: json!({"path": "big.txt", "start_line": start, "end_line": null}),
            };
            for _ in 0..REPEAT {
                let outcome = runtime.block_on(tools.run(&call));
                assert!(!outcome.is_error, "{}", outcome.content);
                answered = outcome.content.len();
            }
        });
        println!(
            "{what:<22} answer {:>6} bytes in {:>6.1} ms; peak RSS {:.1} MB above idle (target: under 20 MB)",
            answered,
            started.elapsed().as_secs_f64() * 1e3 / f64::from(REPEAT),
            peak.saturating_sub(idle) as f64 / 1e6
        );
    }
}
