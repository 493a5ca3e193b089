//! Mixed-precision training: libtorch's autocast in bfloat16, on a CUDA GPU or the CPU.
//!
//! Inside [`bf16_autocast`], libtorch runs the products (linear, matmul, bmm) in bf16 on
//! bf16 copies of the f32 weights, and keeps softmax, norms and losses in f32 by its own op
//! lists; the weights, their gradients and the optimizer stay f32, and autograd replays the
//! casts backwards. bf16 has f32's exponent range, so, unlike float16, it needs no loss
//! scaling. [`ModelOutputs::into_f32`] brings the outputs back to f32 before the losses.
//!
//! tch wraps autocast only as `tch::autocast`, which means CUDA in float16 (libtorch's CUDA
//! default) and does nothing without a GPU. The calls that choose the device type and the
//! dtype are exported by `libtorch_cpu` (`at::autocast::set_autocast_enabled`,
//! `set_autocast_dtype`, `clear_cache`) but torch-sys does not wrap them, so they are
//! declared here by their C++ (Itanium) names: free functions whose arguments are
//! `c10::DeviceType` and `c10::ScalarType`, both `int8_t` enums, and `bool`, which the C ABI
//! passes the same way. A libtorch that renamed them fails at link time, not at run time;
//! `autocast_runs_products_in_bf16_and_restores_the_state` checks the behaviour.

use tch::{Device, Kind};

use crate::model::{ModelOutputs, ValueOutputs};

/// `c10::DeviceType::CPU`.
const DEVICE_TYPE_CPU: i8 = 0;
/// `c10::DeviceType::CUDA`.
const DEVICE_TYPE_CUDA: i8 = 1;
/// `c10::ScalarType::BFloat16`.
const SCALAR_TYPE_BF16: i8 = 15;

// SAFETY (for every call below): plain functions of libtorch that read or write the calling
// thread's autocast state; they take enum values by value and hold no pointers.
unsafe extern "C" {
    #[link_name = "_ZN2at8autocast19is_autocast_enabledEN3c1010DeviceTypeE"]
    fn at_is_autocast_enabled(device_type: i8) -> bool;
    #[link_name = "_ZN2at8autocast20set_autocast_enabledEN3c1010DeviceTypeEb"]
    fn at_set_autocast_enabled(device_type: i8, enabled: bool);
    #[link_name = "_ZN2at8autocast18get_autocast_dtypeEN3c1010DeviceTypeE"]
    fn at_get_autocast_dtype(device_type: i8) -> i8;
    #[link_name = "_ZN2at8autocast18set_autocast_dtypeEN3c1010DeviceTypeENS1_10ScalarTypeE"]
    fn at_set_autocast_dtype(device_type: i8, dtype: i8);
    #[link_name = "_ZN2at8autocast11clear_cacheEv"]
    fn at_autocast_clear_cache();
}

/// Restores the thread's autocast state for one device type when dropped, so that a panic
/// inside the region leaves no autocast behind.
struct Restore {
    device_type: i8,
    enabled: bool,
    dtype: i8,
}

impl Drop for Restore {
    fn drop(&mut self) {
        // SAFETY: see the extern block.
        unsafe {
            at_set_autocast_enabled(self.device_type, self.enabled);
            at_set_autocast_dtype(self.device_type, self.dtype);
            // The region's bf16 copies of the weights are stale once the optimizer steps.
            at_autocast_clear_cache();
        }
    }
}

/// Runs `f` with bf16 autocast on for `device`'s type (CUDA or CPU), on this thread, and
/// restores the previous autocast state afterwards (also when `f` panics).
pub fn bf16_autocast<T>(device: Device, f: impl FnOnce() -> T) -> T {
    let device_type = if device.is_cuda() {
        DEVICE_TYPE_CUDA
    } else {
        DEVICE_TYPE_CPU
    };
    // SAFETY: see the extern block.
    let _restore = unsafe {
        let restore = Restore {
            device_type,
            enabled: at_is_autocast_enabled(device_type),
            dtype: at_get_autocast_dtype(device_type),
        };
        at_set_autocast_dtype(device_type, SCALAR_TYPE_BF16);
        at_set_autocast_enabled(device_type, true);
        restore
    };
    f()
}

impl ModelOutputs {
    /// The outputs in f32 (differentiably): what the losses read after a forward pass under
    /// [`bf16_autocast`], whose products leave bf16 tensors.
    pub fn into_f32(self) -> ModelOutputs {
        let f = |t: tch::Tensor| t.to_kind(Kind::Float);
        let v = |o: ValueOutputs| ValueOutputs {
            value: f(o.value),
            error: f(o.error),
            categorical: f(o.categorical),
        };
        ModelOutputs {
            policy: f(self.policy),
            soft_policy: self.soft_policy.map(f),
            wdl: self.wdl.map(f),
            q: self.q.map(v),
            st: self.st.map(v),
            moves_left: self.moves_left.map(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Tensor;

    #[test]
    fn autocast_runs_products_in_bf16_and_restores_the_state() {
        // SAFETY: see the extern block.
        let before = unsafe {
            (
                at_is_autocast_enabled(DEVICE_TYPE_CPU),
                at_get_autocast_dtype(DEVICE_TYPE_CPU),
            )
        };
        let a = Tensor::ones([4, 8], (Kind::Float, Device::Cpu));
        let b = Tensor::ones([8, 3], (Kind::Float, Device::Cpu));
        let (inside, summed) = bf16_autocast(Device::Cpu, || {
            let p = a.matmul(&b);
            (p.kind(), p.sum(Kind::Float).double_value(&[]))
        });
        assert_eq!(inside, Kind::BFloat16);
        assert_eq!(summed, 4.0 * 3.0 * 8.0);
        assert_eq!(a.matmul(&b).kind(), Kind::Float, "autocast left on");
        let after = unsafe {
            (
                at_is_autocast_enabled(DEVICE_TYPE_CPU),
                at_get_autocast_dtype(DEVICE_TYPE_CPU),
            )
        };
        assert_eq!(before, after);
        // A panic inside the region restores the state too.
        let caught =
            std::panic::catch_unwind(|| bf16_autocast::<()>(Device::Cpu, || panic!("inside")));
        assert!(caught.is_err());
        assert_eq!(
            a.matmul(&b).kind(),
            Kind::Float,
            "autocast left on by a panic"
        );
    }
}
