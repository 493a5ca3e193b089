//! The C allocator's settings for libtorch's workload.
//!
//! A forward pass allocates and frees tensors of megabytes (tiny at batch 31 has activations
//! of up to 32 MB). glibc serves blocks above its mmap threshold with fresh `mmap`s and
//! gives them back at `free`, so every pass faults its memory in again: measured with
//! `perf` during `cfzero bench selfplay` on tiny, 31% of the inference thread's time was in
//! the kernel (page faults, unmapping, cgroup charging), and self-play ran at 40 positions/s,
//! 56% of what the net alone allowed. With the largest mmap threshold glibc accepts and
//! freed memory kept, the same run made 61-64 positions/s (78-87% of the bound).

/// Serves blocks up to 32 MB (glibc's maximum threshold) from the heap, and keeps up to
/// 1 GB of freed heap memory instead of returning it to the system.
pub fn keep_large_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters; it is called before any thread
    // starts, and an unaccepted value is ignored (it returns 0), leaving glibc's default.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
}
