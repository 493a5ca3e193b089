//! `cfzero import` and `cfzero export` from the command line: an Lc0 reference net goes in,
//! trains one generation with `train --init-from`, goes back out to Lc0's format and
//! re-imports with the same shape; the native export is plain safetensors plus JSON; bad
//! input exits with code 2 and one line.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};

use common::*;

fn fails_with_2(args: &[&str]) -> String {
    let out = cfzero(args).output().expect("cfzero runs");
    assert_eq!(out.status.code(), Some(2), "cfzero {args:?}: {out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    err
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A freshly initialised `micro` net (generation 0 of a run under `dir`).
fn fresh_micro_net(dir: &Path) -> PathBuf {
    let run = dir.join("run");
    train_run(&micro_config(), &run, 0, &[]);
    run.join("nets/gen-0000.safetensors")
}

#[test]
fn an_lc0_net_imports_trains_and_exports_back() {
    let tmp = tempfile::tempdir().unwrap();
    let net = tmp.path().join("imported.safetensors");
    let config = tmp.path().join("imported.toml");
    let out = cfzero_ok(&[
        "import",
        "--lc0",
        "tests/data/lc0/bt-smolgen.pb.gz",
        "--out",
        s(&net),
        "--config-out",
        s(&config),
        "--base-config",
        "configs/micro.toml",
    ]);
    assert!(
        out.contains("2 layers, d_model 64, 4 heads, dff 128, smolgen"),
        "{out}"
    );
    let imported = network_config(&config);
    check_net(&net, &imported);
    assert!(imported.qkv_bias && !imported.outputs.q && imported.outputs.moves_left);

    // One generation of training from the imported net, with micro's run settings.
    let run = tmp.path().join("run");
    train_run(&config, &run, 1, &["--init-from", s(&net)]);
    let trained = run.join("nets/gen-0001.safetensors");
    check_net(&trained, &imported);

    // Back to Lc0 (exact floats), and in again: the same shape.
    let lc0 = tmp.path().join("trained.pb.gz");
    let out = cfzero_ok(&[
        "export",
        "--net",
        s(&trained),
        "--format",
        "lc0",
        "--out",
        s(&lc0),
        "--encoding",
        "float32",
    ]);
    assert!(out.contains("FLOAT32"), "{out}");
    let mut head = [0u8; 2];
    std::fs::File::open(&lc0)
        .unwrap()
        .read_exact(&mut head)
        .unwrap();
    assert_eq!(head, [0x1f, 0x8b], "gzip magic");
    let again = tmp.path().join("again.safetensors");
    cfzero_ok(&["import", "--lc0", s(&lc0), "--out", s(&again)]);
    check_net(&again, &imported);
}

#[test]
fn native_export_is_safetensors_and_a_json_config() {
    let tmp = tempfile::tempdir().unwrap();
    let net = fresh_micro_net(tmp.path());
    let dir = tmp.path().join("native");
    cfzero_ok(&[
        "export",
        "--net",
        s(&net),
        "--format",
        "native",
        "--out",
        s(&dir),
    ]);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    let micro = network_config(&micro_config());
    assert_eq!(json["d_model"], micro.d_model);
    assert_eq!(json["layers"], micro.layers);
    // A plain safetensors file: 8-byte header length, JSON header naming every tensor.
    let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    assert_eq!(header["embed.w"]["dtype"], "F32");
    assert_eq!(header["embed.w"]["shape"], serde_json::json!([16, 112]));
    check_net(&dir.join("model.safetensors"), &micro);
}

#[test]
fn bad_input_is_refused_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let shaw = fresh_micro_net(tmp.path());
    let out = tmp.path().join("x.pb.gz");
    let err = fails_with_2(&[
        "export",
        "--net",
        s(&shaw),
        "--format",
        "lc0",
        "--out",
        s(&out),
    ]);
    assert!(err.contains("lc0-bt-tiny"), "{err}");
    assert!(!out.exists());

    let garbage = tmp.path().join("garbage.pb.gz");
    std::fs::write(&garbage, "not a net").unwrap();
    let err = fails_with_2(&[
        "import",
        "--lc0",
        s(&garbage),
        "--out",
        s(&tmp.path().join("y")),
    ]);
    assert!(err.contains("not a valid Lc0 net"), "{err}");
    fails_with_2(&[
        "import",
        "--lc0",
        "no/such/file.pb.gz",
        "--out",
        "y.safetensors",
    ]);
    fails_with_2(&[
        "export",
        "--net",
        "no/such.safetensors",
        "--format",
        "native",
        "--out",
        "z",
    ]);
}
