//! The one entry point of search: many searches at once (one per game) or one search with
//! limits (a UCI `go`), their leaves batched for the evaluator through one cache.
//!
//! With many trees ([`Driver::run`], [`Driver::run_streaming`]) each step collects one
//! pending leaf per tree (unless [`Driver::with_leaves_per_tree`] says more), the
//! sequential search: many games fill the batches anyway, and each evaluation goes where
//! the search most wants it. The trees are split in two halves
//! that ping-pong: while one half's batch is being evaluated, the other half selects its
//! leaves. A single search ([`Driver::search`]) fills its batches with up to
//! [`SearchConfig::batch`] leaves of its one tree ([`Search::select_leaves`], with visits
//! in flight), which spends a few evaluations on leaves that a sequential search would not
//! have chosen, for many times the evaluations per second. Either way terminal leaves and
//! cached ones are answered on the spot, and the rest go to the evaluator as one
//! [`LeafBatch`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

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
    /// For each leaf of the batch: its tree, its index among the tree's waiting leaves
    /// and its cache key.
    members: Vec<(usize, usize, u64)>,
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
    /// Whether each slot has a search going.
    active: Vec<bool>,
    /// Most leaves one tree of many puts in a batch ([`Driver::with_leaves_per_tree`]).
    leaves_per_tree: usize,
    stats: DriverStats,
}

