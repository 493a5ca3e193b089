//! The command-line flags that several commands share, declared once: `--device` for every
//! command that runs a net, `--precision` and `--backend` for those that play one.

use anyhow::Result;
use cfzero_inference::backend::BackendChoice;
use cfzero_network::{Precision, parse_device};
use tch::Device;

use crate::error::user_error;

/// `--device`.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct DeviceFlag {
    /// Device: cpu, cuda, cuda:N or auto (the first GPU if there is one, else the CPU).
    #[arg(
        id = "device",
        long = "device",
        value_name = "DEVICE",
        default_value = "auto"
    )]
    pub name: String,
}

impl DeviceFlag {
    /// The device named (a name that is none: a user error).
    pub fn parse(&self) -> Result<Device> {
        parse_device(&self.name).map_err(user_error)
    }
}

/// `--precision` and `--backend` of a command that plays nets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::Args)]
pub struct PlayFlags {
    /// Inference precision: auto (bf16 where the device computes it natively), f32 or bf16.
    #[arg(long, default_value = "auto")]
    pub precision: Precision,
    /// Backend: auto (native for f32 on a CPU, else libtorch), tch, native or material
    /// (material counting, no net: a baseline).
    #[arg(long, default_value = "auto")]
    pub backend: BackendChoice,
}
