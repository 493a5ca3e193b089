//! Which backend serves a net: the `[inference] backend` setting and `--backend` (`auto`, `tch`,
//! `native`, `material`), and the one rule that resolves `auto`.
//!
//! `auto` takes the native backend on a CPU when the net runs in f32, or in bf16 where the
//! CPU runs the native pass's bf16 products (AVX-512 BF16), and libtorch otherwise (a CUDA
//! device, or bf16 on a CPU without them). Measured on one thread (docs/history/benchmarks-2026-11.md, "Native
//! backend"): the native pass is 1.3 to 5.4 times libtorch's f32 at batches 1 to 256 of tiny,
//! lc0-bt-tiny and cf6m on an AVX2 CPU; on an `avx512_bf16` CPU in bf16 it is 1.2 to 6.8
//! times libtorch's bf16.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use tch::{Device, Kind};

/// The backend a user asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// The faster one for the device and precision (see the module docs).
    #[default]
    Auto,
    /// libtorch ([`super::TchBackend`]): every device and precision.
    Tch,
    /// The native CPU pass in f32, or bf16 on a CPU with AVX-512 BF16
    /// ([`super::NativeBackend`]).
    Native,
    /// No net: material counting with a uniform policy ([`super::MaterialBackend`]), a
    /// baseline player.
    Material,
}

/// A backend name that is none of the four.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown backend `{0}`: expected auto, tch, native or material")]
pub struct UnknownBackend(pub String);

impl FromStr for BackendChoice {
    type Err = UnknownBackend;

    fn from_str(s: &str) -> Result<BackendChoice, UnknownBackend> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(BackendChoice::Auto),
            "tch" | "libtorch" => Ok(BackendChoice::Tch),
            "native" => Ok(BackendChoice::Native),
            "material" => Ok(BackendChoice::Material),
            _ => Err(UnknownBackend(s.to_owned())),
        }
    }
}

impl fmt::Display for BackendChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Tch => "tch",
            BackendChoice::Native => "native",
            BackendChoice::Material => "material",
        })
    }
}

/// A backend that cannot serve the net as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChoiceError {
    /// The native backend runs on the CPU only.
    #[error("the native backend runs on the CPU; the net is on {0} (use --backend tch)")]
    NativeOffCpu(String),
    /// The native backend computes in f32, and in bf16 only on a CPU with AVX-512 BF16.
    #[error(
        "the native backend computes in f32, and in bf16 only on a CPU with AVX-512 BF16; {0} was asked for here (use --backend tch or --precision f32)"
    )]
    NativePrecision(String),
}

/// A backend that serves nets: what a [`BackendChoice`] resolves to. Every place that builds
/// or measures a backend matches on it exhaustively, so a new backend is a compile error
/// until each of them knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServingBackend {
    /// libtorch ([`super::TchBackend`]).
    Tch,
    /// The native CPU pass ([`super::NativeBackend`]).
    Native,
    /// Material counting with a uniform policy ([`super::MaterialBackend`]).
    Material,
}

impl ServingBackend {
    /// The choice that asks for this backend by name.
    pub fn choice(self) -> BackendChoice {
        match self {
            ServingBackend::Tch => BackendChoice::Tch,
            ServingBackend::Native => BackendChoice::Native,
            ServingBackend::Material => BackendChoice::Material,
        }
    }
}

impl fmt::Display for ServingBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.choice().fmt(f)
    }
}

impl BackendChoice {
    /// The backend that serves a net on `device` in `kind` (`auto` resolved), or why the
    /// asked one cannot.
    pub fn resolve(self, device: Device, kind: Kind) -> Result<ServingBackend, ChoiceError> {
        let native_fits = || -> Result<(), ChoiceError> {
            if device != Device::Cpu {
                return Err(ChoiceError::NativeOffCpu(
                    format!("{device:?}").to_lowercase(),
                ));
            }
            let fits =
                kind == Kind::Float || (kind == Kind::BFloat16 && super::native::bf16_supported());
            if !fits {
                return Err(ChoiceError::NativePrecision(
                    cfzero_network::precision::kind_name(kind),
                ));
            }
            Ok(())
        };
        match self {
            BackendChoice::Auto => Ok(if native_fits().is_ok() {
                ServingBackend::Native
            } else {
                ServingBackend::Tch
            }),
            BackendChoice::Native => native_fits().map(|()| ServingBackend::Native),
            BackendChoice::Tch => Ok(ServingBackend::Tch),
            BackendChoice::Material => Ok(ServingBackend::Material),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_takes_native_for_f32_on_the_cpu_and_libtorch_elsewhere() {
        let cpu = Device::Cpu;
        let gpu = Device::Cuda(0);
        assert_eq!(
            BackendChoice::Auto.resolve(cpu, Kind::Float),
            Ok(ServingBackend::Native)
        );
        // bf16 on the CPU: natively where the CPU runs bf16 products, else libtorch.
        let bf16_native = crate::backend::native::bf16_supported();
        assert_eq!(
            BackendChoice::Auto.resolve(cpu, Kind::BFloat16),
            Ok(if bf16_native {
                ServingBackend::Native
            } else {
                ServingBackend::Tch
            })
        );
        assert_eq!(
            BackendChoice::Auto.resolve(gpu, Kind::Float),
            Ok(ServingBackend::Tch)
        );
        assert_eq!(
            BackendChoice::Tch.resolve(gpu, Kind::BFloat16),
            Ok(ServingBackend::Tch)
        );
        assert_eq!(
            BackendChoice::Material.resolve(gpu, Kind::Float),
            Ok(ServingBackend::Material)
        );
        assert!(matches!(
            BackendChoice::Native.resolve(gpu, Kind::Float),
            Err(ChoiceError::NativeOffCpu(_))
        ));
        assert_eq!(
            BackendChoice::Native.resolve(cpu, Kind::BFloat16).is_ok(),
            bf16_native
        );
        assert!(matches!(
            BackendChoice::Native.resolve(cpu, Kind::Half),
            Err(ChoiceError::NativePrecision(_))
        ));
    }

    #[test]
    fn names_parse_and_print_back() {
        for c in [
            BackendChoice::Auto,
            BackendChoice::Tch,
            BackendChoice::Native,
            BackendChoice::Material,
        ] {
            assert_eq!(c.to_string().parse::<BackendChoice>(), Ok(c));
        }
        assert_eq!("libtorch".parse(), Ok(BackendChoice::Tch));
        // A serving backend prints as the choice that asks for it, and that choice gets it.
        for b in [
            ServingBackend::Tch,
            ServingBackend::Native,
            ServingBackend::Material,
        ] {
            assert_eq!(b.to_string(), b.choice().to_string());
            assert_eq!(b.choice().resolve(Device::Cpu, Kind::Float), Ok(b));
        }
        assert_eq!(
            "onnx".parse::<BackendChoice>(),
            Err(UnknownBackend("onnx".into()))
        );
    }
}
