//! Reading UCI lines from a stream that may misbehave: bounded in length (a stream of bytes
//! without a newline must not grow memory), bytes that are not UTF-8 replaced rather than
//! ending the stream. Used by the UCI engine (its stdin) and the UCI client (an engine's
//! stdout).

use std::io::{self, BufRead};

/// Longest line taken (a UCI line is a few kilobytes at most, even a `position` with a
/// whole game's moves); the rest of a longer one is dropped, so that a stream without
/// newlines cannot grow a reader's memory.
pub const MAX_LINE: usize = 1 << 20;

/// Reads one line into `out` (cleared first), keeping at most `max` bytes: the rest of a
/// longer line is read and dropped. `None` at the end of the input; otherwise whether the
/// line was too long (then `out` holds nothing, as the line is not a command).
pub fn read_line_bounded(
    input: &mut impl BufRead,
    max: usize,
    out: &mut Vec<u8>,
) -> io::Result<Option<bool>> {
    out.clear();
    let mut too_long = false;
    let mut read_any = false;
    loop {
        let buf = match input.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(read_any.then_some(too_long));
        }
        read_any = true;
        let (chunk, newline) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        let n = chunk.len();
        if !too_long {
            if out.len() + n > max {
                too_long = true;
                out.clear();
            } else {
                out.extend_from_slice(chunk);
            }
        }
        input.consume(n);
        if newline {
            return Ok(Some(too_long));
        }
    }
}
