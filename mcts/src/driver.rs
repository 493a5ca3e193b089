//! Many searches at once (one per game), their leaves batched for the evaluator.
//!
//! Each step collects at most one pending leaf per tree; terminal leaves (inside
//! [`Search::select_leaf`]) and cached ones are answered on the spot, and the rest go to
//! the evaluator as one [`LeafBatch`]. The trees are split in two halves that ping-pong:
//! while one half's batch is being evaluated, the other half selects its leaves.

use rand::Rng;

use crate::cache::EvalCache;
use crate::config::SearchConfig;
use crate::evaluator::{Evaluations, Evaluator, LeafBatch};
use crate::game::Game;
use crate::search::{Search, SearchError, SearchResult, Step, check_evaluations};

/// Counters of a driver, cumulative over its calls of [`Driver::run`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriverStats {
    /// Leaves sent to the evaluator.
    pub evaluated: u64,
    /// Leaves answered from the cache.
    pub cache_hits: u64,
    /// Batches sent to the evaluator.
    pub batches: u64,
}

/// One half of the trees with its batch buffers.
#[derive(Debug)]
struct Half<G: Game> {
    /// Which trees belong to this half.
    trees: std::ops::Range<usize>,
    batch: LeafBatch<G>,
    /// For each leaf of the batch: its tree and its cache key.
    members: Vec<(usize, u64)>,
    evaluations: Evaluations,
}

impl<G: Game> Half<G> {
    fn new() -> Self {
        Half {
            trees: 0..0,
            batch: LeafBatch::new(),
            members: Vec::new(),
            evaluations: Evaluations::default(),
        }
    }
}

/// Runs many searches together; all buffers and trees are reused across calls.
#[derive(Debug)]
pub struct Driver<G: Game> {
    config: SearchConfig,
    searches: Vec<Search<G>>,
    cache: EvalCache,
    halves: [Half<G>; 2],
    stats: DriverStats,
}

impl<G: Game> Driver<G> {
    /// A driver whose searches use `config`, with an evaluation cache of about
    /// `cache_entries` positions (0 disables the cache).
    pub fn new(config: SearchConfig, cache_entries: usize) -> Self {
        Driver {
            config,
            searches: Vec::new(),
            cache: EvalCache::new(cache_entries),
            halves: [Half::new(), Half::new()],
            stats: DriverStats::default(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> DriverStats {
        self.stats
    }

    /// Forgets all cached evaluations (e.g. when the network changes).
    pub fn clear_cache(&mut self) {
        self.cache.clear();
    }

    /// Searches every root with its own budget and returns the results in root order.
    ///
    /// Root noise is drawn from `rng` in root order before anything is evaluated, so root
    /// `i` gets the same result as a lone [`Search::run`] that draws next from the same
    /// generator, as long as the evaluator is deterministic.
    pub fn run<E: Evaluator<G>, R: Rng + ?Sized>(
        &mut self,
        roots: &[G],
        budgets: &[u32],
        evaluator: &E,
        rng: &mut R,
    ) -> Result<Vec<SearchResult<G::Move>>, SearchError> {
        if roots.len() != budgets.len() {
            return Err(SearchError::BudgetCount {
                roots: roots.len(),
                budgets: budgets.len(),
            });
        }
        while self.searches.len() < roots.len() {
            self.searches.push(Search::new(self.config.clone()));
        }
        for (index, (root, &budget)) in roots.iter().zip(budgets).enumerate() {
            self.searches[index]
                .start(root, budget, rng)
                .map_err(|e| match e {
                    SearchError::TerminalRoot { outcome, .. } => {
                        SearchError::TerminalRoot { index, outcome }
                    }
                    other => other,
                })?;
        }
        let middle = roots.len().div_ceil(2);
        self.halves[0].trees = 0..middle;
        self.halves[1].trees = middle..roots.len();

        let mut pending_a = self.collect_and_submit(0, evaluator)?;
        loop {
            // Half B selects while half A is being evaluated, and the other way round.
            let pending_b = self.collect_and_submit(1, evaluator)?;
            match pending_a.take() {
                Some(p) => self.complete(0, p, evaluator)?,
                None if pending_b.is_none() => break,
                None => {}
            }
            pending_a = self.collect_and_submit(0, evaluator)?;
            match pending_b {
                Some(p) => self.complete(1, p, evaluator)?,
                None if pending_a.is_none() => break,
                None => {}
            }
        }
        Ok(self.searches[..roots.len()]
            .iter_mut()
            .map(Search::result)
            .collect())
    }

    /// Selects one leaf per unfinished tree of a half and submits those that need the
    /// evaluator; `None` when the half had nothing to evaluate (all its trees finished).
    fn collect_and_submit<E: Evaluator<G>>(
        &mut self,
        half: usize,
        evaluator: &E,
    ) -> Result<Option<E::Pending>, SearchError> {
        let Driver {
            searches,
            cache,
            halves,
            stats,
            ..
        } = self;
        let half = &mut halves[half];
        half.batch.clear();
        half.members.clear();
        for tree in half.trees.clone() {
            let search = &mut searches[tree];
            while search.select_leaf() == Step::Evaluate {
                let key = search.leaf_state().cache_key();
                if let Some(hit) = cache.get(key, search.leaf_moves().len()) {
                    stats.cache_hits += 1;
                    search.apply_evaluation(hit.logits, hit.value, hit.wdl);
                    continue;
                }
                half.batch.push(search.leaf_state(), search.leaf_moves());
                half.members.push((tree, key));
                break;
            }
        }
        if half.batch.is_empty() {
            return Ok(None);
        }
        stats.batches += 1;
        stats.evaluated += half.batch.len() as u64;
        Ok(Some(evaluator.submit(&half.batch)?))
    }

    /// Waits for a half's batch, backs the results up and caches them.
    fn complete<E: Evaluator<G>>(
        &mut self,
        half: usize,
        pending: E::Pending,
        evaluator: &E,
    ) -> Result<(), SearchError> {
        let Driver {
            searches,
            cache,
            halves,
            ..
        } = self;
        let half = &mut halves[half];
        evaluator.complete(pending, &mut half.evaluations)?;
        check_evaluations(&half.batch, &half.evaluations)?;
        let ev = &half.evaluations;
        for (leaf, &(tree, key)) in half.members.iter().enumerate() {
            let logits = &ev.logits[half.batch.move_range(leaf)];
            searches[tree].apply_evaluation(logits, ev.values[leaf], ev.wdl[leaf]);
            cache.insert(key, logits, ev.values[leaf], ev.wdl[leaf]);
        }
        Ok(())
    }
}
