//! The run directory: where a training run keeps everything.
//!
//! ```text
//! runs/NAME/config.toml              the frozen config
//! runs/NAME/nets/gen-0003.safetensors published nets (config, step and minutes in the metadata)
//! runs/NAME/games/gen-0003/*.cfzg    game records played by net gen-0002, as the replay
//!                                    window reads them (see `stored_run.rs` for chunks)
//! runs/NAME/pgn/gen-0003.pgn         the trainer's own games as PGN (a chunk's PGN:
//!                                    pgn/gen-0003/<worker>-<bundle>.pgn)
//! runs/NAME/state/trainer-gen-0003-TAG.* trainer state after generation 3 (weights, optimizer,
//!                                    SWA average)
//! runs/NAME/tb/                      TensorBoard event files
//! runs/NAME/log.tsv                  one line per generation
//! ```
//! A net is published last in a generation: it is the commit point that `--resume` trusts.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use cfzero_network::checkpoint::read_net_metadata;
use cfzero_trainer::learner::STATE_KEY;

/// Metadata key of a published net: the run's minutes of training when it was published,
/// summed over the trainers that ran it. The time a run stood stopped between them is not
/// training: a run resumed the next morning goes on from the minute it stopped at.
pub const MINUTES_KEY: &str = "cfzero.run_minutes";

/// Paths inside one run directory.
#[derive(Debug, Clone)]
pub struct RunDir {
    root: PathBuf,
}

impl RunDir {
    /// The run directory at `root` (not created).
    pub fn new(root: impl Into<PathBuf>) -> RunDir {
        RunDir { root: root.into() }
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Creates the directory and its subdirectories.
    pub fn create(&self) -> Result<()> {
        for sub in ["nets", "games", "pgn", "state", "tb"] {
            let d = self.root.join(sub);
            std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        }
        Ok(())
    }

    /// The frozen config.
    pub fn config(&self) -> PathBuf {
        self.root.join("config.toml")
    }

    /// Published net of generation `g`.
    pub fn net(&self, g: u32) -> PathBuf {
        self.root
            .join("nets")
            .join(format!("gen-{g:04}.safetensors"))
    }

    /// Game records of generation `g`.
    pub fn games(&self, g: u32) -> PathBuf {
        self.root.join("games").join(format!("gen-{g:04}"))
    }

    /// All game records.
    pub fn all_games(&self) -> PathBuf {
        self.root.join("games")
    }

    /// PGN of generation `g`.
    pub fn pgn(&self, g: u32) -> PathBuf {
        self.root.join("pgn").join(format!("gen-{g:04}.pgn"))
    }

    /// Trainer weights and optimizer state after generation `g` as the trainer session
    /// `tag` saved them (`trainer-gen-NNNN-TAG.*`; without a tag the names older versions
    /// used, `trainer-gen-NNNN.*`).
    pub fn trainer_state(&self, g: u32, tag: Option<&str>) -> (PathBuf, PathBuf) {
        let stem = match tag {
            Some(t) => format!("trainer-gen-{g:04}-{t}"),
            None => format!("trainer-gen-{g:04}"),
        };
        let base = self.root.join("state");
        (
            base.join(format!("{stem}.safetensors")),
            base.join(format!("{stem}.optim")),
        )
    }

    /// The trainer state published net `g` names ([`STATE_KEY`] in its metadata), or the
    /// untagged one for a net of an older version. A state of the same generation under
    /// another tag (saved by a trainer whose net never became the published one) is never it.
    pub fn state_of(&self, g: u32) -> Result<(PathBuf, PathBuf)> {
        let tag = read_net_metadata(&self.net(g), STATE_KEY)
            .with_context(|| format!("reading {}", self.net(g).display()))?;
        Ok(self.trainer_state(g, tag.as_deref()))
    }

    /// Every trainer-state file of generation `g`, whatever its tag.
    pub fn trainer_state_files_of(&self, g: u32) -> Vec<PathBuf> {
        self.trainer_state_files()
            .into_iter()
            .filter(|(n, _)| *n == g)
            .map(|(_, p)| p)
            .collect()
    }

    /// Every trainer-state file in `state/` with its generation.
    fn trainer_state_files(&self) -> Vec<(u32, PathBuf)> {
        let Ok(entries) = std::fs::read_dir(self.root.join("state")) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| Some((state_generation(e.file_name().to_str()?)?, e.path())))
            .collect()
    }

    /// The teacher's label files (`cfzero train` with a teacher).
    pub fn teacher(&self) -> PathBuf {
        self.root.join("teacher")
    }

    /// TensorBoard log directory.
    pub fn tensorboard(&self) -> PathBuf {
        self.root.join("tb")
    }

    /// The per-generation log.
    pub fn log(&self) -> PathBuf {
        self.root.join("log.tsv")
    }

    /// The in-run evaluation's results, a row per evaluation.
    pub fn eval_log(&self) -> PathBuf {
        self.root.join("eval.tsv")
    }

