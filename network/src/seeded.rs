//! Seeded draws from libtorch's random generator, which is one per process.
//!
//! `tch::manual_seed` seeds that one generator, so two threads that each seed and then draw
//! (tests run in parallel threads; servers and runs start nets on their own threads) can
//! interleave their draws, and the same seed gives different weights from run to run. A test
//! whose answer depends on a net's first weights then passes or fails by the scheduler. A
//! [`SeededDraws`] guard seeds the generator and keeps every other thread's seeded draws out
//! until it is dropped; a thread that already holds one may take another (a helper that seeds
//! inside a seeded test), which reseeds without waiting for itself.

use std::sync::{Condvar, Mutex};
use std::thread::{self, ThreadId};

/// Which thread holds the generator, and how many guards it holds.
static HOLDER: Mutex<Option<(ThreadId, usize)>> = Mutex::new(None);
/// Signalled when the last guard of a thread is dropped.
static RELEASED: Condvar = Condvar::new();

/// The generator seeded with `seed`, held by this thread until the guard drops.
#[must_use = "the draws are only alone while the guard lives"]
pub fn seeded(seed: i64) -> SeededDraws {
    let me = thread::current().id();
    let mut holder = HOLDER.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        match *holder {
            None => {
                *holder = Some((me, 1));
                break;
            }
            Some((owner, depth)) if owner == me => {
                *holder = Some((owner, depth + 1));
                break;
            }
            Some(_) => holder = RELEASED.wait(holder).unwrap_or_else(|e| e.into_inner()),
        }
    }
    drop(holder);
    tch::manual_seed(seed);
    SeededDraws {
        _not_send: std::marker::PhantomData,
    }
}

/// Proof that this thread holds libtorch's generator; see [`seeded`].
#[derive(Debug)]
pub struct SeededDraws {
    /// The hold belongs to the thread that took it.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Drop for SeededDraws {
    fn drop(&mut self) {
        let mut holder = HOLDER.lock().unwrap_or_else(|e| e.into_inner());
        match *holder {
            Some((owner, depth)) if depth > 1 => *holder = Some((owner, depth - 1)),
            _ => {
                *holder = None;
                RELEASED.notify_all();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::seeded;
    use tch::{Device, Kind, Tensor};

    fn draw() -> Vec<f32> {
        let t = Tensor::rand([64], (Kind::Float, Device::Cpu));
        Vec::<f32>::try_from(&t).unwrap()
    }

    #[test]
    fn a_seed_draws_the_same_numbers_whatever_other_threads_draw() {
        let expected = {
            let _g = seeded(17);
            draw()
        };
        let threads: Vec<_> = (0..4)
            .map(|i| {
                std::thread::spawn(move || {
                    (0..50)
                        .map(|_| {
                            let _g = seeded(17 + i % 2);
                            // Nested, as a helper that seeds inside a seeded test does.
                            let inner = seeded(17 + i % 2);
                            drop(inner);
                            draw()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for (i, t) in threads.into_iter().enumerate() {
            for got in t.join().unwrap() {
                if i % 2 == 0 {
                    assert_eq!(got, expected);
                } else {
                    assert_ne!(got, expected);
                }
            }
        }
    }
}
