//! Newline-delimited JSON-RPC read strictly and with a bound, for every stdio pipe we read:
//! the stdio Agent's stdin (`acp-chaos agent`), and an Agent's stdout as `probe` and `client`
//! read it.
//!
//! - **No repair.** A line that is not UTF-8 is [`Line::NotUtf8`], never text with U+FFFD in
//!   place of its bad bytes: a repaired line is another line (two keys that differ only in
//!   their bad bytes would become one key), so the reader reports it and the caller refuses it
//!   (`-32700`) or records it as the malformed frame it is.
//! - **A bound.** A line longer than the reader's bound is [`Line::Overlong`]: its bytes past
//!   the bound are discarded as they are read, never held, so a 200 MB line costs the bound,
//!   not 200 MB; the line after it is read as usual.

use std::io::{self, BufRead, Read};

/// The longest line `acp-chaos agent` reads by default (`--max-line-bytes`), newline not
/// counted: 4 MiB, a thousand times a long prompt.
pub const MAX_LINE_BYTES: usize = 4 << 20;

/// The longest line `probe` and `client` read from an Agent under test: 64 MiB. Larger than
/// [`MAX_LINE_BYTES`] on purpose: a real Agent may send a big file's diff in one update, and
/// a line refused here becomes a malformed frame in the verdicts.
pub const AGENT_OUTPUT_MAX_LINE_BYTES: usize = 64 << 20;

/// How much of a refused line's text its description keeps.
const SHOWN_CHARS: usize = 120;

/// One line read, without its line end (`\n`, and `\r` before it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A UTF-8 line.
    Text(String),
    /// A line that is not UTF-8.
    NotUtf8 {
        /// Its length in bytes.
        len: usize,
        /// Where its first byte that is not UTF-8 is (from 0).
        at: usize,
        /// The start of its text with U+FFFD for bad bytes, only to show (never parsed).
        shown: String,
    },
    /// A line longer than the bound, discarded while read.
    Overlong {
        /// Its length in bytes (what was read of it, up to its end or the end of input).
        len: u64,
        /// The bound it passed.
        max: usize,
    },
}

impl Line {
    /// Why a line that is not [`Line::Text`] was refused, in one phrase (`None` for text).
    pub fn refusal(&self) -> Option<String> {
        match self {
            Line::Text(_) => None,
            Line::NotUtf8 { len, at, .. } => Some(format!(
                "a line of {len} bytes that is not UTF-8 (invalid byte at offset {at})"
            )),
            Line::Overlong { len, max } => Some(format!(
                "a line of {len} bytes, longer than the limit of {max} bytes (discarded unread)"
            )),
        }
    }

    /// A refused line as a record can show it: its description and, for a line that is not
    /// UTF-8, the start of its text (`None` for text).
    pub fn shown(&self) -> Option<String> {
        let why = self.refusal()?;
        Some(match self {
            Line::NotUtf8 { shown, .. } => format!("{why}: {shown}"),
            _ => why,
        })
    }
}

/// Reads [`Line`]s from `R` with a bound on each.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    max: usize,
    buf: Vec<u8>,
}

impl<R: BufRead> LineReader<R> {
    /// A reader of lines of at most `max` bytes (line end not counted) from `inner`.
    pub fn new(inner: R, max: usize) -> LineReader<R> {
        LineReader {
            inner,
            max: max.max(1),
            buf: Vec::new(),
        }
    }

    /// The bytes the line buffer holds room for: a long line is not kept (bounded memory).
    pub fn buffer_capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// The next line; `None` at the end of input. A last line without a newline is a line.
    ///
    /// Errors: the underlying read failed.
    pub fn next_line(&mut self) -> io::Result<Option<Line>> {
        self.buf.clear();
        // Two bytes past the bound, so a line of exactly `max` bytes and its `\r\n` fit.
        let limit = self.max as u64 + 2;
        let n = (&mut self.inner)
            .take(limit)
            .read_until(b'\n', &mut self.buf)?;
        if n == 0 {
            return Ok(None);
        }
        let ended = self.buf.last() == Some(&b'\n');
        if !ended && self.buf.len() as u64 == limit {
            let (rest, cr) = self.skip_line(self.buf.last().copied())?;
            // Its length without its line end (`\r\n` counts as `\n`).
            let len = self.buf.len() as u64 + rest - u64::from(cr);
            // Keep the bound's worth of capacity, not more (it was reached, never passed).
            self.buf.clear();
            return Ok(Some(Line::Overlong { len, max: self.max }));
        }
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        // Read whole (its line end within the two bytes past the bound), and still too long.
        if self.buf.len() > self.max {
            let len = self.buf.len() as u64;
            self.buf.clear();
            return Ok(Some(Line::Overlong { len, max: self.max }));
        }
        match std::str::from_utf8(&self.buf) {
            Ok(s) => Ok(Some(Line::Text(s.to_string()))),
            Err(e) => {
                let shown: String = String::from_utf8_lossy(&self.buf)
                    .chars()
                    .take(SHOWN_CHARS)
                    .collect();
                Ok(Some(Line::NotUtf8 {
                    len: self.buf.len(),
                    at: e.valid_up_to(),
                    shown,
                }))
            }
        }
    }

    /// Discard the rest of the current line, its `\n` included: the bytes discarded before
    /// the `\n`, and whether the byte before it was `\r` (`last`: the byte read before the
    /// rest, in case the `\n` comes first).
    fn skip_line(&mut self, last: Option<u8>) -> io::Result<(u64, bool)> {
        let mut skipped = 0u64;
        let mut prev = last;
        loop {
            let chunk = match self.inner.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                return Ok((skipped, false));
            }
            match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => {
                    let before = if i > 0 { Some(chunk[i - 1]) } else { prev };
                    self.inner.consume(i + 1);
                    return Ok((skipped + i as u64, before == Some(b'\r')));
                }
                None => {
                    let n = chunk.len();
                    prev = chunk.last().copied();
                    self.inner.consume(n);
                    skipped += n as u64;
                }
            }
        }
    }
}
