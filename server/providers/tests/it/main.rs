//! The providers' integration tests: one binary, a module per concern.

mod dialects;
mod providers_http;
