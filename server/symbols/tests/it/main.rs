//! The symbol index's tests: parsing each language, the index over fixture
//! repositories, bad input, caps, the cache and the repository record.

mod fixtures;
mod index;
mod parse;
mod record;
