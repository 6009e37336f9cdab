//! The providers' integration tests: one binary, a module per concern.

mod providers_http;
