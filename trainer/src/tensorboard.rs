//! TensorBoard event files: scalar summaries written as TFRecords of `Event` protobufs.
//!
//! The format is small enough to write directly: each record is the payload length
//! (`u64`), its masked CRC-32C, the payload, and the payload's masked CRC-32C. The payload
//! is an `Event { wall_time = 1 (double), step = 2 (int64), file_version = 3 (string),
//! summary = 5 }` with `Summary { value = 1 }` and `Value { tag = 1, simple_value = 2 (float) }`.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Appends scalar summaries to an event file in a log directory.
#[derive(Debug)]
pub struct EventWriter {
    out: BufWriter<File>,
    path: PathBuf,
}

impl EventWriter {
    /// Creates `dir` if needed and a new event file in it (TensorBoard reads every
    /// `events.out.tfevents.*` file of a directory, so a resumed run adds a file).
    pub fn create(dir: &Path) -> io::Result<EventWriter> {
        fs::create_dir_all(dir)?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let name = format!(
            "events.out.tfevents.{}.cfzero.{}.{}",
            now.as_secs(),
            std::process::id(),
            now.subsec_nanos()
        );
        let path = dir.join(name);
        let mut writer = EventWriter {
            out: BufWriter::new(File::create(&path)?),
            path,
        };
        let mut event = Vec::new();
        put_double(&mut event, 1, wall_time());
        put_bytes(&mut event, 3, b"brain.Event:2");
        writer.write_record(&event)?;
        writer.out.flush()?;
        Ok(writer)
    }

    /// The event file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes one scalar `value` under `tag` at `step`.
    pub fn scalar(&mut self, tag: &str, step: u64, value: f64) -> io::Result<()> {
        let mut val = Vec::with_capacity(tag.len() + 8);
        put_bytes(&mut val, 1, tag.as_bytes());
        put_float(&mut val, 2, value as f32);
        let mut summary = Vec::with_capacity(val.len() + 4);
        put_bytes(&mut summary, 1, &val);
        let mut event = Vec::with_capacity(summary.len() + 24);
        put_double(&mut event, 1, wall_time());
        put_varint_field(&mut event, 2, step);
        put_bytes(&mut event, 5, &summary);
        self.write_record(&event)
    }

    /// Pushes buffered events to the file, so that TensorBoard sees them now.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    fn write_record(&mut self, data: &[u8]) -> io::Result<()> {
        let len = (data.len() as u64).to_le_bytes();
        self.out.write_all(&len)?;
        self.out.write_all(&masked_crc32c(&len).to_le_bytes())?;
        self.out.write_all(data)?;
        self.out.write_all(&masked_crc32c(data).to_le_bytes())
    }
}

fn wall_time() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_varint_field(out: &mut Vec<u8>, field: u64, v: u64) {
    put_varint(out, field << 3);
    put_varint(out, v);
}

fn put_double(out: &mut Vec<u8>, field: u64, v: f64) {
    put_varint(out, (field << 3) | 1);
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_float(out: &mut Vec<u8>, field: u64, v: f32) {
    put_varint(out, (field << 3) | 5);
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    put_varint(out, (field << 3) | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// CRC-32C (Castagnoli), bitwise over a 256-entry table built at compile time.
const CRC32C_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0x82F6_3B78 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// CRC-32C of `data`.
pub fn crc32c(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c = CRC32C_TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

/// TFRecord's masked CRC: rotated and offset so that CRCs of CRCs stay distinct.
pub fn masked_crc32c(data: &[u8]) -> u32 {
    crc32c(data).rotate_right(15).wrapping_add(0xa282_ead8)
}

/// A scalar read back from an event file.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalarEvent {
    /// Summary tag.
    pub tag: String,
    /// Step.
    pub step: u64,
    /// Value.
    pub value: f32,
}

/// Reads the scalars of an event file, checking every record's CRCs (for tests and tools).
pub fn read_scalars(path: &Path) -> io::Result<Vec<ScalarEvent>> {
    let bytes = fs::read(path)?;
    let bad = |what: &str| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {what}", path.display()),
        )
    };
    let mut at = 0;
    let mut out = Vec::new();
    while at < bytes.len() {
        let header = bytes
            .get(at..at + 12)
            .ok_or_else(|| bad("truncated record header"))?;
        let len = u64::from_le_bytes(header[..8].try_into().expect("8 bytes")) as usize;
        if masked_crc32c(&header[..8])
            != u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"))
        {
            return Err(bad("length CRC mismatch"));
        }
        let data = bytes
            .get(at + 12..at + 12 + len)
            .ok_or_else(|| bad("truncated record"))?;
        let crc = bytes
            .get(at + 12 + len..at + 16 + len)
            .ok_or_else(|| bad("truncated CRC"))?;
        if masked_crc32c(data) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
            return Err(bad("data CRC mismatch"));
        }
        parse_event(data, &mut out).ok_or_else(|| bad("malformed event"))?;
        at += 16 + len;
    }
    Ok(out)
}

fn get_varint(data: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *data.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

/// Visits the fields of a protobuf message: (field, wire type, payload bytes or varint).
fn fields(data: &[u8], mut visit: impl FnMut(u64, &[u8], u64)) -> Option<()> {
    let mut at = 0;
    while at < data.len() {
        let key = get_varint(data, &mut at)?;
        let (field, wire) = (key >> 3, key & 7);
        match wire {
            0 => {
                let v = get_varint(data, &mut at)?;
                visit(field, &[], v);
            }
            1 | 5 => {
                let n = if wire == 1 { 8 } else { 4 };
                visit(field, data.get(at..at + n)?, 0);
                at += n;
            }
            2 => {
                let n = get_varint(data, &mut at)? as usize;
                visit(field, data.get(at..at + n)?, 0);
                at += n;
            }
            _ => return None,
        }
    }
    Some(())
}

fn parse_event(data: &[u8], out: &mut Vec<ScalarEvent>) -> Option<()> {
    let mut step = 0;
    let mut summaries = Vec::new();
    fields(data, |f, bytes, v| match f {
        2 => step = v,
        5 => summaries.push(bytes.to_vec()),
        _ => {}
    })?;
    for summary in summaries {
        let mut values = Vec::new();
        fields(&summary, |f, bytes, _| {
            if f == 1 {
                values.push(bytes.to_vec());
            }
        })?;
        for value in values {
            let (mut tag, mut scalar) = (String::new(), None);
            fields(&value, |f, bytes, _| match f {
                1 => tag = String::from_utf8_lossy(bytes).into_owned(),
                2 if bytes.len() == 4 => {
                    scalar = Some(f32::from_le_bytes(bytes.try_into().expect("4 bytes")))
                }
                _ => {}
            })?;
            out.push(ScalarEvent {
                tag,
                step,
                value: scalar?,
            });
        }
    }
    Some(())
}
