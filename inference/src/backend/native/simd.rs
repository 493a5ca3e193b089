//! Eight f32 lanes, the vector the attention kernels are written in: AVX2 registers where the
//! CPU has them, plain arrays elsewhere. The kernels are generic over [`Lanes`] and the
//! forward pass is instantiated once per implementation (`super::NativeBackend::forward`
//! picks one at run time), so the same source is the fast path and the portable one.

/// Eight f32 values operated on together.
pub trait Lanes: Copy {
    /// All zero.
    fn zero() -> Self;
    /// `x` in every lane.
    fn splat(x: f32) -> Self;
    /// The first eight values of `s` (which must hold eight).
    #[inline(always)]
    fn load(s: &[f32]) -> Self {
        assert!(s.len() >= 8, "eight values");
        // SAFETY: checked just above.
        unsafe { Self::load_ptr(s.as_ptr()) }
    }
    /// The eight values from `p` on, unchecked: for the innermost loops, whose callers check
    /// the whole range they reach once instead of each load.
    ///
    /// # Safety
    /// `p` must point at eight readable `f32`s.
    unsafe fn load_ptr(p: *const f32) -> Self;
    /// Writes the lanes to the first eight values of `s`.
    fn store(self, s: &mut [f32]);
    /// `self + a * b`.
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// `self + other`.
    fn add(self, other: Self) -> Self;
    /// `self * other`.
    fn mul(self, other: Self) -> Self;
    /// `self - other`.
    fn sub(self, other: Self) -> Self;
    /// `self / other`.
    fn div(self, other: Self) -> Self;
    /// The larger of each pair of lanes.
    fn max(self, other: Self) -> Self;
    /// The smaller of each pair of lanes.
    fn min(self, other: Self) -> Self;
    /// `e^x` per lane, as [`super::kernels::exp`] computes it.
    fn exp(self) -> Self;
    /// The sum of the lanes.
    fn sum(self) -> f32;
    /// The largest lane.
    fn max_lane(self) -> f32;
    /// The 8 x 8 matrix of `rows` transposed (lane `j` of row `i` becomes lane `i` of row
    /// `j`).
    fn transpose8(rows: [Self; 8]) -> [Self; 8];
}

/// Plain arrays: any CPU.
#[derive(Clone, Copy, Debug)]
pub struct Portable([f32; 8]);

impl Lanes for Portable {
    #[inline(always)]
    fn zero() -> Self {
        Portable([0.0; 8])
    }
    #[inline(always)]
    fn splat(x: f32) -> Self {
        Portable([x; 8])
    }
    #[inline(always)]
    unsafe fn load_ptr(p: *const f32) -> Self {
        // SAFETY: the caller's promise of eight readable values.
        Portable(unsafe { std::ptr::read_unaligned(p as *const [f32; 8]) })
    }
    #[inline(always)]
    fn store(self, s: &mut [f32]) {
        s[..8].copy_from_slice(&self.0);
    }
    #[inline(always)]
    fn mul_add(self, a: Self, b: Self) -> Self {
        Portable(std::array::from_fn(|i| self.0[i] + a.0[i] * b.0[i]))
    }
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        Portable(std::array::from_fn(|i| self.0[i] + other.0[i]))
    }
    #[inline(always)]
    fn mul(self, other: Self) -> Self {
        Portable(std::array::from_fn(|i| self.0[i] * other.0[i]))
    }
    #[inline(always)]
    fn sub(self, other: Self) -> Self {
        Portable(std::array::from_fn(|i| self.0[i] - other.0[i]))
    }
    #[inline(always)]
    fn div(self, other: Self) -> Self {
        Portable(std::array::from_fn(|i| self.0[i] / other.0[i]))
    }
    #[inline(always)]
    fn max(self, other: Self) -> Self {
        Portable(std::array::from_fn(|i| self.0[i].max(other.0[i])))
    }
    #[inline(always)]
    fn min(self, other: Self) -> Self {
        Portable(std::array::from_fn(|i| self.0[i].min(other.0[i])))
    }
    #[inline(always)]
    fn exp(self) -> Self {
        Portable(self.0.map(super::kernels::exp))
    }
    #[inline(always)]
    fn sum(self) -> f32 {
        self.0.iter().sum()
    }
    #[inline(always)]
    fn max_lane(self) -> f32 {
        self.0.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b))
    }
    #[inline(always)]
    fn transpose8(rows: [Self; 8]) -> [Self; 8] {
        std::array::from_fn(|j| Portable(std::array::from_fn(|i| rows[i].0[j])))
    }
}