    /// The plot of the in-run evaluation: Elo against the anchor over steps and minutes.
    pub fn elo_plot(&self) -> PathBuf {
        self.root.join("elo.png")
    }

    /// The run's minutes of training when generation `g` was published: what its net records
    /// ([`MINUTES_KEY`]); for a net that records none (generation 0, or a net of an older
    /// version), the file times from generation 0's net to it (0 where either is unreadable).
    pub fn minutes_at(&self, g: u32) -> f64 {
        read_net_metadata(&self.net(g), MINUTES_KEY)
            .ok()
            .flatten()
            .and_then(|m| m.parse::<f64>().ok())
            .filter(|m| m.is_finite() && *m >= 0.0)
            .unwrap_or_else(|| self.file_minutes(g))
    }

    /// Minutes of training from the publication of generation `first`'s net to that of
    /// generation `g`'s ([`RunDir::minutes_at`]; 0 where `g` came first).
    pub fn minutes_between(&self, first: u32, g: u32) -> f64 {
        (self.minutes_at(g) - self.minutes_at(first)).max(0.0)
    }

    /// Minutes from generation 0's net file to generation `g`'s, by their modification times.
    fn file_minutes(&self, g: u32) -> f64 {
        let modified = |g: u32| std::fs::metadata(self.net(g)).and_then(|m| m.modified());
        match (modified(0), modified(g)) {
            (Ok(a), Ok(b)) => b.duration_since(a).map_or(0.0, |d| d.as_secs_f64() / 60.0),
            _ => 0.0,
        }
    }

    /// Generations with a published net, ascending.
    pub fn published(&self) -> Result<Vec<u32>> {
        let dir = self.root.join("nets");
        let mut gens = Vec::new();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(gens),
            Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
        };
        for entry in entries {
            let name = entry?.file_name().to_string_lossy().into_owned();
            if let Some(g) = name
                .strip_prefix("gen-")
                .and_then(|r| r.strip_suffix(".safetensors"))
                && let Ok(g) = g.parse()
            {
                gens.push(g);
            }
        }
        gens.sort_unstable();
        Ok(gens)
    }

    /// Removes trainer states older than generation `keep_from`, whatever their tags.
    pub fn prune_trainer_states(&self, keep_from: u32) {
        for (g, path) in self.trainer_state_files() {
            if g < keep_from {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

/// The generation of a games or PGN directory, `gen-NNNN` ([`RunDir::games`]).
pub fn generation_dir(dir: &Path) -> Option<u32> {
    dir.file_name()?
        .to_str()?
        .strip_prefix("gen-")?
        .parse()
        .ok()
}

/// The generation of a trainer-state file named `name` (`trainer-gen-NNNN[-TAG].*`), or `None`
/// for any other file.
pub fn state_generation(name: &str) -> Option<u32> {
    name.strip_prefix("trainer-gen-")?.get(..4)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use cfzero_network::Net;
    use cfzero_network::checkpoint::{save_net, save_net_with};

    use super::*;
    use crate::config::Config;

    fn set_modified(path: &Path, at: SystemTime) {
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(at)
            .unwrap();
    }

    #[test]
    fn minutes_are_the_nets_own_and_a_pause_between_trainers_is_not_counted() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let config = Config::load(&root.join("configs/micro.toml")).unwrap();
        let net = Net::seeded(&config.network, tch::Device::Cpu, 1).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::new(tmp.path());
        dir.create().unwrap();
        // Generations 0-2 as an older version published them, recording no minutes: their
        // file times count, 2 and then 3 minutes apart.
        let start = SystemTime::now() - Duration::from_secs(10 * 3600);
        for (g, seconds) in [(0, 0), (1, 120), (2, 300)] {
            save_net(&net, &dir.net(g)).unwrap();
            set_modified(&dir.net(g), start + Duration::from_secs(seconds));
        }
        // Generation 3, published by a trainer that resumed the run ten hours later at
        // minute 5 and trained 1.5 minutes: the net's record counts, not its file time.
        save_net_with(&net, &dir.net(3), &[(MINUTES_KEY, "6.5".into())]).unwrap();
        let near = |a: f64, b: f64| (a - b).abs() < 1e-6;
        assert_eq!(dir.minutes_at(0), 0.0);
        assert!(near(dir.minutes_at(1), 2.0), "{}", dir.minutes_at(1));
        assert!(near(dir.minutes_between(1, 2), 3.0));
        assert!(near(dir.minutes_at(3), 6.5), "{}", dir.minutes_at(3));
        assert!(near(dir.minutes_between(2, 3), 1.5));
        assert_eq!(dir.minutes_between(3, 1), 0.0);
        // A generation with no net counts as minute 0, as an unreadable record does.
        assert_eq!(dir.minutes_at(9), 0.0);
        save_net_with(&net, &dir.net(4), &[(MINUTES_KEY, "soon".into())]).unwrap();
        set_modified(&dir.net(4), start + Duration::from_secs(600));
        assert!(near(dir.minutes_at(4), 10.0), "{}", dir.minutes_at(4));
    }
}
