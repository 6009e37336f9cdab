//! The symbol index's tests: parsing each language, the index over fixture
//! repositories, bad input, caps and the cache.

mod fixtures;
mod index;
mod parse;