/// AVX2 registers with FMA. Only code that runs where the CPU has both may use it (the
/// forward pass checks once, `super::has_avx2_fma`).
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug)]
pub struct Avx2(pub(super) std::arch::x86_64::__m256);

#[cfg(target_arch = "x86_64")]
impl Lanes for Avx2 {
    #[inline(always)]
    fn zero() -> Self {
        // SAFETY (each method): reached only from the AVX2 instantiation of the forward pass,
        // which runs only on CPUs with AVX2 and FMA; loads and stores are bounds-checked.
        unsafe { Avx2(std::arch::x86_64::_mm256_setzero_ps()) }
    }
    #[inline(always)]
    fn splat(x: f32) -> Self {
        unsafe { Avx2(std::arch::x86_64::_mm256_set1_ps(x)) }
    }
    #[inline(always)]
    unsafe fn load_ptr(p: *const f32) -> Self {
        // SAFETY: the caller's promise of eight readable values.
        unsafe { Avx2(std::arch::x86_64::_mm256_loadu_ps(p)) }
    }
    #[inline(always)]
    fn store(self, s: &mut [f32]) {
        assert!(s.len() >= 8);
        unsafe { std::arch::x86_64::_mm256_storeu_ps(s.as_mut_ptr(), self.0) }
    }
    #[inline(always)]
    fn mul_add(self, a: Self, b: Self) -> Self {
        unsafe { Avx2(std::arch::x86_64::_mm256_fmadd_ps(a.0, b.0, self.0)) }
    }
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        unsafe { Avx2(std::arch::x86_64::_mm256_add_ps(self.0, other.0)) }
    }
    #[inline(always)]
    fn mul(self, other: Self) -> Self {
        unsafe { Avx2(std::arch::x86_64::_mm256_mul_ps(self.0, other.0)) }
    }
    #[inline(always)]
    fn sub(self, other: Self) -> Self {
        unsafe { Avx2(std::arch::x86_64::_mm256_sub_ps(self.0, other.0)) }
    }
    #[inline(always)]
    fn div(self, other: Self) -> Self {
        unsafe { Avx2(std::arch::x86_64::_mm256_div_ps(self.0, other.0)) }
    }
    #[inline(always)]
    fn max(self, other: Self) -> Self {
        unsafe { Avx2(std::arch::x86_64::_mm256_max_ps(self.0, other.0)) }
    }
    #[inline(always)]
    fn min(self, other: Self) -> Self {
        unsafe { Avx2(std::arch::x86_64::_mm256_min_ps(self.0, other.0)) }
    }
    #[inline(always)]
    fn exp(self) -> Self {
        use super::kernels::exp_constants as c;
        use std::arch::x86_64::*;
        unsafe {
            let x = _mm256_min_ps(
                _mm256_max_ps(self.0, _mm256_set1_ps(c::LOW)),
                _mm256_set1_ps(c::HIGH),
            );
            let n = _mm256_floor_ps(_mm256_fmadd_ps(
                x,
                _mm256_set1_ps(c::LOG2E),
                _mm256_set1_ps(0.5),
            ));
            let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(c::LN2_HI), x);
            let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(c::LN2_LO), r);
            let mut p = _mm256_set1_ps(c::P[0]);
            for &k in &c::P[1..] {
                p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(k));
            }
            let y = _mm256_add_ps(
                _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, r),
                _mm256_set1_ps(1.0),
            );
            let bits = _mm256_slli_epi32::<23>(_mm256_add_epi32(
                _mm256_cvttps_epi32(n),
                _mm256_set1_epi32(127),
            ));
            Avx2(_mm256_mul_ps(y, _mm256_castsi256_ps(bits)))
        }
    }
    #[inline(always)]
    fn sum(self) -> f32 {
        use std::arch::x86_64::*;
        unsafe {
            let s = _mm_add_ps(
                _mm256_castps256_ps128(self.0),
                _mm256_extractf128_ps::<1>(self.0),
            );
            let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
            let s = _mm_add_ss(s, _mm_shuffle_ps::<1>(s, s));
            _mm_cvtss_f32(s)
        }
    }
    #[inline(always)]
    fn max_lane(self) -> f32 {
        use std::arch::x86_64::*;
        unsafe {
            let s = _mm_max_ps(
                _mm256_castps256_ps128(self.0),
                _mm256_extractf128_ps::<1>(self.0),
            );
            let s = _mm_max_ps(s, _mm_movehl_ps(s, s));
            let s = _mm_max_ss(s, _mm_shuffle_ps::<1>(s, s));
            _mm_cvtss_f32(s)
        }
    }
    #[inline(always)]
    fn transpose8(rows: [Self; 8]) -> [Self; 8] {
        use std::arch::x86_64::*;
        let r = rows.map(|r| r.0);
        unsafe {
            // Pairs of rows interleaved, then pairs of pairs, then the 128-bit halves.
            let t0 = _mm256_unpacklo_ps(r[0], r[1]);
            let t1 = _mm256_unpackhi_ps(r[0], r[1]);
            let t2 = _mm256_unpacklo_ps(r[2], r[3]);
            let t3 = _mm256_unpackhi_ps(r[2], r[3]);
            let t4 = _mm256_unpacklo_ps(r[4], r[5]);
            let t5 = _mm256_unpackhi_ps(r[4], r[5]);
            let t6 = _mm256_unpacklo_ps(r[6], r[7]);
            let t7 = _mm256_unpackhi_ps(r[6], r[7]);
            let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
            let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
            let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
            let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
            let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
            let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
            let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
            let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
            [
                _mm256_permute2f128_ps::<0x20>(s0, s4),
                _mm256_permute2f128_ps::<0x20>(s1, s5),
                _mm256_permute2f128_ps::<0x20>(s2, s6),
                _mm256_permute2f128_ps::<0x20>(s3, s7),
                _mm256_permute2f128_ps::<0x31>(s0, s4),
                _mm256_permute2f128_ps::<0x31>(s1, s5),
                _mm256_permute2f128_ps::<0x31>(s2, s6),
                _mm256_permute2f128_ps::<0x31>(s3, s7),
            ]
            .map(Avx2)
        }
    }
}

