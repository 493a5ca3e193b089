//! Hostile net files: a file's config is metadata, trusted by nothing.
//! Absurd sizes, and a config that claims a far larger net than the file holds, are one-line
//! errors before any net is built: never a libtorch panic or an allocation of gigabytes.

mod net_support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cfzero_network::checkpoint::{
    CONFIG_KEY, CheckpointError, load_net, read_net_config, save_net,
};
use cfzero_network::{Net, NetworkConfig};
use net_support::preset;
use safetensors::SafeTensors;
use tch::Device;

/// The micro net's file with its config metadata replaced by `json`.
fn micro_with_config(dir: &Path, name: &str, json: &str) -> PathBuf {
    let path = dir.join(format!("{name}.safetensors"));
    save_net(&Net::new(&preset("micro"), Device::Cpu).unwrap(), &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let (_, meta) = SafeTensors::read_metadata(&bytes).unwrap();
    let mut metadata = meta.metadata().clone().unwrap();
    metadata.insert(CONFIG_KEY.into(), json.into());
    let spliced = safetensors::serialize(st.tensors(), Some(metadata)).unwrap();
    std::fs::write(&path, spliced).unwrap();
    path
}

/// The micro config as JSON with `key` set to `value`.
fn micro_json(changes: &[(&str, u64)]) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&preset("micro").to_json()).unwrap();
    for (key, value) in changes {
        v[key] = serde_json::json!(value);
    }
    v.to_string()
}

/// Loads `path` and expects a one-line error, quickly (a built net of the claimed size
/// would take minutes, or all memory).
fn rejected(path: &Path) -> String {
    let start = Instant::now();
    let err = match load_net(path, Device::Cpu) {
        Ok(_) => panic!("{} loaded", path.display()),
        Err(e) => e,
    };
    assert!(start.elapsed() < Duration::from_secs(10), "{err}");
    let msg = err.to_string();
    assert!(!msg.contains('\n'), "{msg}");
    msg
}

#[test]
fn absurd_sizes_in_a_net_file_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    for (key, value) in [
        ("d_model", 1u64 << 40),
        ("layers", 1 << 30),
        ("heads", 1 << 20),
        ("dff", u64::from(u32::MAX)),
        ("value_channels", 1 << 24),
    ] {
        let path = micro_with_config(tmp.path(), key, &micro_json(&[(key, value)]));
        let msg = rejected(&path);
        assert!(msg.contains(&format!("`{key}` must be at most")), "{msg}");
        assert!(matches!(
            read_net_config(&path),
            Err(CheckpointError::Corrupt { .. })
        ));
    }
}

#[test]
fn a_config_larger_than_the_stored_weights_is_refused_before_building() {
    let tmp = tempfile::tempdir().unwrap();
    // Within every bound, but 6 billion parameters (24 GB): the file holds 90 thousand.
    let big = micro_json(&[
        ("layers", 32),
        ("d_model", 4096),
        ("heads", 32),
        ("dff", 16384),
    ]);
    let config: NetworkConfig = serde_json::from_str(&big).unwrap();
    config.validate().unwrap();
    let path = micro_with_config(tmp.path(), "big", &big);
    let msg = rejected(&path);
    assert!(msg.contains("describes a net of"), "{msg}");
    // Slightly off (one more layer) is refused too, naming what is missing.
    let path = micro_with_config(tmp.path(), "layers", &micro_json(&[("layers", 2)]));
    let msg = rejected(&path);
    assert!(msg.contains("encoder.1"), "{msg}");
}

#[test]
fn a_net_file_that_fits_still_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let path = micro_with_config(tmp.path(), "same", &preset("micro").to_json());
    assert_eq!(
        load_net(&path, Device::Cpu).unwrap().config,
        preset("micro")
    );
}

/// Writes `net` gzip-compressed to `path`, as Lc0 stores nets.
fn write_pb_gz(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).unwrap();
    std::fs::write(path, gz.finish().unwrap()).unwrap();
}

#[test]
fn lc0_files_are_bounded_before_anything_is_built() {
    use cfzero_export::lc0::proto::{EncoderLayer, Net as NetFile, Weights};
    use cfzero_export::lc0::read_lc0_file;
    use prost::Message;
    let tmp = tempfile::tempdir().unwrap();
    // 300 KB before compression that prost would decode into 100,000 encoder layers.
    let many = NetFile {
        magic: Some(0x1c0),
        weights: Some(Weights {
            encoder: vec![EncoderLayer::default(); 100_000],
            ..Weights::default()
        }),
        ..NetFile::default()
    };
    let path = tmp.path().join("layers.pb.gz");
    write_pb_gz(&path, &many.encode_to_vec());
    let start = Instant::now();
    let err = read_lc0_file(&path, Device::Cpu).unwrap_err().to_string();
    assert!(
        err.contains("`weights.encoder` has 100000 entries"),
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_secs(5));
    // Not gzip at all: one line naming the file.
    let path = tmp.path().join("plain.pb.gz");
    std::fs::write(&path, b"plain text").unwrap();
    let err = read_lc0_file(&path, Device::Cpu).unwrap_err().to_string();
    assert!(err.contains("plain.pb.gz") && err.contains("gzip"), "{err}");
}
