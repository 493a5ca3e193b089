//! `scripts/gpu-check.sh` on a machine without a GPU: with `CFZERO_GPU_CHECK_NVIDIA_SMI`
//! naming a missing `nvidia-smi`, or a fake one that lists no GPU and fails, the script prints
//! one line saying that there is no NVIDIA GPU and exits 0, without setting up, building or
//! benching anything. Needs neither a GPU nor the network.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

use common::repo_root;

/// Serialises the tests: a fake script written while another test forks could be held open
/// for writing in the child and fail to run ("text file busy").
static SERIAL: Mutex<()> = Mutex::new(());

/// Runs the script with `nvidia_smi` as its `nvidia-smi` and asserts the no-GPU outcome:
/// exit code 0 and exactly one line of output (stdout and stderr together) naming it.
fn assert_no_gpu(nvidia_smi: &Path) {
    let script = repo_root().join("scripts/gpu-check.sh");
    let out = Command::new("bash")
        .arg(&script)
        .env("CFZERO_GPU_CHECK_NVIDIA_SMI", nvidia_smi)
        .output()
        .expect("bash runs the script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}: stdout {stdout:?}, stderr {stderr:?}",
        nvidia_smi.display()
    );
    let lines: Vec<&str> = stdout.lines().chain(stderr.lines()).collect();
    assert_eq!(
        lines.len(),
        1,
        "{}: expected one line, got {lines:?}",
        nvidia_smi.display()
    );
    assert!(
        lines[0].contains("no NVIDIA GPU"),
        "{}: {:?}",
        nvidia_smi.display(),
        lines[0]
    );
}

#[test]
fn missing_nvidia_smi_is_one_line_and_success() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    assert_no_gpu(&dir.path().join("no-such-dir/nvidia-smi"));
}

#[test]
fn nvidia_smi_listing_no_gpu_is_one_line_and_success() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("nvidia-smi");
    // What nvidia-smi does without a driver or device: nothing on stdout for `-L`, exit 9.
    std::fs::write(&fake, "#!/bin/sh\nexit 9\n").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_no_gpu(&fake);
}
