//! The batched inference server: one thread owns a [`Backend`] (the net) and evaluates the
//! leaf batches that many actor threads send it, several requests per forward pass. It
//! encodes positions, merges requests, gathers each position's legal-move logits and keeps
//! statistics; the backend only runs the network.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use cfzero_mcts::{EvalError, Evaluations, Evaluator, LeafBatch};
use crossbeam_channel::{Receiver, Sender, TryRecvError};
use tch::Kind;

use crate::backend::{
    Backend, BackendChoice, BackendError, BackendOutputs, Capabilities, MaterialBackend,
    NamedWeights, NativeBackend, ServingBackend, TchBackend,
};
use crate::input::{INPUT_FLOATS, NetInput};
use cfzero_network::encoding::POLICY_SIZE;
use cfzero_network::model::Net;

/// The largest batch of a server that is not told otherwise (`[inference] max_batch`, the servers of
/// `match`, `ladder`, `puzzles`): 256 positions, past which a CPU pass gains nothing.
pub const DEFAULT_MAX_BATCH: usize = 256;

/// Options of [`InferenceServer::spawn`].
#[derive(Debug, Clone, Copy)]
pub struct InferenceOptions {
    /// Most positions per forward pass (a single larger request still runs, alone).
    pub max_batch: usize,
    /// Capacity of the request channel (in requests); senders block when it is full.
    pub queue_capacity: usize,
    /// Kind the net runs in: `Float`, or `BFloat16` (see [`cfzero_network::precision`]).
    pub kind: Kind,
    /// Which backend serves the net (`auto` resolved by [`BackendChoice::resolve`]).
    pub backend: BackendChoice,
}

impl Default for InferenceOptions {
    fn default() -> Self {
        InferenceOptions {
            max_batch: DEFAULT_MAX_BATCH,
            queue_capacity: 64,
            kind: Kind::Float,
            backend: BackendChoice::Auto,
        }
    }
}

/// Counters of the inference thread.
#[derive(Debug, Default)]
pub struct InferenceStats {
    batches: AtomicU64,
    positions: AtomicU64,
    busy_nanos: AtomicU64,
}

/// A snapshot of [`InferenceStats`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StatsSnapshot {
    /// Forward passes run.
    pub batches: u64,
    /// Positions evaluated.
    pub positions: u64,
    /// Seconds spent building inputs, running the net and splitting results (summed over
    /// servers for a sum of snapshots).
    pub busy_seconds: f64,
    /// Inference threads counted (1 for one server's snapshot).
    pub servers: u32,
}

impl std::iter::Sum for StatsSnapshot {
    fn sum<I: Iterator<Item = StatsSnapshot>>(iter: I) -> StatsSnapshot {
        iter.fold(StatsSnapshot::default(), |a, b| StatsSnapshot {
            batches: a.batches + b.batches,
            positions: a.positions + b.positions,
            busy_seconds: a.busy_seconds + b.busy_seconds,
            servers: a.servers + b.servers,
        })
    }
}

impl StatsSnapshot {
    /// The share of `seconds` of wall time the inference threads were busy (1.0: every one of
    /// them all the time).
    pub fn busy_share(&self, seconds: f64) -> f64 {
        self.busy_seconds / (seconds * f64::from(self.servers.max(1))).max(1e-9)
    }

    /// Average positions per forward pass.
    pub fn average_batch(&self) -> f64 {
        if self.batches == 0 {
            0.0
        } else {
            self.positions as f64 / self.batches as f64
        }
    }
}

/// One leaf batch on its way to the inference thread.
struct Request {
    leaves: usize,
    inputs: Vec<f32>,
    /// Policy index of every legal move, flat, in the batch's move order.
    moves: Vec<u32>,
    move_starts: Vec<usize>,
    reply: Sender<Result<Reply, BackendError>>,
}

/// Results of one request.
struct Reply {
    logits: Vec<f32>,
    wdl: Vec<[f32; 3]>,
    values: Vec<f32>,
}

enum Message {
    Evaluate(Request),
    /// New weights for the backend; the reply says whether they fit.
    Publish(NamedWeights, Sender<Result<(), BackendError>>),
}

/// Recycled input buffers, so that a warm server allocates no input memory per request.
#[derive(Default)]
struct BufferPool(Mutex<Vec<Vec<f32>>>);

impl BufferPool {
    fn take(&self) -> Vec<f32> {
        self.0
            .lock()
            .map(|mut p| p.pop())
            .ok()
            .flatten()
            .unwrap_or_default()
    }
    fn give(&self, mut buf: Vec<f32>) {
        buf.clear();
        if let Ok(mut p) = self.0.lock()
            && p.len() < 256
        {
            p.push(buf);
        }
    }
}

/// Spawns inference threads.
pub struct InferenceServer;

