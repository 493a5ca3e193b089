//! Hostile record files: every allocation of the decoder is
//! bounded by what the input can really hold, so a file of a few hundred bytes never
//! requests megabytes, let alone the gigabytes its header or counts may claim. The largest
//! single allocation is measured with a counting allocator (one test in this binary, so
//! that no other test allocates meanwhile).

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use cfzero_selfplay::record::{RECORD_MAGIC, RECORD_VERSION, decode_records, encode_records};
use cfzero_selfplay::{GameRecord, GameResult, PositionRecord, Termination};

/// The system allocator, noting the largest request while armed.
struct Counting;

static ARMED: AtomicBool = AtomicBool::new(false);
static LARGEST: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if ARMED.load(Ordering::Relaxed) {
            LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        }
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if ARMED.load(Ordering::Relaxed) {
            LARGEST.fetch_max(new_size, Ordering::Relaxed);
        }
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Decodes `bytes`, expecting an error; the error and the largest allocation meanwhile.
fn decode_measured(bytes: &[u8]) -> (String, usize) {
    LARGEST.store(0, Ordering::Relaxed);
    ARMED.store(true, Ordering::Relaxed);
    let result = decode_records(bytes, Path::new("hostile.cfzg"));
    ARMED.store(false, Ordering::Relaxed);
    let err = result.expect_err("a hostile file decodes").to_string();
    (err, LARGEST.load(Ordering::Relaxed))
}

/// A record file around `payload` with the given header counts and a valid checksum.
fn file(games: u32, payload_len: u32, payload: &[u8]) -> Vec<u8> {
    let compressed = zstd::bulk::compress(payload, 3).unwrap();
    let mut out = RECORD_MAGIC.to_vec();
    out.push(RECORD_VERSION);
    out.extend_from_slice(&[0, 0, 0]);
    out.extend_from_slice(&games.to_le_bytes());
    out.extend_from_slice(&payload_len.to_le_bytes());
    out.extend_from_slice(&(compressed.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&compressed).to_le_bytes());
    out.extend_from_slice(&compressed);
    out
}

/// The payload of one game's header claiming `positions` positions, then `zeros` zero bytes.
fn game_claiming(positions: u32, zeros: usize) -> Vec<u8> {
    let mut p = vec![0, 0]; // no start FEN
    p.push(1); // a draw
    p.push(0); // the first termination
    p.extend_from_slice(&0u32.to_le_bytes());
    p.extend_from_slice(&positions.to_le_bytes());
    p.resize(p.len() + zeros, 0);
    p
}

#[test]
fn small_hostile_files_never_request_large_allocations() {
    // A well-formed file decodes (and shows the allocator is in place).
    let game = GameRecord {
        start_fen: None,
        result: GameResult::Draw,
        termination: Termination::MAX_PLIES,
        generation: 1,
        positions: vec![PositionRecord {
            played: 0,
            policy: vec![65535],
            network_q: 0.0,
            root_q: 0.0,
            root_d: 0.0,
            best: 0,
            best_d: 0.0,
            best_q: 0.0,
            played_q: 0.0,
            policy_q: 0.0,
            st: 0.0,
            surprise: 0.0,
        }],
    };
    let good = encode_records(std::slice::from_ref(&game));
    assert_eq!(
        decode_records(&good, Path::new("good.cfzg")).unwrap(),
        [game]
    );

    // A header that claims a payload of almost 1 GiB for 20 compressed bytes.
    let bytes = file(1, (1 << 30) - 1, &game_claiming(0, 0));
    assert!(bytes.len() < 100);
    let (err, largest) = decode_measured(&bytes);
    assert!(err.contains("header says"), "{err}");
    assert!(largest < 1 << 20, "{err}: allocated {largest} bytes");

    // One game claiming a million positions in a payload of 1 MB of zeros (which holds at
    // most 65 thousand): 60 MB of positions, for a file of a few hundred bytes.
    let payload = game_claiming(1_000_000, 1 << 20);
    let bytes = file(1, payload.len() as u32, &payload);
    assert!(bytes.len() < 1000, "{}", bytes.len());
    let (err, largest) = decode_measured(&bytes);
    assert!(err.contains("position count 1000000"), "{err}");
    // The decompressed payload itself (1 MB) is the largest allocation there may be.
    assert!(
        largest <= 2 * payload.len(),
        "{err}: allocated {largest} bytes"
    );

    // Four billion games in the same payload.
    let bytes = file(u32::MAX, payload.len() as u32, &payload);
    let (err, largest) = decode_measured(&bytes);
    assert!(err.contains("game count"), "{err}");
    assert!(
        largest <= 2 * payload.len(),
        "{err}: allocated {largest} bytes"
    );
}
