//! Limits checked before an Lc0 file is decoded: the decompressed size, and the number of
//! elements of every repeated field of `Weights`, counted on the protobuf wire format without
//! building anything. prost allocates a whole message per element of a repeated field, so a
//! few megabytes of empty `encoder` entries would otherwise ask for tens of gigabytes.

use crate::lc0::Lc0Finding;
use std::io::Read;

use flate2::read::GzDecoder;

use cfzero_network::config::MAX_LAYERS;

/// Largest decompressed net file read: four times the largest published Lc0 net's
/// (BT4, about 190 M weights at 16 bits, under 500 MB).
pub const MAX_DECOMPRESSED: u64 = 2 << 30;

/// Most residual blocks a file may list (cfzero refuses them anyway, but only after
/// decoding): as many as encoder layers.
const MAX_RESIDUAL: usize = MAX_LAYERS;

/// Decompresses `compressed` (gzip), refusing more than `max` bytes of output.
pub fn gunzip_bounded(compressed: &[u8], max: u64) -> Result<Vec<u8>, Lc0Finding> {
    let mut out = Vec::new();
    GzDecoder::new(compressed)
        .take(max + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("not gzip data ({e})"))?;
    if out.len() as u64 > max {
        return Err(format!("it decompresses to more than {max} bytes").into());
    }
    Ok(out)
}

/// Checks the element counts of the repeated fields of `Net.weights` (field 10):
/// `encoder` (27) and `pol_encoder` (21) at most [`MAX_LAYERS`], `residual` (2) at most as
/// many, before prost decodes `bytes`.
pub fn check_repeated_fields(bytes: &[u8]) -> Result<(), Lc0Finding> {
    let mut counts = [0usize; 3];
    for field in Fields::new(bytes) {
        let (number, value) = field?;
        if number != 10 {
            continue;
        }
        let Value::Bytes(weights) = value else {
            return Err("`weights` is not a message".into());
        };
        for inner in Fields::new(weights) {
            let (number, _) = inner?;
            match number {
                27 => counts[0] += 1,
                21 => counts[1] += 1,
                2 => counts[2] += 1,
                _ => {}
            }
        }
    }
    for (name, count, max) in [
        ("encoder", counts[0], MAX_LAYERS),
        ("pol_encoder", counts[1], MAX_LAYERS),
        ("residual", counts[2], MAX_RESIDUAL),
    ] {
        if count > max {
            return Err(format!("`weights.{name}` has {count} entries (at most {max})").into());
        }
    }
    Ok(())
}

/// A field's value as the wire format carries it (only what the checks need).
enum Value<'a> {
    /// Varint, fixed32 or fixed64: not looked at.
    Scalar,
    /// Length-delimited: bytes, a string, a message or packed values.
    Bytes(&'a [u8]),
}

/// The top-level fields of a protobuf message, as (field number, value), without decoding
/// any of them.
struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Fields { rest: bytes }
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self
                .rest
                .split_first()
                .ok_or("a varint runs past the end")?;
            self.rest = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("a varint is longer than 10 bytes".into())
    }

    fn skip(&mut self, n: u64) -> Result<&'a [u8], String> {
        let n = usize::try_from(n).map_err(|_| "a length does not fit in memory")?;
        if n > self.rest.len() {
            return Err("a field runs past the end of its message".into());
        }
        let (taken, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(taken)
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u64, Value<'a>), String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let item = (|| {
            let key = self.varint()?;
            let number = key >> 3;
            let value = match key & 7 {
                0 => {
                    self.varint()?;
                    Value::Scalar
                }
                1 => {
                    self.skip(8)?;
                    Value::Scalar
                }
                2 => {
                    let len = self.varint()?;
                    Value::Bytes(self.skip(len)?)
                }
                5 => {
                    self.skip(4)?;
                    Value::Scalar
                }
                other => return Err(format!("wire type {other} (groups are not used)")),
            };
            Ok((number, value))
        })();
        if item.is_err() {
            // One error ends the walk.
            self.rest = &[];
        }
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::Compression;
    use flate2::write::GzEncoder;
    use prost::Message;

    use super::*;
    use crate::lc0::proto::{EncoderLayer, Net, Weights};

    #[test]
    fn a_gzip_bomb_is_refused_at_the_bound() {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
        encoder.write_all(&vec![0u8; 8 << 20]).unwrap();
        let bomb = encoder.finish().unwrap();
        assert!(
            bomb.len() < 64 << 10,
            "8 MB of zeros compress to {} bytes",
            bomb.len()
        );
        let err = gunzip_bounded(&bomb, 1 << 20).unwrap_err();
        assert!(err.0.contains("more than 1048576 bytes"), "{err}");
        assert_eq!(gunzip_bounded(&bomb, 8 << 20).unwrap().len(), 8 << 20);
        assert!(
            gunzip_bounded(b"not gzip", 100)
                .unwrap_err()
                .0
                .contains("gzip")
        );
    }

    #[test]
    fn repeated_fields_are_counted_before_decoding() {
        let net = |layers: usize| Net {
            magic: Some(1),
            weights: Some(Weights {
                encoder: vec![EncoderLayer::default(); layers],
                ..Weights::default()
            }),
            ..Net::default()
        };
        assert_eq!(
            check_repeated_fields(&net(MAX_LAYERS).encode_to_vec()),
            Ok(())
        );
        // Empty entries cost three bytes each on the wire and a whole message each decoded.
        let many = net(100_000).encode_to_vec();
        assert!(many.len() < 310_000, "{} bytes", many.len());
        let err = check_repeated_fields(&many).unwrap_err();
        assert!(
            err.0.contains("`weights.encoder` has 100000 entries"),
            "{err}"
        );
        // A length past the end is caught too.
        let mut cut = net(3).encode_to_vec();
        cut.truncate(cut.len() - 1);
        assert!(check_repeated_fields(&cut).is_err());
    }
}