impl InferenceServer {
    /// Moves `net` onto a new inference thread (eval mode: every forward pass runs under
    /// `no_grad`) and returns the handle that evaluators share. The thread ends when every
    /// handle is dropped.
    ///
    /// The one place a backend is chosen: `options.backend` resolved for the net's device
    /// and `options.kind` ([`BackendChoice::resolve`]): a [`TchBackend`] readied for
    /// `options.kind` and `max_batch`, a [`NativeBackend`] with the net's weights laid out
    /// for it, or a [`MaterialBackend`] (the net unused). Fails if the asked backend cannot
    /// serve the net there.
    pub fn spawn<G: NetInput>(
        net: Net,
        options: InferenceOptions,
    ) -> Result<InferenceHandle<G>, BackendError> {
        Ok(match options.backend.resolve(net.device(), options.kind)? {
            ServingBackend::Native => Self::spawn_backend(
                NativeBackend::from_net(&net, options.kind, options.max_batch)?,
                options,
            ),
            ServingBackend::Material => Self::spawn_backend(MaterialBackend, options),
            ServingBackend::Tch => Self::spawn_backend(
                TchBackend::new(net, options.kind, options.max_batch),
                options,
            ),
        })
    }

    /// Moves `backend` onto a new inference thread (`options.kind` is the backend's
    /// business; the server uses `max_batch` and `queue_capacity`).
    pub fn spawn_backend<G: NetInput, B: Backend + 'static>(
        backend: B,
        options: InferenceOptions,
    ) -> InferenceHandle<G> {
        let capabilities = backend.capabilities();
        let (tx, rx) = crossbeam_channel::bounded(options.queue_capacity.max(1));
        let stats = Arc::new(InferenceStats::default());
        let pool = Arc::new(BufferPool::default());
        let thread = {
            let (stats, pool) = (stats.clone(), pool.clone());
            let max_batch = options.max_batch.max(1);
            std::thread::Builder::new()
                .name("inference".into())
                .spawn(move || serve(backend, rx, max_batch, &stats, &pool))
                .expect("spawning the inference thread")
        };
        InferenceHandle {
            tx,
            capabilities: Arc::new(capabilities),
            stats,
            pool,
            thread: Arc::new(Mutex::new(Some(thread))),
            _game: PhantomData,
        }
    }
}

/// A shared handle to the inference thread; implements [`Evaluator`]. Cheap to clone.
pub struct InferenceHandle<G> {
    tx: Sender<Message>,
    capabilities: Arc<Capabilities>,
    stats: Arc<InferenceStats>,
    pool: Arc<BufferPool>,
    thread: Arc<Mutex<Option<JoinHandle<()>>>>,
    _game: PhantomData<fn() -> G>,
}

impl<G> Clone for InferenceHandle<G> {
    fn clone(&self) -> Self {
        InferenceHandle {
            tx: self.tx.clone(),
            capabilities: self.capabilities.clone(),
            stats: self.stats.clone(),
            pool: self.pool.clone(),
            thread: self.thread.clone(),
            _game: PhantomData,
        }
    }
}

/// A submitted batch.
pub struct PendingEval {
    reply: Receiver<Result<Reply, BackendError>>,
}

impl<G> InferenceHandle<G> {
    /// The thread's counters so far.
    pub fn stats(&self) -> StatsSnapshot {
        StatsSnapshot {
            batches: self.stats.batches.load(Ordering::Relaxed),
            positions: self.stats.positions.load(Ordering::Relaxed),
            busy_seconds: self.stats.busy_nanos.load(Ordering::Relaxed) as f64 * 1e-9,
            servers: 1,
        }
    }

    /// What the served backend is.
    pub fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    /// Replaces the served net's weights with those of `net` (same config) between requests;
    /// returns once the thread has copied them. Requests sent before are evaluated with the old weights.
    pub fn publish(&self, net: &Net) -> Result<(), EvalError> {
        let weights = TchBackend::weights_of(net).map_err(failed)?;
        self.publish_weights(weights)
    }

    /// Replaces the backend's weights with `weights` (see [`InferenceHandle::publish`]).
    pub fn publish_weights(&self, weights: NamedWeights) -> Result<(), EvalError> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.tx
            .send(Message::Publish(weights, tx))
            .map_err(|_| gone())?;
        rx.recv().map_err(|_| gone())?.map_err(failed)
    }
}

/// A backend's error as the search's: the search crate knows no backend, so it is said in
/// words there.
fn failed(e: BackendError) -> EvalError {
    EvalError::Failed(e.to_string())
}

fn gone() -> EvalError {
    EvalError::Unavailable("the inference thread has stopped".into())
}

impl<G: NetInput> Evaluator<G> for InferenceHandle<G> {
    type Pending = PendingEval;

