//! The in-run evaluation: the new net against a fixed anchor, a row of `eval.tsv` and a
//! point of `elo.png` (Elo against the anchor with its 95% interval, over training steps and
//! minutes) each time. The anchor does not saturate as generation 0 and the random mover do
//! within minutes: a UCI engine at a fixed level when the run names one (`[eval] engine`,
//! `cfzero train --eval-engine`), else the built-in 1-ply material-greedy mover.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use cfzero_chess::ChessState;
use cfzero_eval::arena::{
    ArenaError, GreedyPlayer, MatchScore, Player, SearchPlayer, StoppablePlayer, play_match,
    score_sample,
};
use cfzero_eval::uci_client::{UciEngine, UciLimit, UciPlayer, options_text, resolve_command};
use cfzero_inference::{InferenceHandle, InferenceServer};
use cfzero_network::Net;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::config::{Config, EvalConfig};
use crate::error::user_error;
use crate::plot::{EloPoint, elo_plot};

/// The largest Elo difference `elo.png` and TensorBoard show: a match won or lost in every
/// game has an infinite estimate, and one end of its interval is infinite too.
pub const ELO_SHOWN: f64 = 800.0;

/// `elo` clipped to [`ELO_SHOWN`], as the plot and TensorBoard show it.
pub fn shown(elo: f64) -> f64 {
    elo.clamp(-ELO_SHOWN, ELO_SHOWN)
}

/// What the in-run evaluation plays against.
#[derive(Debug, Clone, PartialEq)]
pub enum Anchor {
    /// The built-in 1-ply material-greedy mover.
    Greedy,
    /// A UCI engine: its command line (resolved), the options it is sent where it offers
    /// them, and its budget a move.
    Engine {
        /// The command line.
        command: String,
        /// `(name, value)` options, each set only where the engine offers it.
        options: Vec<(String, String)>,
        /// Its search a move.
        limit: UciLimit,
    },
}

impl Anchor {
    /// The anchor `eval` names.
    pub fn of(eval: &EvalConfig) -> Anchor {
        if eval.engine.trim().is_empty() {
            return Anchor::Greedy;
        }
        Anchor::Engine {
            command: resolve_command(&eval.engine),
            options: eval
                .engine_options
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            limit: UciLimit::Nodes(eval.engine_nodes),
        }
    }

    /// Starts the anchor: the greedy mover, or `instances` processes of the engine (games
    /// played at the same time ask them in parallel) with the options it offers. Also the
    /// check at a run's start that the engine runs at all, so that a command that does not
    /// is an error before anything is trained.
    pub fn player(&self, instances: usize) -> Result<AnchorPlayer> {
        match self {
            Anchor::Greedy => Ok(AnchorPlayer::Greedy(GreedyPlayer)),
            Anchor::Engine {
                command,
                options,
                limit,
            } => {
                let mut engines = Vec::with_capacity(instances.max(1));
                let mut offered = Vec::new();
                for _ in 0..instances.max(1) {
                    let mut engine = UciEngine::launch(command).map_err(user_error)?;
                    offered = options
                        .iter()
                        .filter(|(name, _)| engine.offers(name))
                        .cloned()
                        .collect();
                    engine.configure(&offered).map_err(user_error)?;
                    engines.push(engine);
                }
                let mut label = format!("{} {limit}", engines[0].name());
                if !offered.is_empty() {
                    label = format!(
                        "{label}, {}",
                        options_text(offered.iter().map(|(k, v)| (k, v)))
                    );
                }
                let player =
                    UciPlayer::from_engines(engines, *limit).expect("an engine was started");
                Ok(AnchorPlayer::Engine { player, label })
            }
        }
    }
}

/// A started anchor.
#[derive(Debug)]
pub enum AnchorPlayer {
    /// The greedy mover.
    Greedy(GreedyPlayer),
    /// An engine, with the label of its settings.
    Engine {
        /// The engine.
        player: UciPlayer,
        /// `ENGINE-NAME BUDGET, Option=value, ...`.
        label: String,
    },
}

impl AnchorPlayer {
    /// The anchor's label (the settings it runs with).
    pub fn label(&self) -> String {
        match self {
            AnchorPlayer::Greedy(_) => "greedy".into(),
            AnchorPlayer::Engine { label, .. } => label.clone(),
        }
    }

