//! The exit codes of `conclave`, as documented in docs/cli.md: every command returns
//! one of these.

/// Success.
pub const OK: u8 = 0;
/// Anything not covered below.
pub const OTHER: u8 = 1;
/// Configuration or input error found before any provider call.
pub const CONFIG: u8 = 2;
/// A provider failed, or a call did not fit in the run's budget (`budget`).
pub const PROVIDER: u8 = 3;
/// Structured output still invalid after retries.
pub const CONTRACT: u8 = 4;
/// A `--fail-on` gate tripped.
pub const GATE: u8 = 5;
/// A `--fail-on` gate was asked for and the review is degraded (agents failed,
/// were skipped, or fell back to the local model) without `--allow-degraded`.
pub const DEGRADED: u8 = 6;
/// The run is parked until a person decides at an approval node (`conclave approve`).
pub const WAITING: u8 = 7;
/// A person rejected the run at an approval node (or the time to decide ran out).
pub const REJECTED: u8 = 8;
