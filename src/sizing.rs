//! Self-play sized to the machine: the actors, games in flight, inference servers and batch
//! size a config leaves to `auto`, chosen from the cores this process may use and the device
//! its nets run on. A number the config sets wins; the choice is one line at the start of a
//! run and in `cfzero info --config`.
//!
//! On a CPU every core gets an actor and a single-threaded inference server: one server per
//! core evaluates more than one server whose libtorch threads synchronise on every small
//! kernel, and an actor per server keeps each server's batches coming (on two cores this is the
//! two actors and two servers the tiny preset was measured with). On a GPU one server batches
//! for every actor, and every core but two (the server's and the trainer's) runs an actor with
//! twice the games in flight, so that the card gets batches in the hundreds of positions.
//! Several GPUs are served as one: the servers all run on the run's `--device`.

use std::fmt;

use tch::Device;

use crate::config::Config;

/// Games each actor keeps in flight on a CPU.
const CPU_GAMES_PER_ACTOR: usize = 32;
/// Games each actor keeps in flight on a GPU.
const GPU_GAMES_PER_ACTOR: usize = 64;
/// Largest batch of a GPU's server: more than its actors' games in flight ever ask at once.
const GPU_MAX_BATCH: usize = 1024;
/// Cores a GPU run keeps free of actors: the inference server's and the trainer's.
const GPU_RESERVED_CORES: usize = 2;

/// What self-play is sized to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Machine {
    /// Cores this process may use.
    pub cores: usize,
    /// Whether the nets run on a GPU.
    pub gpu: bool,
}

impl Machine {
    /// This machine for nets on `device`: the cores this process may use (its CPU affinity
    /// and cgroup quota, as `std::thread::available_parallelism` reads them; the environment
    /// variable `CFZERO_CORES` overrides, for a container that hides its limit or a test).
    pub fn detect(device: Device) -> Machine {
        let cores = std::env::var("CFZERO_CORES")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        Machine {
            cores,
            gpu: device != Device::Cpu,
        }
    }
}

/// The self-play sizes chosen for a machine, and which of them the config left to `auto`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizing {
    /// The machine sized for.
    pub machine: Machine,
    /// Actor threads.
    pub actors: usize,
    /// Games each actor keeps in flight.
    pub games_per_actor: usize,
    /// Inference servers.
    pub servers: usize,
    /// Largest batch of a server.
    pub max_batch: usize,
    /// Whether any of them was left to `auto` (else the line says the config set them all).
    pub chose: bool,
}

/// Fills the counts `config` leaves to `auto` (0) for `machine`; returns what they all are.
pub fn size(config: &mut Config, machine: Machine) -> Sizing {
    let cores = machine.cores.max(1);
    let (actors, games, servers, max_batch) = if machine.gpu {
        (
            cores.saturating_sub(GPU_RESERVED_CORES).max(1),
            GPU_GAMES_PER_ACTOR,
            1,
            GPU_MAX_BATCH,
        )
    } else {
        (
            cores,
            CPU_GAMES_PER_ACTOR,
            cores,
            cfzero_inference::DEFAULT_MAX_BATCH,
        )
    };
    let (sp, inference) = (&mut config.selfplay, &mut config.inference);
    let mut chose = false;
    let mut fill = |count: &mut usize, auto: usize| {
        if *count == 0 {
            *count = auto;
            chose = true;
        }
    };
    fill(&mut sp.actors, actors);
    fill(&mut sp.games_per_actor, games);
    // Actor `a` uses server `a mod servers`: a server beyond the actors would idle.
    fill(&mut inference.servers, servers.min(sp.actors));
    fill(&mut inference.max_batch, max_batch);
    Sizing {
        machine,
        actors: sp.actors,
        games_per_actor: sp.games_per_actor,
        servers: inference.servers,
        max_batch: inference.max_batch,
        chose,
    }
}

/// `self-play: 2 actors x 32 games in flight, 2 inference servers, batches of up to 256
/// (sized to 2 cores, CPU)`.
impl fmt::Display for Sizing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "self-play: {} actor(s) x {} games in flight, {} inference server(s), batches of up to {}",
            self.actors, self.games_per_actor, self.servers, self.max_batch
        )?;
        let device = if self.machine.gpu { "GPU" } else { "CPU" };
        match self.chose {
            true => write!(f, " (auto for {} cores, {device})", self.machine.cores),
            false => write!(f, " (as the config sets)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auto_config() -> Config {
        let micro = include_str!("../configs/micro.toml");
        let network = &micro[..micro.find("\n[search]").expect("micro.toml has [search]")];
        Config::parse(network).unwrap()
    }

    /// Two cores give the tiny preset's measured layout; sixteen an actor and a server each;
    /// a GPU one server and every core but two an actor.
    #[test]
    fn auto_counts_follow_the_cores_and_the_device() {
        let cases = [
            (2, false, (2, 32, 2, 256)),
            (16, false, (16, 32, 16, 256)),
            (1, false, (1, 32, 1, 256)),
            (16, true, (14, 64, 1, 1024)),
            (2, true, (1, 64, 1, 1024)),
        ];
        for (cores, gpu, want) in cases {
            let mut config = auto_config();
            let s = size(&mut config, Machine { cores, gpu });
            assert!(s.chose);
            assert_eq!(
                (s.actors, s.games_per_actor, s.servers, s.max_batch),
                want,
                "{cores} cores, gpu {gpu}"
            );
            assert_eq!(
                (
                    config.selfplay.actors,
                    config.selfplay.games_per_actor,
                    config.inference.servers,
                    config.inference.max_batch
                ),
                want
            );
        }
    }

    /// A count the config sets is kept; only those left to `auto` are chosen.
    #[test]
    fn a_count_the_config_sets_wins() {
        let mut config = auto_config();
        config.selfplay.actors = 3;
        config.inference.max_batch = 64;
        let s = size(
            &mut config,
            Machine {
                cores: 16,
                gpu: true,
            },
        );
        assert_eq!(
            (s.actors, s.games_per_actor, s.servers, s.max_batch),
            (3, 64, 1, 64)
        );
        // No more servers than actors: a server beyond them would idle.
        let mut one = auto_config();
        one.selfplay.actors = 1;
        let s = size(
            &mut one,
            Machine {
                cores: 16,
                gpu: false,
            },
        );
        assert_eq!((s.actors, s.servers), (1, 1));
        let mut set = config.clone();
        let again = size(
            &mut set,
            Machine {
                cores: 2,
                gpu: false,
            },
        );
        assert!(!again.chose);
        assert_eq!(set, config);
        assert!(
            again.to_string().ends_with("(as the config sets)"),
            "{again}"
        );
    }
}
