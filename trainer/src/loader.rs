//! Loader threads: draw positions from a sample source (the replay window, Lc0 data, PGN
//! games, a mixture) and build host batches ahead of the trainer, so that a training step
//! never waits on decoding.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, bounded};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::sample::{HostBatch, SampleScratch, TargetOptions};
use crate::source::{SampleSource, Split};

/// Batches being prepared ahead of the trainer, by a pool of threads.
#[derive(Debug)]
pub struct Loader {
    batches: Receiver<HostBatch>,
    recycle: Sender<HostBatch>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Loader {
    /// Starts `threads` loaders sampling batches of `batch_size` from `source`'s training
    /// positions, with value targets made as `targets` says; each thread has its own random
    /// stream derived from `seed`.
    pub fn start(
        source: Arc<dyn SampleSource>,
        batch_size: usize,
        threads: usize,
        seed: u64,
        targets: TargetOptions,
    ) -> Loader {
        let threads = threads.max(1);
        let (tx, batches) = bounded(threads * 2);
        let (recycle, spare) = bounded::<HostBatch>(threads * 4);
        let stop = Arc::new(AtomicBool::new(false));
        let handles = (0..threads)
            .map(|t| {
                let (source, tx, spare, stop) =
                    (source.clone(), tx.clone(), spare.clone(), stop.clone());
                let seed = seed ^ (0x9E37_79B9_7F4A_7C15u64.wrapping_mul(t as u64 + 1));
                std::thread::Builder::new()
                    .name(format!("loader-{t}"))
                    .spawn(move || {
                        load_loop(&*source, batch_size, seed, &targets, &tx, &spare, &stop)
                    })
                    .expect("spawning a loader thread")
            })
            .collect();
        Loader {
            batches,
            recycle,
            stop,
            threads: handles,
        }
    }

    /// The next batch (blocks until one is ready).
    pub fn next(&self) -> HostBatch {
        self.batches
            .recv()
            .expect("loader threads live as long as the loader")
    }

    /// Gives a used batch's memory back to the loaders.
    pub fn recycle(&self, batch: HostBatch) {
        let _ = self.recycle.try_send(batch);
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Unblock loaders waiting to send.
        while self.batches.try_recv().is_ok() {}
        for t in self.threads.drain(..) {
            while !t.is_finished() {
                while self.batches.try_recv().is_ok() {}
                std::thread::yield_now();
            }
            let _ = t.join();
        }
    }
}

fn load_loop(
    source: &dyn SampleSource,
    batch_size: usize,
    seed: u64,
    targets: &TargetOptions,
    tx: &Sender<HostBatch>,
    spare: &Receiver<HostBatch>,
    stop: &AtomicBool,
) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut scratch = SampleScratch::default();
    'batches: while !stop.load(Ordering::Relaxed) {
        if source.positions(Split::Training) == 0 {
            // Nothing to sample yet.
            std::thread::sleep(std::time::Duration::from_millis(20));
            continue;
        }
        let mut batch = spare.try_recv().unwrap_or_default();
        batch.reset(batch_size);
        for slot in 0..batch_size {
            match source.fill(
                Split::Training,
                &mut rng,
                &mut batch,
                slot,
                &mut scratch,
                targets,
            ) {
                Ok(true) => {
                    if targets.mirror && rng.random_bool(0.5) {
                        batch.mirror(slot);
                    }
                }
                Ok(false) => continue 'batches,
                Err(e) => {
                    // A record that does not replay is a bug in its writer; never train on it.
                    eprintln!("warning: skipping a batch: {e}");
                    continue 'batches;
                }
            }
        }
        if tx.send(batch).is_err() {
            return;
        }
    }
}
