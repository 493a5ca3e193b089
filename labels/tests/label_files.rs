//! Label files against known answers: they survive a round trip (labels with and without the
//! game's plies before them), cut a torn tail and refuse damage.

use cfzero_labels::label_file::{
    Label, LabelEntry, LabelFileError, LabelHeader, LabelHistory, LabelMove, LabelReader,
    LabelWriter,
};
use cfzero_labels::{ActionValues, Method};

fn header() -> LabelHeader {
    LabelHeader {
        engine: "stockfish".into(),
        options: vec![("Threads".into(), "1".into())],
        limit: "100 nodes".into(),
        method: Method::MultiPv,
        source: "epd:x.epd".into(),
        action_values: ActionValues::Centipawns,
        split: None,
    }
}

/// A probability the file keeps exactly (a multiple of 1/65535).
fn q(k: u16) -> f32 {
    f32::from(k) / 65535.0
}

fn sample_entries() -> Vec<LabelEntry> {
    vec![
        LabelEntry::Label(Label {
            fen: "k7/8/8/8/8/8/8/KQ6 b - - 0 1".into(),
            plies_left: Some(17),
            wdl: [0.0, q(16384), q(49151)],
            moves: vec![(LabelMove(12 | 34 << 6), q(8192))],
            best: 0,
            history: None,
        }),
        LabelEntry::Skipped {
            fen: "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1".into(),
            reason: "no legal move".into(),
        },
        LabelEntry::Label(Label {
            fen: "8/8/8/8/8/8/8/K6k w - - 0 1".into(),
            plies_left: None,
            wdl: [q(32768), q(32767), 0.0],
            moves: vec![(LabelMove(1), 1.0), (LabelMove(2 | 4 << 12), 0.0)],
            best: 1,
            // A label with the game's plies before it is an entry of its own kind (2).
            history: Some(LabelHistory {
                root_fen: "8/8/8/8/8/8/8/K5k1 b - - 0 1".into(),
                moves: vec![LabelMove(6 | 7 << 6)],
            }),
        }),
    ]
}

#[test]
fn label_files_round_trip_cut_torn_tails_and_refuse_damage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.cfl");
    let r = LabelWriter::open(&path, &header()).unwrap();
    assert_eq!((r.entries, r.cut), (0, false));
    let mut w = r.writer;
    for e in &sample_entries() {
        w.append(e).unwrap();
    }
    drop(w);
    let read = |path: &std::path::Path| {
        let mut r = LabelReader::open(path).unwrap();
        let mut v = Vec::new();
        while let Some(e) = r.next_entry().unwrap() {
            v.push(e);
        }
        (v, r.torn())
    };
    assert_eq!(read(&path), (sample_entries(), false));
    let whole = std::fs::read(&path).unwrap();

    // A kill in the middle of a write: the reader stops before it, the writer cuts it.
    let mut torn = whole.clone();
    torn.extend_from_slice(&[40, 0, 0, 0, 0, 1, 2]);
    std::fs::write(&path, &torn).unwrap();
    assert_eq!(read(&path), (sample_entries(), true));
    let r = LabelWriter::open(&path, &header()).unwrap();
    assert_eq!((r.entries, r.cut), (3, true));
    drop(r);
    assert_eq!(std::fs::read(&path).unwrap(), whole);

    // Another teacher or budget is refused.
    let mut other = header();
    other.limit = "200 nodes".into();
    assert!(matches!(
        LabelWriter::open(&path, &other),
        Err(LabelFileError::OtherSettings { .. })
    ));
    // A flipped byte inside an entry, an absurd length, a foreign file: errors.
    let mut bad = whole.clone();
    let n = bad.len();
    bad[n - 10] ^= 1;
    std::fs::write(&path, &bad).unwrap();
    let mut r = LabelReader::open(&path).unwrap();
    r.next_entry().unwrap();
    r.next_entry().unwrap();
    let e = r.next_entry().unwrap_err().to_string();
    assert!(e.contains("checksum mismatch"), "{e}");
    assert!(LabelWriter::open(&path, &header()).is_err());
    let mut bad = whole.clone();
    // The first entry follows the header frame: magic, length, JSON, CRC.
    let header_len = u32::from_le_bytes(whole[8..12].try_into().unwrap()) as usize;
    let first_entry = 8 + 4 + header_len + 4;
    bad[first_entry..first_entry + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(&path, &bad).unwrap();
    let mut r = LabelReader::open(&path).unwrap();
    assert!(
        r.next_entry()
            .unwrap_err()
            .to_string()
            .contains("more than")
    );
    std::fs::write(&path, b"PK\x03\x04 not labels").unwrap();
    assert!(
        LabelReader::open(&path)
            .unwrap_err()
            .to_string()
            .contains("not a cfzero label file")
    );
}

#[test]
fn a_file_from_before_action_values_reads_as_expected_scores_and_is_not_appended_to() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.cfl");
    // The header as files before the `action_values` key were written.
    let json = br#"{"engine":"stockfish","options":[["Threads","1"]],"limit":"100 nodes","method":"multi_pv","source":"epd:x.epd"}"#;
    let mut bytes = b"CFZLBL01".to_vec();
    bytes.extend_from_slice(&(json.len() as u32).to_le_bytes());
    bytes.extend_from_slice(json);
    bytes.extend_from_slice(&crc32fast::hash(json).to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let reader = LabelReader::open(&path).unwrap();
    assert_eq!(
        reader.header(),
        &LabelHeader {
            action_values: ActionValues::ExpectedScore,
            ..header()
        }
    );
    // A writer of centipawn action values starts no mixed file.
    match LabelWriter::open(&path, &header()) {
        Err(LabelFileError::OtherSettings { found, wanted, .. }) => {
            assert!(found.contains("expected_score"), "{found}");
            assert!(wanted.contains("centipawns"), "{wanted}");
        }
        other => panic!("{other:?}"),
    }
}
