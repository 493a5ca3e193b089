//! The sequential halving schedule of the Gumbel root search (docs/METHODS.md §3).
//!
//! With `m` considered actions and a budget of `n` simulations there are
//! `ceil(log2 m)` phases. In each phase every surviving action gets
//! `max(1, floor(n / (phases * k)))` visits, where `k` is the number of survivors; then
//! the survivors are halved (never below 2). Whatever budget the phases leave goes to the
//! final two, alternately. A small budget can end in the middle of a phase.

/// One phase: `actions` survivors get `visits` visits each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Phase {
    /// Number of surviving actions in this phase.
    pub actions: u32,
    /// Visits each survivor gets in this phase.
    pub visits: u32,
}

/// The whole schedule for one search (for tests and documentation; the search steps
/// through the same numbers with [`phase_count`], [`visits_per_action`] and [`next_survivors`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    /// The phases that the budget reaches (the last one may be cut short).
    pub phases: Vec<Phase>,
    /// Budget left after all phases, shared by the final two actions.
    pub leftover: u32,
}

/// Number of phases for `m` considered actions: `ceil(log2 m)` (0 when `m <= 1`).
pub fn phase_count(m: u32) -> u32 {
    if m <= 1 {
        0
    } else {
        u32::BITS - (m - 1).leading_zeros()
    }
}

/// Visits per survivor in a phase with `k` survivors, budget `n` and `phases` phases.
pub fn visits_per_action(n: u32, phases: u32, k: u32) -> u32 {
    (n / (phases * k).max(1)).max(1)
}

/// Survivors of the next phase: half of `k`, never below 2 (nor above `k`).
pub fn next_survivors(k: u32) -> u32 {
    (k / 2).max(2).min(k)
}

/// The schedule for `m` considered actions and a budget of `n` simulations.
pub fn allocation(m: u32, n: u32) -> Allocation {
    let phases = phase_count(m);
    let mut left = n;
    let mut k = m;
    let mut out = Vec::new();
    for _ in 0..phases {
        if left == 0 {
            break;
        }
        let visits = visits_per_action(n, phases, k);
        out.push(Phase { actions: k, visits });
        left = left.saturating_sub(k * visits);
        k = next_survivors(k);
    }
    Allocation {
        phases: out,
        leftover: if m == 0 { 0 } else { left },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phases(list: &[(u32, u32)]) -> Vec<Phase> {
        list.iter()
            .map(|&(actions, visits)| Phase { actions, visits })
            .collect()
    }

    #[test]
    fn phase_counts_are_ceil_log2() {
        let expected = [
            (1, 0),
            (2, 1),
            (3, 2),
            (4, 2),
            (5, 3),
            (8, 3),
            (9, 4),
            (16, 4),
            (17, 5),
        ];
        for (m, p) in expected {
            assert_eq!(phase_count(m), p, "m = {m}");
        }
    }

    #[test]
    fn schedule_for_m16_matches_the_design() {
        // m = min(16, n) for n = 8.
        assert_eq!(
            allocation(8, 8),
            Allocation {
                phases: phases(&[(8, 1)]),
                leftover: 0
            }
        );
        assert_eq!(
            allocation(16, 32),
            Allocation {
                phases: phases(&[(16, 1), (8, 1), (4, 2)]),
                leftover: 0
            }
        );
        assert_eq!(
            allocation(16, 64),
            Allocation {
                phases: phases(&[(16, 1), (8, 2), (4, 4), (2, 8)]),
                leftover: 0
            }
        );
        assert_eq!(
            allocation(16, 200),
            Allocation {
                phases: phases(&[(16, 3), (8, 6), (4, 12), (2, 25)]),
                leftover: 6
            }
        );
        assert_eq!(
            allocation(16, 800),
            Allocation {
                phases: phases(&[(16, 12), (8, 25), (4, 50), (2, 100)]),
                leftover: 8
            }
        );
    }

    #[test]
    fn schedule_never_exceeds_the_budget_when_complete() {
        for m in 1..=20 {
            for n in m..=300 {
                let a = allocation(m, n);
                let spent: u32 = a.phases.iter().map(|p| p.actions * p.visits).sum();
                if a.leftover > 0 {
                    assert_eq!(spent + a.leftover, n, "m = {m}, n = {n}");
                }
            }
        }
    }
}
