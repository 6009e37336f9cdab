//! A subprocess's line-oriented output read within bounds: each line is capped, and
//! so is the whole output, so a CLI that prints an endless line or never stops
//! printing costs bounded memory and ends in a typed error instead of exhausting
//! the machine.

use futures::StreamExt;
use tokio::io::AsyncRead;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use conclave_core::ProviderError;

/// How much of a CLI's output is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimits {
    /// The longest line, in bytes (without its newline).
    pub line: usize,
    /// The most output in all, in bytes.
    pub total: usize,
}

impl Default for OutputLimits {
    /// 16 MiB a line (a `result` event with a large structured output fits easily) and
    /// 256 MiB in all (a long session that echoes many files it read).
    fn default() -> OutputLimits {
        OutputLimits { line: 16 << 20, total: 256 << 20 }
    }
}

/// Why a CLI's output was not read to its end.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutputError {
    /// One line went past [`OutputLimits::line`].
    #[error("{cli} printed a line longer than {limit} bytes; the rest of its output was not read")]
    LineTooLong {
        /// Which program.
        cli: &'static str,
        /// The cap.
        limit: usize,
    },
    /// The output went past [`OutputLimits::total`].
    #[error("{cli} printed more than {limit} bytes in all; the rest of its output was not read")]
    TooMuch {
        /// Which program.
        cli: &'static str,
        /// The cap.
        limit: usize,
    },
    /// Reading failed (a broken pipe, output that is not UTF-8).
    #[error("reading the output of {cli}: {message}")]
    Read {
        /// Which program.
        cli: &'static str,
        /// What failed.
        message: String,
    },
}

impl From<OutputError> for ProviderError {
    /// A CLI past its caps broke its own protocol; a failed read is a transport fault.
    fn from(error: OutputError) -> ProviderError {
        match error {
            OutputError::Read { .. } => ProviderError::Transport(error.to_string()),
            _ => ProviderError::Malformed(error.to_string()),
        }
    }
}

/// The lines of one program's output, within `limits`.
pub struct BoundedLines<R> {
    lines: FramedRead<R, LinesCodec>,
    cli: &'static str,
    limits: OutputLimits,
    read: usize,
}

impl<R: AsyncRead + Unpin> BoundedLines<R> {
    /// Reads the output of `cli` (its name, for messages) from `output`.
    pub fn new(cli: &'static str, output: R, limits: OutputLimits) -> BoundedLines<R> {
        let codec = LinesCodec::new_with_max_length(limits.line);
        BoundedLines { lines: FramedRead::new(output, codec), cli, limits, read: 0 }
    }

    /// The next line, `None` at the end of the output.
    pub async fn next_line(&mut self) -> Result<Option<String>, OutputError> {
        let Some(line) = self.lines.next().await else { return Ok(None) };
        let line = line.map_err(|e| match e {
            LinesCodecError::MaxLineLengthExceeded => {
                OutputError::LineTooLong { cli: self.cli, limit: self.limits.line }
            }
            LinesCodecError::Io(e) => OutputError::Read { cli: self.cli, message: e.to_string() },
        })?;
        self.read += line.len() + 1;
        if self.read > self.limits.total {
            return Err(OutputError::TooMuch { cli: self.cli, limit: self.limits.total });
        }
        Ok(Some(line))
    }
}

impl<R> std::fmt::Debug for BoundedLines<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundedLines").field("cli", &self.cli).field("read", &self.read).finish_non_exhaustive()
    }
}
