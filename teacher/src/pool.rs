//! Engine processes that label positions in parallel.
//!
//! Each process has a thread of its own that takes positions from a shared queue. An engine
//! that hangs (no answer within the timeout), dies, prints garbage or answers an illegal or
//! unasked move is killed and started again, with a warning, and the position is tried again
//! on the new process; after [`PoolOptions::attempts`] failures the position gets a
//! [`LabelEntry::Skipped`] with the last reason, so no position is lost and no label
//! invented. An engine that cannot be started again ends its thread with
//! [`PoolEvent::Failed`], which hands its position back.

use std::thread::JoinHandle;
use std::time::Duration;

use cfzero_chess::{ChessState, HistoryFill};
use cfzero_eval::arena::GameLine;
use cfzero_eval::uci_client::{UciClientError, UciLimit};
use crossbeam_channel::{Receiver, Sender, unbounded};

use crate::analysis::{Analysis, AnalysisError, Analyst, Method};
use crate::label_file::{ActionValues, Label, LabelEntry, LabelHeader, LabelHistory, LabelMove};

/// How the pool's engines are run.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolOptions {
    /// The engine's command line.
    pub command: String,
    /// UCI options set after the handshake, in order.
    pub options: Vec<(String, String)>,
    /// The search budget of one search.
    pub limit: UciLimit,
    /// How action values are obtained.
    pub method: Method,
    /// Engine processes (and threads).
    pub processes: usize,
    /// The longest one answer may take before the engine counts as hung.
    pub timeout: Duration,
    /// Tries per position before it is skipped.
    pub attempts: usize,
}

impl PoolOptions {
    /// The header of a label file these engines write with positions from `source`
    /// (cfzero writes centipawn action values).
    pub fn header(&self, source: &str) -> LabelHeader {
        LabelHeader {
            engine: self.command.clone(),
            options: self.options.clone(),
            limit: self.limit.to_string(),
            method: self.method,
            source: source.to_owned(),
            action_values: ActionValues::Centipawns,
            split: None,
        }
    }
}

/// A position to label.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Its number in the source (results come back with it, in any order).
    pub index: u64,
    /// The position.
    pub fen: String,
    /// Plies to the end of its game, when it came from one.
    pub plies_left: Option<u16>,
    /// The game's plies before it, when it came from one (kept in its label).
    pub history: Option<LabelHistory>,
}

/// What the pool reports.
#[derive(Debug)]
pub enum PoolEvent {
    /// The entry of job `index`.
    Done(u64, LabelEntry),
    /// Something went wrong and was handled (an engine restarted).
    Warning(String),
    /// An engine could not be started again: its thread has ended, and hands back the
    /// position it was on (for another engine).
    Failed(String, Job),
}

/// Engine processes labelling positions (see the module docs).
#[derive(Debug)]
pub struct EnginePool {
    jobs: Option<Sender<Job>>,
    events: Receiver<PoolEvent>,
    threads: Vec<JoinHandle<()>>,
    name: String,
}

/// How often, and how long apart, a dead engine is started again before its thread gives up.
const RESTARTS: usize = 3;
const RESTART_PAUSE: Duration = Duration::from_millis(500);

impl EnginePool {
    /// Starts `options.processes` engines (all of them before returning, so that a command
    /// that does not run is an error here).
    pub fn start(options: &PoolOptions) -> Result<EnginePool, UciClientError> {
        let analysts = (0..options.processes.max(1))
            .map(|_| Analyst::start(&options.command, &options.options))
            .collect::<Result<Vec<_>, _>>()?;
        let name = analysts[0].name().to_string();
        let (job_tx, job_rx) = unbounded::<Job>();
        let (event_tx, events) = unbounded();
        let threads = analysts
            .into_iter()
            .enumerate()
            .map(|(i, analyst)| {
                let (jobs, events, options) = (job_rx.clone(), event_tx.clone(), options.clone());
                std::thread::spawn(move || worker(i, analyst, &options, &jobs, &events))
            })
            .collect();
        Ok(EnginePool {
            jobs: Some(job_tx),
            events,
            threads,
            name,
        })
    }

