//! The providers' integration tests: one binary, a module per concern.

mod bounded_reads;
mod cache_order;
mod dialects;
mod local_batch;
mod local_servers;
mod prompt_caching;
mod providers_http;
