//! What the self-test's probe tries from inside the sandbox, each a plain standard
//! library or system call that must fail: read a planted file, write outside the
//! scratch directory, connect over TCP, send over UDP, signal the parent, and read
//! the parent's `/proc` environment and command line. The probe is Conclave itself
//! (`conclave sandbox probe`, hidden), so the self-test needs no other program.

use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::time::Duration;

/// One thing the probe tries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// Read this file.
    Read(PathBuf),
    /// Create and write this file.
    Write(PathBuf),
    /// Connect to this TCP address.
    Tcp(SocketAddr),
    /// Send a datagram to this UDP address.
    Udp(SocketAddr),
    /// Send signal 0 to this process (`kill -0`).
    Signal(i32),
    /// Read this process's `/proc/PID/environ`.
    Environ(i32),
    /// Read this process's `/proc/PID/cmdline`.
    Cmdline(i32),
}

impl Attempt {
    /// Its name in the probe's output and the self-test's checks.
    pub fn name(&self) -> &'static str {
        match self {
            Attempt::Read(_) => "read a file outside the sandbox",
            Attempt::Write(_) => "write outside the scratch directory",
            Attempt::Tcp(_) => "connect over TCP to 127.0.0.1",
            Attempt::Udp(_) => "send over UDP to 127.0.0.1",
            Attempt::Signal(_) => "signal the parent (kill -0)",
            Attempt::Environ(_) => "read the parent's /proc/PID/environ",
            Attempt::Cmdline(_) => "read the parent's /proc/PID/cmdline",
        }
    }

    /// As the probe's argument: `read=PATH`, `tcp=ADDR`, `signal=PID`, ….
    pub fn to_arg(&self) -> String {
        match self {
            Attempt::Read(p) => format!("read={}", p.display()),
            Attempt::Write(p) => format!("write={}", p.display()),
            Attempt::Tcp(a) => format!("tcp={a}"),
            Attempt::Udp(a) => format!("udp={a}"),
            Attempt::Signal(pid) => format!("signal={pid}"),
            Attempt::Environ(pid) => format!("environ={pid}"),
            Attempt::Cmdline(pid) => format!("cmdline={pid}"),
        }
    }

    /// Reads an argument [`Attempt::to_arg`] wrote.
    pub fn parse(arg: &str) -> Option<Attempt> {
        let (kind, value) = arg.split_once('=')?;
        Some(match kind {
            "read" => Attempt::Read(PathBuf::from(value)),
            "write" => Attempt::Write(PathBuf::from(value)),
            "tcp" => Attempt::Tcp(value.parse().ok()?),
            "udp" => Attempt::Udp(value.parse().ok()?),
            "signal" => Attempt::Signal(value.parse().ok()?),
            "environ" => Attempt::Environ(value.parse().ok()?),
            "cmdline" => Attempt::Cmdline(value.parse().ok()?),
            _ => return None,
        })
    }

    /// Tries it: `Ok` when it succeeded (the sandbox let it through), else why not.
    pub fn try_it(&self) -> Result<(), String> {
        let io = |e: std::io::Error| e.to_string();
        match self {
            Attempt::Read(path) => std::fs::read(path).map(drop).map_err(io),
            Attempt::Write(path) => std::fs::write(path, b"written from inside the sandbox").map_err(io),
            Attempt::Tcp(addr) => TcpStream::connect_timeout(addr, Duration::from_secs(2)).map(drop).map_err(io),
            Attempt::Udp(addr) => {
                let socket = UdpSocket::bind("127.0.0.1:0").map_err(io)?;
                socket.send_to(b"from inside the sandbox", addr).map(drop).map_err(io)
            }
            Attempt::Signal(pid) => {
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid), None).map_err(|e| e.to_string())
            }
            Attempt::Environ(pid) => std::fs::read(format!("/proc/{pid}/environ")).map(drop).map_err(io),
            Attempt::Cmdline(pid) => std::fs::read(format!("/proc/{pid}/cmdline")).map(drop).map_err(io),
        }
    }
}

/// The probe: tries each attempt its arguments name and prints one line each,
/// `allowed<TAB>NAME` or `denied<TAB>NAME<TAB>why`. Returns the exit code: 0 when
/// every argument was understood.
pub fn probe_main(args: &[String]) -> i32 {
    let mut code = 0;
    for arg in args {
        let Some(attempt) = Attempt::parse(arg) else {
            eprintln!("not an attempt: {arg}");
            code = 2;
            continue;
        };
        match attempt.try_it() {
            Ok(()) => println!("allowed\t{}", attempt.name()),
            Err(why) => println!("denied\t{}\t{why}", attempt.name()),
        }
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_read_back_from_their_arguments() {
        let attempts = [
            Attempt::Read("/x/y".into()),
            Attempt::Write("/tmp/z".into()),
            Attempt::Tcp("127.0.0.1:9".parse().expect("addr")),
            Attempt::Udp("127.0.0.1:9".parse().expect("addr")),
            Attempt::Signal(7),
            Attempt::Environ(7),
            Attempt::Cmdline(7),
        ];
        for attempt in attempts {
            assert_eq!(Attempt::parse(&attempt.to_arg()), Some(attempt));
        }
        assert_eq!(Attempt::parse("fly=1"), None);
    }
}
