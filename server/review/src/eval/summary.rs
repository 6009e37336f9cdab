//! The eval's summary types, which live in `conclave-shared` (`eval.rs`) because the
//! editor draws them too.

pub use conclave_shared::eval::*;
