//! Loader threads: draw positions from the replay window and build host batches ahead of
//! the trainer, so that a training step never waits on decoding.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, bounded};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use cfzero_selfplay::window::ReplayWindow;

use crate::sample::{HostBatch, SampleScratch, TargetOptions, fill_position};

/// Batches being prepared ahead of the trainer, by a pool of threads.
#[derive(Debug)]
pub struct Loader {
    batches: Receiver<HostBatch>,
    recycle: Sender<HostBatch>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Loader {
    /// Starts `threads` loaders sampling batches of `batch_size` from `window`'s training
    /// games, with value targets made as `targets` says; each thread has its own random
    /// stream derived from `seed`.
    pub fn start(
        window: Arc<RwLock<ReplayWindow>>,
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
                let (window, tx, spare, stop) =
                    (window.clone(), tx.clone(), spare.clone(), stop.clone());
                let seed = seed ^ (0x9E37_79B9_7F4A_7C15u64.wrapping_mul(t as u64 + 1));
                std::thread::Builder::new()
                    .name(format!("loader-{t}"))
                    .spawn(move || {
                        load_loop(&window, batch_size, seed, &targets, &tx, &spare, &stop)
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
    window: &RwLock<ReplayWindow>,
    batch_size: usize,
    seed: u64,
    targets: &TargetOptions,
    tx: &Sender<HostBatch>,
    spare: &Receiver<HostBatch>,
    stop: &AtomicBool,
) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut scratch = SampleScratch::default();
    let mut picks = Vec::with_capacity(batch_size);
    while !stop.load(Ordering::Relaxed) {
        let mut batch = spare.try_recv().unwrap_or_default();
        batch.reset(batch_size);
        picks.clear();
        {
            let w = window.read().expect("the window lock is never poisoned");
            picks.extend((0..batch_size).filter_map(|_| w.sample(&mut rng)));
        }
        if picks.len() < batch_size {
            // Nothing to sample yet.
            std::thread::sleep(std::time::Duration::from_millis(20));
            continue;
        }
        let mut ok = true;
        for (slot, (game, ply)) in picks.iter().enumerate() {
            if let Err(e) = fill_position(game, *ply, &mut batch, slot, &mut scratch, targets) {
                // A record that does not replay is a bug in the writer; never train on it.
                eprintln!("warning: skipping a batch: game record does not replay: {e}");
                ok = false;
                break;
            }
        }
        if ok && tx.send(batch).is_err() {
            return;
        }
    }
}
