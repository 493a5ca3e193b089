//! The input planes as the Chessformer reads them: 64 square tokens of 112 features,
//! token-major (`out[sq * 112 + plane]`), with the halfmove clock scaled by 1/99.

use cfzero_chess::{ChessState, HistoryFill};

use super::planes::{InputPlanes, encode_planes, encode_planes_filled};
use super::{HALFMOVE_PLANE, HALFMOVE_SCALE, PLANES};

/// Number of floats of one position's tokens (64 squares x 112 planes).
pub const TOKEN_FLOATS: usize = 64 * PLANES;

impl InputPlanes {
    /// Writes the planes as 64 tokens of 112 features into `out`
    /// (`out[sq * 112 + plane]`); plane 109 becomes halfmove / 99.
    ///
    /// # Panics
    /// If `out` is shorter than [`TOKEN_FLOATS`].
    pub fn write_tokens(&self, out: &mut [f32]) {
        let out = &mut out[..TOKEN_FLOATS];
        out.fill(0.0);
        for (plane, (&mask, &value)) in self.masks.iter().zip(&self.values).enumerate() {
            let value = if plane == HALFMOVE_PLANE {
                value / HALFMOVE_SCALE
            } else {
                value
            };
            if mask == u64::MAX {
                // Full planes (aux planes, repetitions) are common: skip the bit scan.
                for sq in 0..64 {
                    out[sq * PLANES + plane] = value;
                }
            } else {
                let mut bits = mask;
                while bits != 0 {
                    let sq = bits.trailing_zeros() as usize;
                    out[sq * PLANES + plane] = value;
                    bits &= bits - 1;
                }
            }
        }
    }
}

/// Encodes `state` straight into tokens (see [`InputPlanes::write_tokens`]).
pub fn encode_tokens(state: &ChessState, out: &mut [f32]) {
    encode_planes(state).write_tokens(out);
}

/// [`encode_tokens`] with the history before a FEN's position filled as `fill` says.
pub fn encode_tokens_filled(state: &ChessState, fill: HistoryFill, out: &mut [f32]) {
    encode_planes_filled(state, fill).write_tokens(out);
}
