//! Checkpoints: bit-exact round trips and clear errors on bad files.

mod net_support;

use cfzero_network::checkpoint::{
    CheckpointError, load_net, load_optimizer, load_weights_into, read_net_config, save_net,
    save_optimizer,
};
use cfzero_network::optim::{NAdam, NAdamConfig};
use cfzero_network::{LossWeights, Net, loss};
use net_support::{preset, synthetic_batch};
use safetensors::SafeTensors;
use tch::Device;

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("cfzero-ckpt-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn bits(net: &Net) -> Vec<(String, Vec<u32>)> {
    let mut v: Vec<(String, Vec<u32>)> = net
        .vs
        .variables()
        .into_iter()
        .map(|(n, t)| {
            (
                n,
                Vec::<f32>::try_from(t.view([-1]))
                    .unwrap()
                    .iter()
                    .map(|x| x.to_bits())
                    .collect(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn net_round_trip_is_bit_exact() {
    let dir = temp_dir("roundtrip");
    for name in ["micro", "lc0-bt-tiny"] {
        tch::manual_seed(1);
        let net = Net::new(&preset(name), Device::Cpu).unwrap();
        let path = dir.join(format!("{name}.safetensors"));
        save_net(&net, &path).unwrap();
        let loaded = load_net(&path, Device::Cpu).unwrap();
        assert_eq!(loaded.config, net.config);
        assert_eq!(bits(&loaded), bits(&net));
        assert_eq!(read_net_config(&path).unwrap(), net.config);
        tch::manual_seed(2);
        let mut other = Net::new(&preset(name), Device::Cpu).unwrap();
        assert_ne!(bits(&other), bits(&net));
        load_weights_into(&mut other, &path).unwrap();
        assert_eq!(bits(&other), bits(&net));
    }
    // No temporary files are left behind.
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| n.to_string_lossy().ends_with(".safetensors")),
        "{names:?}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn truncated_file_is_a_clear_error() {
    let dir = temp_dir("truncated");
    let net = Net::new(&preset("micro"), Device::Cpu).unwrap();
    let path = dir.join("net.safetensors");
    save_net(&net, &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    for cut in [4, 100, bytes.len() - 1] {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let err = load_net(&path, Device::Cpu).unwrap_err();
        assert!(matches!(err, CheckpointError::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains("net.safetensors"), "{err}");
    }
    let missing = load_net(&dir.join("nope.safetensors"), Device::Cpu).unwrap_err();
    assert!(matches!(missing, CheckpointError::Io { .. }));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn shape_or_config_mismatch_is_a_clear_error_and_loads_nothing() {
    let dir = temp_dir("mismatch");
    let tiny = Net::new(&preset("tiny"), Device::Cpu).unwrap();
    let path = dir.join("tiny.safetensors");
    save_net(&tiny, &path).unwrap();
    let mut micro = Net::new(&preset("micro"), Device::Cpu).unwrap();
    let before = bits(&micro);
    let err = load_weights_into(&mut micro, &path).unwrap_err();
    assert!(matches!(err, CheckpointError::Mismatch { .. }), "{err}");
    assert_eq!(bits(&micro), before);

    // A file whose config says micro but whose policy tensors are narrower (d_pol 8): the
    // shapes are checked against the config and nothing is loaded.
    let mut cfg = preset("micro");
    cfg.d_pol = 8;
    let narrow_path = dir.join("narrow.safetensors");
    save_net(&Net::new(&cfg, Device::Cpu).unwrap(), &narrow_path).unwrap();
    let bytes = std::fs::read(&narrow_path).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let (_, meta) = SafeTensors::read_metadata(&bytes).unwrap();
    let mut metadata = meta.metadata().clone().unwrap();
    metadata.insert("cfzero.network_config".into(), preset("micro").to_json());
    let spliced = safetensors::serialize(st.tensors(), Some(metadata)).unwrap();
    std::fs::write(&narrow_path, spliced).unwrap();
    let err = load_weights_into(&mut micro, &narrow_path).unwrap_err();
    assert!(matches!(err, CheckpointError::Mismatch { .. }), "{err}");
    assert!(err.to_string().contains("shape"), "{err}");
    assert_eq!(bits(&micro), before);
    assert!(load_net(&narrow_path, Device::Cpu).is_err());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn optimizer_state_round_trip_resumes_exactly() {
    let dir = temp_dir("optimizer");
    tch::manual_seed(3);
    let net = Net::new(&preset("micro"), Device::Cpu).unwrap();
    let batch = synthetic_batch(4, 10, 4);
    let mut opt = NAdam::new(net.vs.trainable_variables(), NAdamConfig::default());
    let step = |opt: &mut NAdam, net: &Net| {
        opt.zero_grad();
        loss(&net.forward(&batch.inputs), &batch, &LossWeights::default())
            .total
            .backward();
        opt.step(1e-3);
    };
    step(&mut opt, &net);
    let (wpath, opath) = (dir.join("net.safetensors"), dir.join("opt.safetensors"));
    save_net(&net, &wpath).unwrap();
    save_optimizer(&opt, r#"{"rng":[1,2,3]}"#, &opath).unwrap();
    step(&mut opt, &net);

    let resumed = load_net(&wpath, Device::Cpu).unwrap();
    let mut opt2 = NAdam::new(resumed.vs.trainable_variables(), NAdamConfig::default());
    let extra = load_optimizer(&mut opt2, &opath).unwrap();
    assert_eq!(extra, r#"{"rng":[1,2,3]}"#);
    assert_eq!(opt2.step, 1);
    step(&mut opt2, &resumed);
    assert_eq!(bits(&resumed), bits(&net));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn atomic_writes_leave_no_temporary_and_stale_ones_are_removed() {
    use cfzero_network::checkpoint::{
        is_temporary, remove_stale_temporaries, write_file_atomically,
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("file.bin");
    for round in 0..3u8 {
        write_file_atomically(&path, &[round; 100]).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), vec![round; 100]);
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    // The names the writer uses, and the older pid-only ones, are temporary; others not.
    for (name, temporary) in [
        ("gen-0001.safetensors.tmp123-00ff00ff00ff00ff", true),
        ("g00001.cfzg.tmp4242", true),
        ("g00001.cfzg", false),
        ("notes.tmpfile", false),
        ("x.tmp12-zz", false),
    ] {
        assert_eq!(
            is_temporary(std::path::Path::new(name)),
            temporary,
            "{name}"
        );
    }
    let sub = dir.path().join("games/gen-0001");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("g00000.cfzg.tmp77-abc"), b"torn").unwrap();
    std::fs::write(sub.join("g00000.cfzg"), b"kept").unwrap();
    // Young temporaries stay; with no minimum age they go, recursively, and only they.
    assert_eq!(
        remove_stale_temporaries(dir.path(), std::time::Duration::from_secs(3600)),
        0
    );
    assert_eq!(
        remove_stale_temporaries(dir.path(), std::time::Duration::ZERO),
        1
    );
    // One left on this machine by a process that is gone goes at once, however young; a
    // live writer's (this process's) stays.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let tag = cfzero_network::checkpoint::host_tag();
    let orphan = sub.join(format!("g00001.cfzg.tmp{dead}-{tag:08x}0000abcd"));
    let live = sub.join(format!(
        "g00002.cfzg.tmp{}-{tag:08x}0000abcd",
        std::process::id()
    ));
    std::fs::write(&orphan, b"torn").unwrap();
    std::fs::write(&live, b"in progress").unwrap();
    assert_eq!(
        remove_stale_temporaries(dir.path(), std::time::Duration::from_secs(3600)),
        1
    );
    assert!(!orphan.exists() && live.exists());
    assert!(sub.join("g00000.cfzg").exists());
    assert!(path.exists());
}
