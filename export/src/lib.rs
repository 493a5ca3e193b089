//! The Chessformer in other programs' formats: Lc0's weights file ([`lc0`]: a net written for
//! Lc0's `--weights`, and Lc0's attention-body nets read into a [`cfzero_network::Net`]) and
//! ONNX ([`onnx`]: the same graph in standard operators, for Lc0's ONNX backends and other
//! runtimes). The network crate knows nothing of these formats.

pub mod lc0;
pub mod onnx;
