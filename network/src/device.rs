//! The `--device cuda|cpu|auto` option, and the loading of libtorch's CUDA half.
//!
//! libtorch's CUDA kernels live in `libtorch_cuda.so`, which registers itself with
//! `libtorch_cpu` when it is loaded. Nothing in cfzero calls into it by name, so the linker's
//! `--as-needed` (rustc's default) leaves it out of the binary's needed libraries, and
//! libtorch then sees no GPU on a machine that has one. Linking it by force would make every
//! binary need the CUDA libraries it needs (cuDNN, NCCL, ...), which a CPU set-up does not
//! install; so [`load_cuda`] loads it at run time, the first time a device name that may mean
//! CUDA is parsed, from the folders the binary's run path and `LD_LIBRARY_PATH` name.

use std::sync::OnceLock;

use tch::Device;

/// A device name that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// Not one of the known names.
    #[error("unknown device `{0}`: expected cuda, cuda:N, cpu or auto")]
    Unknown(String),
    /// CUDA asked for but not available.
    #[error("device `{0}` requested but CUDA is not available ({1})")]
    NoCuda(String, String),
}

/// Loads libtorch's CUDA kernels (`libtorch_cuda.so`) once per process; `Err` says why they
/// did not load (the dynamic loader's message). A CPU-only libtorch has no such library; a
/// CPU set-up of the PyPI wheel has it but not the CUDA libraries it needs.
pub fn load_cuda() -> Result<(), String> {
    static LOADED: OnceLock<Result<(), String>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            let name = c"libtorch_cuda.so";
            // SAFETY: dlopen with a valid C string; the handle is kept for the process's life
            // (the library registers its kernels and must stay loaded). dlerror reads the
            // loader's thread-local message right after the failure.
            unsafe {
                let handle = libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL);
                if !handle.is_null() {
                    return Ok(());
                }
                let err = libc::dlerror();
                Err(if err.is_null() {
                    "libtorch_cuda.so did not load".to_owned()
                } else {
                    std::ffi::CStr::from_ptr(err).to_string_lossy().into_owned()
                })
            }
        })
        .clone()
}

/// Parses `cpu`, `cuda`, `cuda:N` or `auto` (CUDA if available, else CPU).
pub fn parse_device(name: &str) -> Result<Device, DeviceError> {
    let name = name.trim().to_ascii_lowercase();
    match name.as_str() {
        "cpu" => Ok(Device::Cpu),
        "auto" => Ok(match load_cuda() {
            Ok(()) => Device::cuda_if_available(),
            Err(_) => Device::Cpu,
        }),
        "cuda" | "gpu" => cuda(&name, 0),
        _ => match name
            .strip_prefix("cuda:")
            .and_then(|n| n.parse::<usize>().ok())
        {
            Some(i) => cuda(&name, i),
            None => Err(DeviceError::Unknown(name)),
        },
    }
}

fn cuda(name: &str, index: usize) -> Result<Device, DeviceError> {
    let no_cuda = |why: String| Err(DeviceError::NoCuda(name.to_owned(), why));
    if let Err(why) = load_cuda() {
        return no_cuda(format!("libtorch's CUDA kernels did not load: {why}"));
    }
    if !tch::Cuda::is_available() {
        return no_cuda("libtorch sees no GPU".into());
    }
    let count = tch::Cuda::device_count() as usize;
    if index >= count {
        return no_cuda(format!("libtorch sees {count} GPU(s)"));
    }
    Ok(Device::Cuda(index))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_parse_or_are_refused_with_the_reason() {
        assert_eq!(parse_device(" CPU ").unwrap(), Device::Cpu);
        assert!(matches!(parse_device("tpu"), Err(DeviceError::Unknown(_))));
        assert!(matches!(
            parse_device("cuda:x"),
            Err(DeviceError::Unknown(_))
        ));
        // `auto` never fails: CUDA where it loads and sees a GPU, else the CPU.
        let auto = parse_device("auto").unwrap();
        assert_eq!(
            auto.is_cuda(),
            load_cuda().is_ok() && tch::Cuda::is_available()
        );
        // No machine has 1000 GPUs: the refusal names the device and why.
        let err = parse_device("cuda:999").unwrap_err().to_string();
        assert!(err.starts_with("device `cuda:999` requested"), "{err}");
        assert!(
            err.contains("did not load") || err.contains("sees no GPU") || err.contains("GPU(s)"),
            "{err}"
        );
    }
}
