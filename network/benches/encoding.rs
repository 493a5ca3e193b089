//! Encoding speed: the 112 planes of a position with 8 steps of history, and the same
//! position written as the network's 64 input tokens.

use std::hint::black_box;

use cfzero_chess::ChessState;
use cfzero_network::encoding::{TOKEN_FLOATS, encode_planes, encode_tokens};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// A middlegame reached by moves, so that all 8 history steps hold real positions.
const MOVES: &str = "e2e4 e7e5 g1f3 b8c6 f1b5 a7a6 b5a4 g8f6 e1g1 f8e7 f1e1 b7b5 a4b3 d7d6";

fn position() -> ChessState {
    let mut state = ChessState::new();
    state.play_uci_line(MOVES).expect("legal moves");
    state
}

fn planes(c: &mut Criterion) {
    let state = position();
    let mut group = c.benchmark_group("encoding");
    group.throughput(Throughput::Elements(1));
    group.bench_function("planes_with_history", |b| {
        b.iter(|| black_box(encode_planes(black_box(&state))))
    });
    let mut tokens = vec![0f32; 64 * TOKEN_FLOATS];
    group.bench_function("tokens_with_history", |b| {
        b.iter(|| encode_tokens(black_box(&state), black_box(&mut tokens)))
    });
    group.finish();
}

criterion_group!(benches, planes);
criterion_main!(benches);
