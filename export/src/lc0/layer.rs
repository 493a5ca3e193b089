//! One `Weights.Layer`: its values encoded as LINEAR16 (Lc0's default, 16-bit codes
//! spread over `[min_val, max_val]`) or FLOAT32 (exact), and decoded from any encoding
//! Lc0 reads (LINEAR16, FLOAT16, BFLOAT16, FLOAT32).

use super::proto::Layer;

/// How the values of an exported layer are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LayerEncoding {
    /// 16-bit codes over the layer's range: half the size, read by every Lc0 since 0.30;
    /// a value moves by at most (max - min) / 131070.
    #[default]
    Linear16,
    /// Raw little-endian f32: bit-exact, read by Lc0 0.33 and later.
    Float32,
}

/// `Layer.Encoding` numbers of `net.proto`.
const LINEAR16: i32 = 1;
const FLOAT16: i32 = 2;
const BFLOAT16: i32 = 3;
const FLOAT32: i32 = 4;

/// Encodes `values` as a layer.
pub fn encode(values: &[f32], encoding: LayerEncoding) -> Layer {
    match encoding {
        LayerEncoding::Float32 => Layer {
            params: Some(values.iter().flat_map(|v| v.to_le_bytes()).collect()),
            encoding: Some(FLOAT32),
            ..Layer::default()
        },
        LayerEncoding::Linear16 => {
            let (min, max) = linear16_range(values);
            let range = f64::from(max) - f64::from(min);
            let params = values
                .iter()
                .flat_map(|&v| {
                    let code = if range > 0.0 {
                        ((f64::from(v) - f64::from(min)) / range * 65535.0).round() as u16
                    } else {
                        0
                    };
                    code.to_le_bytes()
                })
                .collect();
            Layer {
                min_val: Some(min),
                max_val: Some(max),
                params: Some(params),
                // Unset means LINEAR16 to every Lc0 version, including those that predate
                // the field.
                encoding: None,
                dims: Vec::new(),
            }
        }
    }
}

/// The `[min_val, max_val]` of a LINEAR16 layer. Usually the values' own range; but zeros
/// must stay exactly zero (the embedding's positional columns, unused biases), and a range
/// across zero generally has no code that decodes to 0. Then the range is
/// `[-2^k, 2^k (1 - 2^-15)]`, on which code 32768 decodes to exactly 0 (as in Lc0's test
/// nets): `-2^k (1 - t)` is exact for a power of two, and `2^k (1 - 2^-15) t` rounds to
/// the same magnitude.
fn linear16_range(values: &[f32]) -> (f32, f32) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    let min = values.iter().copied().fold(f32::INFINITY, f32::min);
    let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if !(min < 0.0 && max > 0.0 && values.contains(&0.0)) {
        return (min, max);
    }
    let bound = (-min).max(max);
    let power = 2f32.powi(bound.log2().ceil() as i32);
    let power = if power < bound { power * 2.0 } else { power };
    (-power, power * (1.0 - 2f32.powi(-15)))
}

/// Why a layer could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayerError {
    /// The encoding number is not one Lc0 defines.
    #[error("unknown layer encoding {0}")]
    UnknownEncoding(i32),
    /// The byte count is not a whole number of values.
    #[error("{bytes} bytes of parameters are not a whole number of {size}-byte values")]
    Ragged {
        /// Bytes in `params`.
        bytes: usize,
        /// Bytes per value.
        size: usize,
    },
}

/// Number of values a layer holds (from its byte count and encoding), without decoding it.
pub fn value_count(layer: &Layer) -> usize {
    let bytes = layer.params.as_ref().map_or(0, Vec::len);
    match layer.encoding {
        Some(FLOAT32) => bytes / 4,
        _ => bytes / 2,
    }
}

/// Decodes a layer's values in float32, as Lc0 does: LINEAR16 codes `u` become
/// `min * (1 - t) + max * t` with `t = u / 65535`.
pub fn decode(layer: &Layer) -> Result<Vec<f32>, LayerError> {
    let bytes = layer.params.as_deref().unwrap_or_default();
    let encoding = layer.encoding.unwrap_or(LINEAR16);
    let size = match encoding {
        LINEAR16 | FLOAT16 | BFLOAT16 => 2,
        FLOAT32 => 4,
        other => return Err(LayerError::UnknownEncoding(other)),
    };
    if !bytes.len().is_multiple_of(size) {
        return Err(LayerError::Ragged {
            bytes: bytes.len(),
            size,
        });
    }
    let (min, max) = (layer.min_val.unwrap_or(0.0), layer.max_val.unwrap_or(0.0));
    let halves = || {
        bytes
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
    };
    Ok(match encoding {
        LINEAR16 => halves()
            .map(|u| {
                let t = f32::from(u) / 65535.0;
                min * (1.0 - t) + max * t
            })
            .collect(),
        FLOAT16 => halves().map(f16_to_f32).collect(),
        BFLOAT16 => halves()
            .map(|u| f32::from_bits(u32::from(u) << 16))
            .collect(),
        _ => bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    })
}

