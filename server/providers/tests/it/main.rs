//! The providers' integration tests: one binary, a module per concern.

mod bounded_reads;
mod dialects;
mod providers_http;
