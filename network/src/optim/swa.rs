//! Stochastic weight averaging of the weights that get published.

use tch::{Kind, Tensor, nn};

/// A running average of a net's variables: `avg = avg * n/(n+1) + w/(n+1)`, with `n`
/// capped at `max_n` so that old weights fade out (an exponential average after `max_n`).
#[derive(Debug)]
pub struct Swa {
    names: Vec<String>,
    average: Vec<Tensor>,
    n: u64,
    max_n: u64,
}

impl Swa {
    /// An empty average with cap `max_n` (at least 1).
    pub fn new(max_n: u64) -> Swa {
        Swa {
            names: Vec::new(),
            average: Vec::new(),
            n: 0,
            max_n: max_n.max(1),
        }
    }

    /// Number of snapshots averaged (capped at `max_n`).
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Adds the current variables of `vs` to the average.
    pub fn update(&mut self, vs: &nn::VarStore) {
        let mut vars: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
        vars.sort_by(|a, b| a.0.cmp(&b.0));
        tch::no_grad(|| {
            if self.n == 0 || self.names.len() != vars.len() {
                self.names = vars.iter().map(|(n, _)| n.clone()).collect();
                self.average = vars
                    .iter()
                    .map(|(_, t)| t.to_kind(Kind::Float).copy().detach())
                    .collect();
                self.n = 1;
                return;
            }
            let n = self.n as f64;
            for (avg, (_, w)) in self.average.iter_mut().zip(&vars) {
                let _ = avg.g_mul_scalar_(n / (n + 1.0)).g_add_(&(w / (n + 1.0)));
            }
            self.n = (self.n + 1).min(self.max_n);
        });
    }

    /// Restarts the average from the variables of `vs` (a saved average) as `n` snapshots
    /// (capped at the cap), so that a resumed run goes on averaging where it stopped.
    pub fn restore(&mut self, vs: &nn::VarStore, n: u64) {
        let mut vars: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
        vars.sort_by(|a, b| a.0.cmp(&b.0));
        tch::no_grad(|| {
            self.names = vars.iter().map(|(n, _)| n.clone()).collect();
            self.average = vars
                .iter()
                .map(|(_, t)| t.to_kind(Kind::Float).copy().detach())
                .collect();
        });
        self.n = n.min(self.max_n);
    }

    /// Copies the average into `target` (a var store of the same net), e.g. before publishing.
    /// Does nothing if no snapshot was added yet.
    pub fn copy_into(&self, target: &mut nn::VarStore) {
        let vars = target.variables();
        tch::no_grad(|| {
            for (name, avg) in self.names.iter().zip(&self.average) {
                if let Some(t) = vars.get(name) {
                    t.shallow_clone().copy_(avg);
                }
            }
        });
    }
}
