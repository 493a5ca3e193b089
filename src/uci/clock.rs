//! Time management: from a `go` command to the simulations and the time one search may use.
//!
//! The rule that keeps the engine from losing on time: a search never plans more than half
//! of what is left on its clock after the move overhead, so the clock only halves per move
//! at worst, and with an increment it earns back three quarters of it per move in its plan.

use std::time::Duration;

use super::command::GoParams;

/// Most simulations of one search, whatever the limits: about 3 GB of tree at ~700 bytes per
/// node, so that `go infinite` on a fast GPU stops growing before the memory runs out.
pub const MAX_SIMULATIONS: u64 = 4_000_000;

/// Moves assumed left in the game when the GUI does not say (`movestogo`).
pub const DEFAULT_MOVES_TO_GO: u64 = 30;

/// What one search may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Simulations at most.
    pub simulations: u64,
    /// Wall time at most, from the `go` command to the `bestmove`.
    pub time: Option<Duration>,
    /// `go infinite`: the `bestmove` waits for `stop`.
    pub infinite: bool,
}

/// The budget of `go` for the side to move (`white`): `nodes` (or `depth`, read as
/// simulations) bounds the simulations; `movetime` and the clock bound the time, less
/// `overhead_ms` for the latency between the engine and the GUI. Without any limit a search
/// runs `default_simulations`.
pub fn budget(go: &GoParams, white: bool, default_simulations: u64, overhead_ms: u64) -> Budget {
    let (left, inc) = if white {
        (go.wtime, go.winc)
    } else {
        (go.btime, go.binc)
    };
    let from_movetime = go
        .movetime
        .map(|ms| ms.saturating_sub(overhead_ms).max(ms / 2));
    let from_clock = left.map(|left| {
        let usable = left.saturating_sub(overhead_ms);
        let moves = go
            .movestogo
            .unwrap_or(DEFAULT_MOVES_TO_GO)
            .clamp(1, DEFAULT_MOVES_TO_GO);
        let plan = (usable / moves).saturating_add(inc.unwrap_or(0) / 4 * 3);
        plan.min(usable / 2)
    });
    let time_ms = match (from_movetime, from_clock) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let limited = time_ms.is_some() || go.infinite;
    let simulations = go
        .nodes
        .or(go.depth)
        .unwrap_or(if limited {
            MAX_SIMULATIONS
        } else {
            default_simulations
        })
        .clamp(1, MAX_SIMULATIONS);
    Budget {
        simulations,
        time: if go.infinite {
            None
        } else {
            time_ms.map(Duration::from_millis)
        },
        infinite: go.infinite,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn go(f: impl FnOnce(&mut GoParams)) -> GoParams {
        let mut g = GoParams::default();
        f(&mut g);
        g
    }

    #[test]
    fn nodes_depth_and_the_default() {
        let b = budget(&GoParams::default(), true, 800, 50);
        assert_eq!((b.simulations, b.time, b.infinite), (800, None, false));
        let b = budget(&go(|g| g.nodes = Some(100)), true, 800, 50);
        assert_eq!(b.simulations, 100);
        let b = budget(&go(|g| g.depth = Some(7)), true, 800, 50);
        assert_eq!(b.simulations, 7);
        let b = budget(&go(|g| g.nodes = Some(u64::MAX)), true, 800, 50);
        assert_eq!(b.simulations, MAX_SIMULATIONS);
        let b = budget(&go(|g| g.nodes = Some(0)), true, 800, 50);
        assert_eq!(b.simulations, 1);
    }

    #[test]
    fn movetime_less_the_overhead() {
        let b = budget(&go(|g| g.movetime = Some(1000)), true, 800, 50);
        assert_eq!(b.time, Some(Duration::from_millis(950)));
        assert_eq!(b.simulations, MAX_SIMULATIONS);
        // A movetime under the overhead keeps half of itself.
        let b = budget(&go(|g| g.movetime = Some(60)), true, 800, 50);
        assert_eq!(b.time, Some(Duration::from_millis(30)));
    }

    /// 60 s + 1 s: (60000 − 50) / 30 + 750 = 2748 ms for white; black's own clock counts.
    #[test]
    fn clock_share_with_increment() {
        let g = go(|g| {
            g.wtime = Some(60_000);
            g.btime = Some(10_000);
            g.winc = Some(1000);
            g.binc = Some(1000);
        });
        assert_eq!(
            budget(&g, true, 800, 50).time,
            Some(Duration::from_millis(2748))
        );
        // (10000 − 50) / 30 + 750 = 1081.
        assert_eq!(
            budget(&g, false, 800, 50).time,
            Some(Duration::from_millis(1081))
        );
    }

    #[test]
    fn never_more_than_half_the_clock() {
        // 1 s left and a 5 s increment: half of 950 ms, not 31 + 3750.
        let g = go(|g| {
            g.wtime = Some(1000);
            g.winc = Some(5000);
        });
        assert_eq!(
            budget(&g, true, 800, 50).time,
            Some(Duration::from_millis(475))
        );
        // The last move before the time control: half, not all.
        let g = go(|g| {
            g.btime = Some(4050);
            g.movestogo = Some(1);
        });
        assert_eq!(
            budget(&g, false, 800, 50).time,
            Some(Duration::from_millis(2000))
        );
        // Flagging already (negative times read as 0): no time at all.
        let g = go(|g| g.wtime = Some(0));
        assert_eq!(budget(&g, true, 800, 50).time, Some(Duration::ZERO));
    }

    #[test]
    fn infinite_has_no_time_limit() {
        let g = go(|g| {
            g.infinite = true;
            g.wtime = Some(1000);
        });
        let b = budget(&g, true, 800, 50);
        assert!(b.infinite);
        assert_eq!((b.time, b.simulations), (None, MAX_SIMULATIONS));
    }
}