    /// The engine's `id name`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Queues `job`.
    pub fn submit(&self, job: Job) {
        if let Some(jobs) = &self.jobs {
            // Fails only when every worker has ended, which `next_event` reports.
            let _ = jobs.send(job);
        }
    }

    /// The next event, waiting at most `wait`; `None` when none came or every worker ended.
    pub fn next_event(&self, wait: Duration) -> Option<PoolEvent> {
        self.events.recv_timeout(wait).ok()
    }

    /// Whether every worker thread has ended (their engines could not be restarted).
    pub fn all_failed(&self) -> bool {
        self.threads.iter().all(JoinHandle::is_finished)
    }
}

impl Drop for EnginePool {
    fn drop(&mut self) {
        // Closing the queue ends each worker after its current position; its engine quits.
        self.jobs = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The label of `analysis`.
pub fn label_of(job: &Job, analysis: &Analysis) -> Label {
    Label {
        fen: job.fen.clone(),
        plies_left: job.plies_left,
        wdl: analysis.state().wdl(),
        moves: analysis
            .moves
            .iter()
            .map(|(m, v)| (LabelMove::of(m), v.action_value()))
            .collect(),
        best: analysis.best,
        history: job.history.clone(),
    }
}

fn worker(
    i: usize,
    analyst: Analyst,
    options: &PoolOptions,
    jobs: &Receiver<Job>,
    events: &Sender<PoolEvent>,
) {
    let mut analyst = Some(analyst);
    for job in jobs {
        let state = match ChessState::from_fen(&job.fen, HistoryFill::FenOnly) {
            Ok(s) => s,
            Err(e) => {
                let reason = format!("not a position: {e}");
                let _ = events.send(PoolEvent::Done(
                    job.index,
                    LabelEntry::Skipped {
                        fen: job.fen,
                        reason,
                    },
                ));
                continue;
            }
        };
        // The engine sees the game's last plies where the job has them (a history that does
        // not lead to the position is left out: its label is refused when it is read).
        let history = job
            .history
            .as_ref()
            .and_then(|h| Some((h.root_fen.as_str(), h.line_to(&job.fen)?)));
        let line = match &history {
            Some((root, moves)) => GameLine {
                start_fen: Some(root),
                moves,
            },
            None => GameLine {
                start_fen: Some(&job.fen),
                moves: &[],
            },
        };
        let mut attempt = 0;
        let entry = loop {
            attempt += 1;
            let Some(engine) = analyst.as_mut() else {
                return;
            };
            let error = match engine.analyse(
                &state,
                &line,
                options.limit,
                options.method,
                options.timeout,
            ) {
                Ok(a) => break LabelEntry::Label(label_of(&job, &a)),
                Err(AnalysisError::NoMoves { .. }) => {
                    break LabelEntry::Skipped {
                        fen: job.fen.clone(),
                        reason: "no legal move".into(),
                    };
                }
                Err(e) => e,
            };
            let _ = events.send(PoolEvent::Warning(format!(
                "engine {i}: {error}; restarting it (attempt {attempt} of {})",
                options.attempts.max(1)
            )));
            // Dropping the engine kills its process.
            drop(analyst.take());
            analyst = restart(options);
            if analyst.is_none() {
                let _ = events.send(PoolEvent::Failed(
                    format!(
                        "engine {i}: `{}` does not start again; its position goes to another engine",
                        options.command
                    ),
                    job,
                ));
                return;
            }
            if attempt >= options.attempts.max(1) {
                break LabelEntry::Skipped {
                    fen: job.fen.clone(),
                    reason: error.to_string(),
                };
            }
        };
        if events.send(PoolEvent::Done(job.index, entry)).is_err() {
            return;
        }
    }
}

fn restart(options: &PoolOptions) -> Option<Analyst> {
    for _ in 0..RESTARTS {
        if let Ok(a) = Analyst::start(&options.command, &options.options) {
            return Some(a);
        }
        std::thread::sleep(RESTART_PAUSE);
    }
    None
}
