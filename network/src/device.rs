//! The `--device cuda|cpu|auto` option.

use tch::Device;

/// A device name that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// Not one of the known names.
    #[error("unknown device `{0}`: expected cuda, cuda:N, cpu or auto")]
    Unknown(String),
    /// CUDA asked for but not available.
    #[error("device `{0}` requested but CUDA is not available (libtorch sees no GPU)")]
    NoCuda(String),
}

/// Parses `cpu`, `cuda`, `cuda:N` or `auto` (CUDA if available, else CPU).
pub fn parse_device(name: &str) -> Result<Device, DeviceError> {
    let name = name.trim().to_ascii_lowercase();
    match name.as_str() {
        "cpu" => Ok(Device::Cpu),
        "auto" => Ok(Device::cuda_if_available()),
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
    if tch::Cuda::is_available() && index < tch::Cuda::device_count() as usize {
        Ok(Device::Cuda(index))
    } else {
        Err(DeviceError::NoCuda(name.to_owned()))
    }
}
