//! Checkpoints: bit-exact round trips and clear errors on bad files.

mod net_support;

use cfzero_network::checkpoint::{
    CheckpointError, load_net, load_optimizer, load_weights_into, read_net_config,
    read_net_metadata, save_net, save_net_with, save_optimizer,
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
        let _seeded = cfzero_network::seeded(1);
        let net = Net::new(&preset(name), Device::Cpu).unwrap();
        let path = dir.join(format!("{name}.safetensors"));
        save_net(&net, &path).unwrap();
        let loaded = load_net(&path, Device::Cpu).unwrap();
        assert_eq!(loaded.config, net.config);
        assert_eq!(bits(&loaded), bits(&net));
        assert_eq!(read_net_config(&path).unwrap(), net.config);
        let _seeded = cfzero_network::seeded(2);
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
fn metadata_is_read_from_the_header_and_a_bad_header_is_a_clear_error() {
    let dir = temp_dir("metadata");
    let net = Net::new(&preset("micro"), Device::Cpu).unwrap();
    let path = dir.join("net.safetensors");
    save_net_with(&net, &path, &[("cfzero.test_key", "4.25".into())]).unwrap();
    assert_eq!(
        read_net_metadata(&path, "cfzero.test_key")
            .unwrap()
            .as_deref(),
        Some("4.25")
    );
    assert_eq!(read_net_metadata(&path, "cfzero.absent").unwrap(), None);
    // The header alone is read: a file cut inside its tensors still gives its metadata,
    // while a file cut inside its header, or one whose length claims more than the file
    // holds, is corrupt.
    let bytes = std::fs::read(&path).unwrap();
    let header = 8 + u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    std::fs::write(&path, &bytes[..header + 1]).unwrap();
    assert_eq!(
        read_net_metadata(&path, "cfzero.test_key")
            .unwrap()
            .as_deref(),
        Some("4.25")
    );
    let mut huge = bytes.clone();
    huge[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    for bad in [&bytes[..4], &bytes[..header - 1], &huge[..]] {
        std::fs::write(&path, bad).unwrap();
        let err = read_net_metadata(&path, "cfzero.test_key").unwrap_err();
        assert!(matches!(err, CheckpointError::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains("net.safetensors"), "{err}");
    }
    // An optimizer file is not a net.
    let opt = NAdam::new(net.vs.trainable_variables(), NAdamConfig::default());
    save_optimizer(&opt, "{}", &path).unwrap();
    let err = read_net_metadata(&path, "cfzero.test_key").unwrap_err();
    assert!(err.to_string().contains("expected `cfzero-net-1`"), "{err}");
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
    let _seeded = cfzero_network::seeded(3);
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