/// When a single search ([`Driver::search`]) stops. The root is always evaluated, so that
/// there is a move to give, whatever the limits.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits<'a> {
    /// Simulations to plan for (the budget of the Gumbel schedule).
    pub simulations: u32,
    /// Stop at this instant, keeping what has been searched.
    pub deadline: Option<Instant>,
    /// Stop as soon as this is set (e.g. by UCI's `stop`).
    pub stop: Option<&'a AtomicBool>,
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
            active: Vec::new(),
            leaves_per_tree: 1,
            stats: DriverStats::default(),
        }
    }

    /// The same driver with up to `leaves` leaves per tree in each batch of a many-tree run
    /// ([`Driver::run`], [`Driver::run_streaming`]), selected as a lone search selects its
    /// batches ([`SearchConfig::batch`]); 1, the default, is the sequential search. For
    /// measuring in matches what a batched search costs in play.
    pub fn with_leaves_per_tree(mut self, leaves: usize) -> Self {
        self.leaves_per_tree = leaves.clamp(1, usize::from(u16::MAX));
        self
    }

    /// The search of the last [`Driver::search`] (the first slot of the last run), e.g. to
    /// read its tree; `None` before any.
    pub fn last_search(&mut self) -> Option<&mut Search<G>> {
        self.searches.first_mut()
    }

    /// The search constants.
    pub fn config(&self) -> &SearchConfig {
        &self.config
    }

    /// Runs one search from `root` within `limits`, its leaves evaluated in batches of up
    /// to [`SearchConfig::batch`] through the cache. `progress` sees the search after
    /// every batch (e.g. to print UCI `info` lines); the result is that of the search so
    /// far when a limit stops it.
    pub fn search<E, R, P>(
        &mut self,
        root: &G,
        limits: &Limits<'_>,
        evaluator: &E,
        rng: &mut R,
        mut progress: P,
    ) -> Result<SearchResult<G::Move>, SearchError>
    where
        E: Evaluator<G>,
        R: Rng + ?Sized,
        P: FnMut(&mut Search<G>),
    {
        if self.searches.is_empty() {
            self.searches.push(Search::new(self.config.clone()));
        }
        self.searches[0].start(root, limits.simulations, rng)?;
        let mut root_evaluated = false;
        loop {
            let stopped = limits.stop.is_some_and(|s| s.load(Ordering::Acquire));
            let late = limits.deadline.is_some_and(|d| Instant::now() >= d);
            if root_evaluated && (stopped || late) {
                break;
            }
            let (batch, members) = (&mut self.halves[0].batch, &mut self.halves[0].members);
            batch.clear();
            members.clear();
            let search = &mut self.searches[0];
            if !select_uncached(
                search,
                0,
                self.config.batch as usize,
                &mut self.cache,
                &mut self.stats,
                batch,
                members,
            ) {
                break;
            }
            if !self.halves[0].batch.is_empty() {
                self.stats.batches += 1;
                self.stats.evaluated += self.halves[0].batch.len() as u64;
                let pending = evaluator.submit(&self.halves[0].batch)?;
                self.complete(0, pending, evaluator)?;
            }
            root_evaluated = true;
            progress(&mut self.searches[0]);
        }
        Ok(self.searches[0].result())
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
        let mut results: Vec<Option<SearchResult<G::Move>>> =
            (0..roots.len()).map(|_| None).collect();
        self.run_streaming::<_, _, _, SearchError>(
            roots.len(),
            evaluator,
            rng,
            |tree, result, _| {
                Ok(match result {
                    None => Some((roots[tree].clone(), budgets[tree])),
                    Some(r) => {
                        results[tree] = Some(r);
                        None
                    }
                })
            },
        )?;
        Ok(results
            .into_iter()
            .map(|r| r.expect("every search runs to its end"))
            .collect())
    }

    /// Keeps `slots` searches going until `next` has no more work: `next(slot, None, rng)`
    /// gives each slot its first root and budget, and `next(slot, Some(result), rng)` is
    /// called as soon as that slot's search ends, to hand over the next root (`None`: the
    /// slot is done).
    ///
    /// A slot whose search ends moves on at once instead of waiting for the slowest search,
    /// so the batches stay full when budgets differ (playout cap randomisation) and a game
    /// can follow its move with the next search. The order of calls depends only on the
    /// searches, not on timing, so a deterministic evaluator gives deterministic games.
    pub fn run_streaming<E, R, F, Er>(
        &mut self,
        slots: usize,
        evaluator: &E,
        rng: &mut R,
        mut next: F,
    ) -> Result<(), Er>
    where
        E: Evaluator<G>,
        R: Rng + ?Sized,
        F: FnMut(usize, Option<SearchResult<G::Move>>, &mut R) -> Result<Option<(G, u32)>, Er>,
        Er: From<SearchError>,
    {
        while self.searches.len() < slots {
            self.searches.push(Search::new(self.config.clone()));
        }
        self.active.clear();
        self.active.resize(slots, false);
        for slot in 0..slots {
            if let Some((root, budget)) = next(slot, None, rng)? {
                self.start(slot, &root, budget, rng)?;
            }
        }
        let middle = slots.div_ceil(2);
        self.halves[0].trees = 0..middle;
        self.halves[1].trees = middle..slots;

        let mut pending_a = self.collect_and_submit(0, evaluator, rng, &mut next)?;
        loop {
            // Half B selects while half A is being evaluated, and the other way round.
            let pending_b = self.collect_and_submit(1, evaluator, rng, &mut next)?;
            match pending_a.take() {
                Some(p) => self.complete(0, p, evaluator)?,
                None if pending_b.is_none() => break,
                None => {}
            }
            pending_a = self.collect_and_submit(0, evaluator, rng, &mut next)?;
            match pending_b {
                Some(p) => self.complete(1, p, evaluator)?,
                None if pending_a.is_none() => break,
                None => {}
            }
        }
        Ok(())
    }

    /// Starts slot `slot` on `root`, naming the slot in a terminal-root error.
    fn start<R: Rng + ?Sized>(
        &mut self,
        slot: usize,
        root: &G,
        budget: u32,
        rng: &mut R,
    ) -> Result<(), SearchError> {
        self.searches[slot]
            .start(root, budget, rng)
            .map_err(|e| match e {
                SearchError::TerminalRoot { outcome, .. } => SearchError::TerminalRoot {
                    index: slot,
                    outcome,
                },
                other => other,
            })?;
        self.active[slot] = true;
        Ok(())
    }

    /// Selects one leaf per active tree of a half (handing finished searches to `next` for
    /// their successors) and submits those that need the evaluator; `None` when the half had
    /// nothing to evaluate (all its slots are done).
    fn collect_and_submit<E, R, F, Er>(
        &mut self,
        half: usize,
        evaluator: &E,
        rng: &mut R,
        next: &mut F,
    ) -> Result<Option<E::Pending>, Er>
    where
        E: Evaluator<G>,
        R: Rng + ?Sized,
        F: FnMut(usize, Option<SearchResult<G::Move>>, &mut R) -> Result<Option<(G, u32)>, Er>,
        Er: From<SearchError>,
    {
        self.halves[half].batch.clear();
        self.halves[half].members.clear();
        for tree in self.halves[half].trees.clone() {
            while self.active[tree] {
                let h = &mut self.halves[half];
                let search = &mut self.searches[tree];
                if select_uncached(
                    search,
                    tree,
                    self.leaves_per_tree,
                    &mut self.cache,
                    &mut self.stats,
                    &mut h.batch,
                    &mut h.members,
                ) {
                    if search.leaf_count() > 0 {
                        // Some leaves wait for the evaluator.
                        break;
                    }
                    // Every leaf came from the cache: select more.
                    continue;
                }
                let result = search.result();
                self.active[tree] = false;
                if let Some((root, budget)) = next(tree, Some(result), rng)? {
                    self.start(tree, &root, budget, rng)?;
                }
            }
        }
        let half = &mut self.halves[half];
        if half.batch.is_empty() {
            return Ok(None);
        }
        self.stats.batches += 1;
        self.stats.evaluated += half.batch.len() as u64;
        Ok(Some(
            evaluator.submit(&half.batch).map_err(SearchError::from)?,
        ))
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
        for (leaf, &(tree, index, key)) in half.members.iter().enumerate() {
            let logits = &ev.logits[half.batch.move_range(leaf)];
            searches[tree].apply_leaf_evaluation(index, logits, ev.values[leaf], ev.wdl[leaf]);
            cache.insert(key, logits, ev.values[leaf], ev.wdl[leaf]);
        }
        Ok(())
    }
}

/// Selects up to `max` leaves of `search` (tree `tree`), answers those in the cache at
/// once and appends the others to `batch` and `members`. Returns false when the search is
/// finished (nothing was selected).
fn select_uncached<G: Game>(
    search: &mut Search<G>,
    tree: usize,
    max: usize,
    cache: &mut EvalCache,
    stats: &mut DriverStats,
    batch: &mut LeafBatch<G>,
    members: &mut Vec<(usize, usize, u64)>,
) -> bool {
    if search.select_leaves(max) == Step::Finished {
        return false;
    }
    for i in 0..search.leaf_count() {
        let key = search.leaf_state_at(i).cache_key();
        if let Some(hit) = cache.get(key, search.leaf_moves_at(i).len()) {
            stats.cache_hits += 1;
            search.apply_leaf_evaluation(i, hit.logits, hit.value, hit.wdl);
            continue;
        }
        batch.push(search.leaf_state_at(i), search.leaf_moves_at(i));
        members.push((tree, i, key));
    }
    true
}
