//! Loading configuration files.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;

use crate::parse;

/// A configuration file's values.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Config {
    pub values: BTreeMap<String, String>,
}

impl Config {
    /// Reads and parses `path`.
    pub fn load(path: &Path) -> io::Result<Config> {
        let text = fs::read_to_string(path)?;
        let values = parse(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        Ok(Config { values })
    }

    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }
}