    /// The anchor as a match player.
    pub fn as_player(&mut self) -> &mut dyn Player {
        match self {
            AnchorPlayer::Greedy(p) => p,
            AnchorPlayer::Engine { player, .. } => player,
        }
    }
}

/// One evaluation's result.
#[derive(Debug, Clone)]
pub struct EvalResult {
    /// The anchor's label.
    pub anchor: String,
    /// Wins, draws and losses of the new net.
    pub score: MatchScore,
    /// Elo against the anchor: (low end of the 95% interval, estimate, high end), from
    /// game pairs.
    pub elo: (f64, f64, f64),
}

/// Plays `candidate` against `anchor`, every opening with both colours. `None` if `stop`
/// was set before the match ended: it ends within a move of it, so that a deadline or
/// Ctrl-C is not held up by an evaluation.
pub fn evaluate(
    config: &Config,
    candidate: Net,
    anchor: &Anchor,
    openings: &[String],
    seed: u64,
    stop: &AtomicBool,
) -> Result<Option<EvalResult>> {
    let opts = config.inference.options(candidate.device());
    config.inference.use_threads();
    let net: InferenceHandle<ChessState> =
        InferenceServer::spawn(candidate, opts).map_err(user_error)?;
    let mut anchor = anchor.player(1)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Strongest play (the openings give the variety).
    let mut new = SearchPlayer::new(
        "new",
        &net,
        config.search.for_play(),
        config.eval.simulations,
    );
    let mut candidate = StoppablePlayer::new(&mut new, stop);
    let mut opponent = StoppablePlayer::new(anchor.as_player(), stop);
    let max_plies = config.selfplay.max_plies;
    match play_match(&mut candidate, &mut opponent, openings, max_plies, &mut rng) {
        Ok((score, games)) => Ok(Some(EvalResult {
            anchor: anchor.label(),
            score,
            elo: score_sample(&games).elo_interval(),
        })),
        Err(ArenaError::Stopped) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The header of `eval.tsv`.
const EVAL_HEADER: &str =
    "generation\tstep\tminutes\tanchor\twins\tdraws\tlosses\tscore\telo\telo_low\telo_high";

/// One row of `eval.tsv`.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalRow {
    /// The evaluated generation.
    pub generation: u32,
    /// Training steps before it was published.
    pub step: u64,
    /// Minutes from generation 0's net to its.
    pub minutes: f64,
    /// The anchor's label.
    pub anchor: String,
    /// Wins, draws and losses of the net.
    pub score: MatchScore,
    /// Elo: low end, estimate, high end (infinite for a match won or lost throughout).
    pub elo: (f64, f64, f64),
}

impl EvalRow {
    fn to_line(&self) -> String {
        let s = &self.score;
        format!(
            "{}\t{}\t{:.2}\t{}\t{}\t{}\t{}\t{:.4}\t{:.1}\t{:.1}\t{:.1}",
            self.generation,
            self.step,
            self.minutes,
            self.anchor.replace('\t', " "),
            s.wins,
            s.draws,
            s.losses,
            s.score(),
            // `+ 0.0` writes an even score's -0 as 0.
            self.elo.1 + 0.0,
            self.elo.0 + 0.0,
            self.elo.2 + 0.0
        )
    }

    /// A row of `eval.tsv`, or `None` for the header or a line that is not one (a line
    /// cut off by a kill, say).
    fn parse(line: &str) -> Option<EvalRow> {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 11 {
            return None;
        }
        Some(EvalRow {
            generation: f[0].parse().ok()?,
            step: f[1].parse().ok()?,
            minutes: f[2].parse().ok()?,
            anchor: f[3].to_string(),
            score: MatchScore {
                wins: f[4].parse().ok()?,
                draws: f[5].parse().ok()?,
                losses: f[6].parse().ok()?,
            },
            elo: (f[9].parse().ok()?, f[8].parse().ok()?, f[10].parse().ok()?),
        })
    }

    /// The row as a point of the plot, the Elo and its interval clipped to [`ELO_SHOWN`].
    fn point(&self) -> EloPoint {
        let (lo, elo, hi) = (shown(self.elo.0), shown(self.elo.1), shown(self.elo.2));
        EloPoint {
            step: self.step as f64,
            minutes: self.minutes,
            elo,
            low: lo,
            high: hi,
        }
    }
}

/// Appends `row` to `log` (written with its header when new) in one write, so that a kill
/// leaves whole lines.
pub fn append_row(log: &Path, row: &EvalRow) -> Result<()> {
    use std::io::Write;
    let new = !log.exists();
    let mut text = String::new();
    if new {
        text.push_str(EVAL_HEADER);
        text.push('\n');
    }
    text.push_str(&row.to_line());
    text.push('\n');
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .with_context(|| format!("writing {}", log.display()))
}

/// The rows of `log` (none if it does not exist; lines that are not rows are skipped).
pub fn read_rows(log: &Path) -> Result<Vec<EvalRow>> {
    match std::fs::read_to_string(log) {
        Ok(text) => Ok(text.lines().filter_map(EvalRow::parse).collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("reading {}", log.display())),
    }
}

/// Draws `png` from `log`: the rows against the newest row's anchor (a resumed run may
/// have changed it; Elo against two anchors is not one curve).
pub fn redraw(log: &Path, png: &Path, run: &str) -> Result<()> {
    let rows = read_rows(log)?;
    let Some(last) = rows.last() else {
        return Ok(());
    };
    let points: Vec<EloPoint> = rows
        .iter()
        .filter(|r| r.anchor == last.anchor)
        .map(EvalRow::point)
        .collect();
    let title = format!("{run}: Elo against {}", last.anchor);
    elo_plot(
        &points,
        &title,
        "Elo against the anchor (95% interval)",
        png,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(generation: u32, wins: u32, draws: u32, losses: u32, elo: (f64, f64, f64)) -> EvalRow {
        EvalRow {
            generation,
            step: u64::from(generation) * 10,
            minutes: f64::from(generation) / 2.0,
            anchor: "stockfish 100 nodes, Skill Level=0".into(),
            score: MatchScore {
                wins,
                draws,
                losses,
            },
            elo,
        }
    }

    #[test]
    fn rows_round_trip_through_the_log_and_bad_lines_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("eval.tsv");
        let a = row(6, 3, 4, 13, (-400.0, -250.5, -130.0));
        let b = row(12, 20, 0, 0, (200.0, f64::INFINITY, f64::INFINITY));
        append_row(&log, &a).unwrap();
        append_row(&log, &b).unwrap();
        // A line cut off by a kill.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"18\t180\t9.0\tstock"))
            .unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.starts_with("generation\tstep\tminutes\tanchor\t"));
        assert_eq!(text.matches("generation\t").count(), 1, "one header");
        let rows = read_rows(&log).unwrap();
        assert_eq!(rows, vec![a, b.clone()]);
        assert!(text.contains("\t1.0000\tinf\t200.0\tinf\n"), "{text}");
        // An infinite estimate is drawn at the edge of the plot.
        let p = b.point();
        assert_eq!(p.elo, ELO_SHOWN);
        assert_eq!((p.low, p.high), (200.0, ELO_SHOWN));
    }

    #[test]
    fn the_plot_draws_the_newest_anchors_rows() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("eval.tsv");
        let png = dir.path().join("elo.png");
        redraw(&log, &png, "run").unwrap();
        assert!(!png.exists(), "no rows, no plot");
        append_row(&log, &row(6, 1, 2, 17, (-600.0, -450.0, -330.0))).unwrap();
        append_row(&log, &row(12, 5, 5, 10, (-260.0, -120.0, 10.0))).unwrap();
        redraw(&log, &png, "run").unwrap();
        let bytes = std::fs::read(&png).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    }

    #[test]
    fn the_anchor_is_the_greedy_mover_unless_an_engine_is_named() {
        let mut eval = EvalConfig::default();
        assert_eq!(Anchor::of(&eval), Anchor::Greedy);
        assert_eq!(Anchor::of(&eval).player(1).unwrap().label(), "greedy");
        eval.engine = "/opt/engines/stockfish --uci".into();
        eval.engine_nodes = 250;
        let Anchor::Engine {
            command,
            limit,
            options,
        } = Anchor::of(&eval)
        else {
            panic!("an engine anchor");
        };
        assert_eq!(command, "/opt/engines/stockfish --uci");
        assert_eq!(limit, UciLimit::Nodes(250));
        assert!(options.contains(&("Skill Level".into(), "0".into())));
    }
}
