//! Event files read back by a reader written here from the formats' definitions, not
//! from the writer: TFRecord framing with masked CRC-32C, and the `Event` protobuf
//! decoded by `prost` from TensorFlow's field numbers.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use cfzero_trainer::EventWriter;
use cfzero_trainer::tensorboard::{ScalarEvent, read_scalars};
use prost::Message;

/// tensorflow/core/util/event.proto, the fields the writer may use.
#[derive(Clone, PartialEq, Message)]
struct Event {
    #[prost(double, tag = "1")]
    wall_time: f64,
    #[prost(int64, tag = "2")]
    step: i64,
    #[prost(oneof = "What", tags = "3, 5")]
    what: Option<What>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum What {
    #[prost(string, tag = "3")]
    FileVersion(String),
    #[prost(message, tag = "5")]
    Summary(Summary),
}

/// tensorflow/core/framework/summary.proto.
#[derive(Clone, PartialEq, Message)]
struct Summary {
    #[prost(message, repeated, tag = "1")]
    value: Vec<Value>,
}

#[derive(Clone, PartialEq, Message)]
struct Value {
    #[prost(string, tag = "1")]
    tag: String,
    #[prost(oneof = "Kind", tags = "2")]
    value: Option<Kind>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Kind {
    #[prost(float, tag = "2")]
    SimpleValue(f32),
}

/// CRC-32C bit by bit (reflected polynomial 0x82F63B78), with no table to share a
/// mistake with the writer's.
fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0x82F6_3B78 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

/// TFRecord's masking of a CRC.
fn masked(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// The records of a TFRecord file: `u64` length, masked CRC of the length bytes, data,
/// masked CRC of the data, all little-endian. Panics on any bad frame.
fn records(path: &Path) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(path).unwrap();
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        assert!(bytes.len() >= at + 12, "truncated header at {at}");
        let len_bytes = &bytes[at..at + 8];
        assert_eq!(
            masked(crc32c(len_bytes)),
            u32_at(at + 8),
            "length CRC at {at}"
        );
        let len = u64::from_le_bytes(len_bytes.try_into().unwrap()) as usize;
        assert!(bytes.len() >= at + 16 + len, "truncated record at {at}");
        let data = &bytes[at + 12..at + 12 + len];
        assert_eq!(
            masked(crc32c(data)),
            u32_at(at + 12 + len),
            "data CRC at {at}"
        );
        out.push(data.to_vec());
        at += 16 + len;
    }
    out
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn the_test_crc_is_crc32c() {
    // The standard check value of CRC-32C.
    assert_eq!(crc32c(b"123456789"), 0xE306_9283);
}

#[test]
fn scalars_round_trip_through_an_event_file() {
    let dir = tempfile::tempdir().unwrap();
    let scalars: [(&str, u64, f64); 5] = [
        ("loss/total", 1, 2.5),
        ("train/lr", 1, 1e-3),
        ("loss/total", 2, -0.125),
        ("värde/α", 1 << 40, 0.1),
        ("selfplay/resign_threshold", 3, f64::from(f32::MAX)),
    ];
    let start = now();
    let mut writer = EventWriter::create(&dir.path().join("tb")).unwrap();
    for (tag, step, value) in scalars {
        writer.scalar(tag, step, value).unwrap();
    }
    writer.flush().unwrap();
    let end = now();

    let path = writer.path().to_path_buf();
    assert_eq!(path.parent().unwrap(), dir.path().join("tb"));
    let name = path.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("events.out.tfevents."), "{name}");

    let events: Vec<Event> = records(&path)
        .iter()
        .map(|data| Event::decode(data.as_slice()).unwrap())
        .collect();
    assert_eq!(events.len(), 1 + scalars.len());
    for e in &events {
        assert!(
            (start - 1.0..=end + 1.0).contains(&e.wall_time),
            "wall time {} outside [{start}, {end}]",
            e.wall_time
        );
    }
    assert_eq!(
        events[0].what,
        Some(What::FileVersion("brain.Event:2".into()))
    );
    assert_eq!(events[0].step, 0);
    for (event, (tag, step, value)) in events[1..].iter().zip(scalars) {
        assert_eq!(event.step, step as i64);
        let Some(What::Summary(summary)) = &event.what else {
            panic!("not a summary: {event:?}");
        };
        assert_eq!(
            summary.value,
            [Value {
                tag: tag.into(),
                value: Some(Kind::SimpleValue(value as f32)),
            }]
        );
    }

    // The crate's own reader, which other tests rely on, sees the same scalars.
    let expected: Vec<ScalarEvent> = scalars
        .iter()
        .map(|&(tag, step, value)| ScalarEvent {
            tag: tag.into(),
            step,
            value: value as f32,
        })
        .collect();
    assert_eq!(read_scalars(&path).unwrap(), expected);
}

#[test]
fn a_second_writer_adds_a_file_and_a_flipped_byte_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = EventWriter::create(dir.path()).unwrap();
    let b = EventWriter::create(dir.path()).unwrap();
    assert_ne!(a.path(), b.path());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);

    a.scalar("x", 7, 1.5).unwrap();
    drop(a);
    let path = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.as_path() != b.path())
        .unwrap();
    // Dropping the writer flushes what it buffered.
    assert_eq!(records(&path).len(), 2);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 6;
    bytes[last] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let err = read_scalars(&path).unwrap_err();
    assert!(err.to_string().contains("CRC"), "{err}");
}