/// IEEE 754 half precision to single (subnormals, infinities and NaN included).
fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((h >> 10) & 0x1f);
    let mantissa = f32::from(h & 0x3ff);
    sign * match exponent {
        0 => mantissa * 2f32.powi(-24),
        31 if mantissa == 0.0 => f32::INFINITY,
        31 => f32::NAN,
        e => (1.0 + mantissa / 1024.0) * 2f32.powi(e - 15),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float32_round_trips_bit_for_bit() {
        let values = [0.1f32, -3.5e-7, 12345.678, f32::MIN_POSITIVE, -0.0];
        let back = decode(&encode(&values, LayerEncoding::Float32)).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&values));
    }

    #[test]
    fn linear16_keeps_the_ends_and_rounds_within_half_a_step() {
        // No exact zero among them, so the range is the values' own.
        let values: Vec<f32> = (0..1000)
            .map(|i| ((i * 37 % 1000) as f32 - 400.5) / 300.0)
            .collect();
        let layer = encode(&values, LayerEncoding::Linear16);
        assert_eq!(layer.min_val, Some(-400.5 / 300.0));
        assert_eq!(layer.max_val, Some(598.5 / 300.0));
        let step = (598.5 + 400.5) / 300.0 / 65535.0;
        let back = decode(&layer).unwrap();
        for (a, b) in values.iter().zip(&back) {
            assert!((a - b).abs() <= step * 0.5 + 1e-6, "{a} -> {b}");
        }
        assert_eq!(
            back[values.iter().position(|&v| v == -400.5 / 300.0).unwrap()],
            -400.5 / 300.0
        );
    }

    #[test]
    fn linear16_codes_decode_with_lc0s_formula() {
        // min -2, max 2: code 0 is -2, 65535 is 2, 32768 is 2 * (2 * 32768 / 65535 - 1).
        let layer = Layer {
            min_val: Some(-2.0),
            max_val: Some(2.0),
            params: Some(
                [0u16, 65535, 32768]
                    .iter()
                    .flat_map(|u| u.to_le_bytes())
                    .collect(),
            ),
            ..Layer::default()
        };
        let t = 32768f32 / 65535.0;
        assert_eq!(
            decode(&layer).unwrap(),
            vec![-2.0, 2.0, -2.0 * (1.0 - t) + 2.0 * t]
        );
    }

    #[test]
    fn zeros_of_a_layer_across_zero_decode_to_exactly_zero() {
        for k in -20..12 {
            let scale = 2f32.powi(k);
            let values = [-0.7 * scale, 0.0, 0.9 * scale, 0.0, 0.3 * scale];
            let layer = encode(&values, LayerEncoding::Linear16);
            let back = decode(&layer).unwrap();
            assert_eq!((back[1], back[3]), (0.0, 0.0), "scale 2^{k}");
            // The range is at most 4 times the values' own.
            let step = (layer.max_val.unwrap() - layer.min_val.unwrap()) / 65535.0;
            for (a, b) in values.iter().zip(&back) {
                assert!(
                    (a - b).abs() <= step * 0.5 * 1.0001,
                    "scale 2^{k}: {a} -> {b}"
                );
            }
        }
        // Layers of one sign keep their own range, zeros included.
        let layer = encode(&[0.0, 0.5, 2.0], LayerEncoding::Linear16);
        assert_eq!((layer.min_val, layer.max_val), (Some(0.0), Some(2.0)));
        let back = decode(&layer).unwrap();
        assert_eq!((back[0], back[2]), (0.0, 2.0));
        let layer = encode(&[0.0, -0.5, -2.0], LayerEncoding::Linear16);
        assert_eq!(decode(&layer).unwrap()[0], 0.0);
    }

    #[test]
    fn a_constant_layer_encodes_as_zero_codes() {
        let layer = encode(&[0.25; 4], LayerEncoding::Linear16);
        assert_eq!(decode(&layer).unwrap(), vec![0.25; 4]);
    }

    #[test]
    fn half_floats_decode() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert!(f16_to_f32(0x7e00).is_nan());
    }

    #[test]
    fn bad_layers_are_refused() {
        let odd = Layer {
            params: Some(vec![1, 2, 3]),
            ..Layer::default()
        };
        assert_eq!(decode(&odd), Err(LayerError::Ragged { bytes: 3, size: 2 }));
        let unknown = Layer {
            encoding: Some(9),
            ..Layer::default()
        };
        assert_eq!(decode(&unknown), Err(LayerError::UnknownEncoding(9)));
    }
}