    fn submit(&self, batch: &LeafBatch<G>) -> Result<PendingEval, EvalError> {
        let n = batch.len();
        let mut inputs = self.pool.take();
        inputs.resize(n * INPUT_FLOATS, 0.0);
        let mut moves = Vec::with_capacity(batch.total_moves());
        let mut move_starts = Vec::with_capacity(n + 1);
        move_starts.push(0);
        for i in 0..n {
            let state = batch.state(i);
            state.encode(
                self.capabilities.history_fill,
                &mut inputs[i * INPUT_FLOATS..(i + 1) * INPUT_FLOATS],
            );
            moves.extend(batch.moves(i).iter().map(|m| state.policy_index(m) as u32));
            move_starts.push(moves.len());
        }
        let (reply, rx) = crossbeam_channel::bounded(1);
        let request = Request {
            leaves: n,
            inputs,
            moves,
            move_starts,
            reply,
        };
        self.tx
            .send(Message::Evaluate(request))
            .map_err(|_| gone())?;
        Ok(PendingEval { reply: rx })
    }

    fn complete(&self, pending: PendingEval, out: &mut Evaluations) -> Result<(), EvalError> {
        let reply = pending.reply.recv().map_err(|_| gone())?.map_err(failed)?;
        out.reset(reply.values.len(), reply.logits.len());
        out.logits.copy_from_slice(&reply.logits);
        out.values.copy_from_slice(&reply.values);
        out.wdl.copy_from_slice(&reply.wdl);
        Ok(())
    }
}

/// The inference thread's loop.
fn serve<B: Backend>(
    mut backend: B,
    rx: Receiver<Message>,
    max_batch: usize,
    stats: &InferenceStats,
    pool: &BufferPool,
) {
    let mut staging: Vec<f32> = Vec::new();
    let mut outputs = BackendOutputs::default();
    let mut batch: Vec<Request> = Vec::new();
    let mut deferred: Option<Message> = None;
    loop {
        let first = match deferred.take() {
            Some(m) => m,
            None => match rx.recv() {
                Ok(m) => m,
                Err(_) => return,
            },
        };
        let mut positions = match first {
            Message::Publish(weights, ack) => {
                let _ = ack.send(backend.reload(&weights));
                continue;
            }
            Message::Evaluate(r) => {
                let n = r.leaves;
                batch.push(r);
                n
            }
        };
        // Drain what is queued, up to max_batch positions; a publish waits for this batch.
        while positions < max_batch {
            match rx.try_recv() {
                Ok(Message::Evaluate(r)) if positions + r.leaves <= max_batch => {
                    positions += r.leaves;
                    batch.push(r);
                }
                Ok(other) => {
                    deferred = Some(other);
                    break;
                }
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        // Counted before the replies go out, so that a requester that has its answer also
        // sees it counted.
        stats.batches.fetch_add(1, Ordering::Relaxed);
        stats
            .positions
            .fetch_add(positions as u64, Ordering::Relaxed);
        let start = Instant::now();
        run_batch(
            &mut backend,
            &mut batch,
            positions,
            &mut staging,
            &mut outputs,
            pool,
        );
        stats
            .busy_nanos
            .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }
}

/// Evaluates the requests of `batch` in one forward pass and answers each.
fn run_batch<B: Backend>(
    backend: &mut B,
    batch: &mut Vec<Request>,
    positions: usize,
    staging: &mut Vec<f32>,
    outputs: &mut BackendOutputs,
    pool: &BufferPool,
) {
    staging.clear();
    for r in batch.iter() {
        staging.extend_from_slice(&r.inputs);
    }
    let result = backend.forward(staging, positions, outputs);
    let mut row = 0;
    for r in batch.drain(..) {
        let reply = match &result {
            Ok(()) => {
                let BackendOutputs {
                    policy,
                    wdl,
                    values,
                } = &*outputs;
                let mut logits = Vec::with_capacity(r.moves.len());
                let mut wdl_out = Vec::with_capacity(r.leaves);
                for leaf in 0..r.leaves {
                    let base = (row + leaf) * POLICY_SIZE;
                    logits.extend(
                        r.moves[r.move_starts[leaf]..r.move_starts[leaf + 1]]
                            .iter()
                            .map(|&m| policy[base + m as usize]),
                    );
                    let w = &wdl[(row + leaf) * 3..(row + leaf) * 3 + 3];
                    wdl_out.push([w[0], w[1], w[2]]);
                }
                Ok(Reply {
                    logits,
                    wdl: wdl_out,
                    values: values[row..row + r.leaves].to_vec(),
                })
            }
            Err(e) => Err(e.clone()),
        };
        row += r.leaves;
        // The requester may have given up; nothing to do then.
        let _ = r.reply.send(reply);
        pool.give(r.inputs);
    }
}