/// Runs a test's generic `check::<L: Lanes>()` (a function of the calling module) on the
/// portable lanes and, where the CPU has AVX2 and FMA, on those.
#[cfg(test)]
macro_rules! on_both_lanes {
    ($check:ident) => {{
        $check::<$crate::backend::native::simd::Portable>();
        #[cfg(target_arch = "x86_64")]
        if $crate::backend::native::has_avx2_fma() {
            #[target_feature(enable = "avx2,fma")]
            unsafe fn avx2() {
                $check::<$crate::backend::native::simd::Avx2>();
            }
            // SAFETY: checked just above.
            unsafe { avx2() }
        }
    }};
}
#[cfg(test)]
pub(super) use on_both_lanes;

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix() -> [[f32; 8]; 8] {
        std::array::from_fn(|i| std::array::from_fn(|j| (i * 8 + j) as f32))
    }

    fn check<L: Lanes>() {
        let m = matrix();
        let t = L::transpose8(m.map(|r| L::load(&r)));
        for (j, row) in t.iter().enumerate() {
            let mut out = [0f32; 8];
            row.store(&mut out);
            assert_eq!(out, std::array::from_fn(|i| m[i][j]));
        }
        let mut out = [0f32; 8];
        L::splat(2.0)
            .mul_add(L::load(&m[1]), L::load(&m[2]))
            .add(L::zero())
            .store(&mut out);
        assert_eq!(out, std::array::from_fn(|k| 2.0 + m[1][k] * m[2][k]));
        let x: [f32; 8] = [-100.0, -3.5, -0.25, 0.0, 0.7, 2.0, 19.0, 95.0];
        L::load(&x).exp().store(&mut out);
        for (got, want) in out.iter().zip(x.map(super::super::kernels::exp)) {
            assert!((got - want).abs() <= 1e-6 * want, "{got} vs {want}");
        }
        let v = L::load(&x);
        assert_eq!(v.sum(), x.iter().sum::<f32>());
        assert_eq!(v.max_lane(), 95.0);
        v.mul(v)
            .sub(v)
            .div(L::splat(2.0))
            .max(L::splat(-1.0))
            .min(L::splat(50.0))
            .store(&mut out);
        assert_eq!(out, x.map(|a| ((a * a - a) / 2.0).clamp(-1.0, 50.0)));
    }

    #[test]
    fn both_lanes_compute_the_same() {
        on_both_lanes!(check);
    }
}
