//! `cfzero bench data`: how fast training data is read and turned into batches, per source,
//! on one loader thread: whether decoding keeps up with training.

use std::time::{Duration, Instant};

use anyhow::Result;
use cfzero_trainer::sample::{HostBatch, SampleScratch, TargetOptions};
use cfzero_trainer::source::pgn::PgnFilters;
use cfzero_trainer::source::teacher::DEFAULT_TEMPERATURE;
use cfzero_trainer::{QTarget, Split};
use clap::Args;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::run::data::{self, DataOptions, DataSpec};

/// Arguments of `cfzero bench data`.
#[derive(Debug, Args)]
pub struct DataBenchArgs {
    /// Sources to measure, each on its own (`lc0:PATH`, `pgn:PATH`).
    #[arg(long, value_name = "SOURCE", required = true)]
    pub data: Vec<DataSpec>,
    /// Seconds of batch filling per source.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Positions per batch.
    #[arg(long, default_value_t = 256)]
    pub batch: usize,
    /// The most positions read from each source.
    #[arg(long, default_value_t = 2_000_000)]
    pub max_positions: usize,
}

/// Runs `cfzero bench data`.
pub fn run(args: &DataBenchArgs) -> Result<()> {
    let options = DataOptions {
        max_positions: args.max_positions.max(1),
        validation_share: 0.0,
        filters: PgnFilters::default(),
        // No config here: the teacher's default target, whose cost is the same at any
        // temperature.
        teacher_temperature: DEFAULT_TEMPERATURE,
    };
    let targets = TargetOptions {
        q_target: QTarget::Best,
        q_ratio: 0.25,
        capped_q_ratio: 0.25,
        td_lambda: None,
        history_fill: Default::default(),
        mirror: false,
    };
    let batch_size = args.batch.max(1);
    let budget = Duration::from_secs_f64(args.seconds.clamp(0.1, 3600.0));
    println!("| source | positions | samples/s (one loader thread) |");
    println!("|---|---|---|");
    for spec in &args.data {
        // Reading the source reports its own rate (positions/s decoded from the files).
        let source = data::open(spec, &options)?;
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut scratch = SampleScratch::default();
        let mut batch = HostBatch::default();
        let start = Instant::now();
        let mut samples = 0usize;
        while start.elapsed() < budget {
            batch.reset(batch_size);
            for slot in 0..batch_size {
                source.fill(
                    Split::Training,
                    &mut rng,
                    &mut batch,
                    slot,
                    &mut scratch,
                    &targets,
                )?;
            }
            samples += batch_size;
        }
        let rate = samples as f64 / start.elapsed().as_secs_f64();
        println!(
            "| {} | {} | {rate:.0} |",
            source.describe(),
            source.positions(Split::Training)
        );
    }
    Ok(())
}
