//! PNG charts (plotters, bitmap backend) with an embedded font, so that they render the same
//! on any machine.

use std::path::Path;
use std::sync::Once;

use anyhow::{Context, Result, anyhow};
use plotters::prelude::*;
use plotters::style::FontStyle;

/// DejaVu Sans (Bitstream Vera license, `assets/fonts/DejaVuSans.copyright`).
const FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");

/// Makes the embedded font plotters' `sans-serif`.
fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The font is a fixed, valid file; failing here would be a build defect.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// One rated net of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EloPoint {
    /// Training steps before the net was published.
    pub step: f64,
    /// Minutes into the run when it was published.
    pub minutes: f64,
    /// Elo against the plot's reference (generation 0 in a ladder, the anchor in a run).
    pub elo: f64,
    /// The low end of the 95% interval.
    pub low: f64,
    /// The high end of the 95% interval.
    pub high: f64,
}

/// Which x coordinate of a point a panel shows.
type XOf = fn(&EloPoint) -> f64;

/// Draws Elo against training step (left) and against wall time (right), with 95% intervals;
/// `y_label` says what the Elo is measured against.
pub fn elo_plot(points: &[EloPoint], title: &str, y_label: &str, path: &Path) -> Result<()> {
    register_font();
    let draw =
        || -> Result<(), Box<dyn std::error::Error>> {
            let root = BitMapBackend::new(path, (1200, 520)).into_drawing_area();
            root.fill(&WHITE)?;
            let root = root.titled(title, ("sans-serif", 22))?;
            let (left, right) = root.split_horizontally(600);
            let lo = points.iter().map(|p| p.low).fold(0.0f64, f64::min);
            let hi = points.iter().map(|p| p.high).fold(0.0f64, f64::max);
            let pad = ((hi - lo) * 0.05).max(10.0);
            let step: XOf = |p| p.step;
            let minutes: XOf = |p| p.minutes;
            for (area, label, x) in [
                (&left, "training step", step),
                (&right, "wall time (minutes)", minutes),
            ] {
                let x_max = points.iter().map(x).fold(1e-9f64, f64::max);
                let mut chart = ChartBuilder::on(area)
                    .margin(12)
                    .x_label_area_size(40)
                    .y_label_area_size(56)
                    .build_cartesian_2d(0.0..x_max * 1.03, (lo - pad)..(hi + pad))?;
                chart
                    .configure_mesh()
                    .x_desc(label)
                    .y_desc(y_label)
                    .label_style(("sans-serif", 14))
                    .draw()?;
                let colour = RGBColor(31, 119, 180);
                chart.draw_series(LineSeries::new(
                    points.iter().map(|p| (x(p), p.elo)),
                    colour,
                ))?;
                chart.draw_series(points.iter().map(|p| {
                    ErrorBar::new_vertical(x(p), p.low, p.elo, p.high, colour.filled(), 6)
                }))?;
            }
            root.present()?;
            Ok(())
        };
    draw()
        .map_err(|e| anyhow!("{e}"))
        .with_context(|| format!("drawing {}", path.display()))
}

/// One measured line of a curve: its name and its points, each (minutes, score, low, high)
/// with the score and its 95% interval in [0, 1].
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreSeries {
    /// What was measured (the opponent, or the puzzles).
    pub name: String,
    /// The points, by minutes.
    pub points: Vec<(f64, f64, f64, f64)>,
}

/// Draws each series' score in percent against training minutes, with its 95% intervals and
/// a legend.
pub fn score_curve(series: &[ScoreSeries], title: &str, path: &Path) -> Result<()> {
    register_font();
    const COLOURS: [RGBColor; 4] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(148, 103, 189),
    ];
    let draw = || -> Result<(), Box<dyn std::error::Error>> {
        let root = BitMapBackend::new(path, (900, 560)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(title, ("sans-serif", 20))?;
        let x_max = series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .fold(1e-9f64, f64::max);
        let mut chart = ChartBuilder::on(&root)
            .margin(14)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..x_max * 1.05, 0.0..100.0)?;
        chart
            .configure_mesh()
            .x_desc("training (minutes from zero)")
            .y_desc("score or share solved, % (95% interval)")
            .label_style(("sans-serif", 14))
            .draw()?;
        for (i, s) in series.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().map(|p| (p.0, 100.0 * p.1)),
                    colour.stroke_width(2),
                ))?
                .label(s.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                });
            chart.draw_series(s.points.iter().map(|p| {
                ErrorBar::new_vertical(
                    p.0,
                    100.0 * p.2,
                    100.0 * p.1,
                    100.0 * p.3,
                    colour.filled(),
                    8,
                )
            }))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()?;
        root.present()?;
        Ok(())
    };
    draw()
        .map_err(|e| anyhow!("{e}"))
        .with_context(|| format!("drawing {}", path.display()))
}

/// Draws a chess board, white at the bottom, each square shaded by `weights[square]` (a1 = 0,
/// h8 = 63; white to red, scaled to the largest weight) and labelled with its percentage, the
/// pieces as letters (`pieces[square]`, uppercase white), and the `query` square outlined.
pub fn attention_board(
    weights: &[f32; 64],
    pieces: &[Option<char>; 64],
    query: usize,
    title: &str,
    path: &Path,
) -> Result<()> {
    register_font();
    const CELL: i32 = 64;
    const MARGIN: i32 = 40;
    let draw = || -> Result<(), Box<dyn std::error::Error>> {
        let size = (8 * CELL + 2 * MARGIN) as u32;
        let root = BitMapBackend::new(path, (size, size + 30)).into_drawing_area();
        root.fill(&WHITE)?;
        let font = |px: i32| ("sans-serif", px).into_font();
        root.draw(&Text::new(title.to_string(), (MARGIN, 8), font(18)))?;
        let top = MARGIN + 20;
        let max = weights.iter().copied().fold(f32::MIN_POSITIVE, f32::max);
        for (square, &weight) in weights.iter().enumerate() {
            let (file, rank) = ((square % 8) as i32, (square / 8) as i32);
            let (x, y) = (MARGIN + file * CELL, top + (7 - rank) * CELL);
            let cell = [(x, y), (x + CELL, y + CELL)];
            let fade = (255.0 * (1.0 - (weight / max).clamp(0.0, 1.0))) as u8;
            root.draw(&Rectangle::new(cell, RGBColor(255, fade, fade).filled()))?;
            let edge = if square == query {
                RGBColor(31, 119, 180).stroke_width(4)
            } else {
                RGBColor(160, 160, 160).stroke_width(1)
            };
            root.draw(&Rectangle::new(cell, edge))?;
            if let Some(piece) = pieces[square] {
                let colour = if piece.is_ascii_uppercase() {
                    RGBColor(0, 0, 0)
                } else {
                    RGBColor(110, 70, 20)
                };
                let text = font(32).color(&colour);
                root.draw(&Text::new(
                    piece.to_string(),
                    (x + CELL / 2 - 10, y + CELL / 2 - 16),
                    text,
                ))?;
            }
            let percent = format!("{:.0}", 100.0 * weight);
            root.draw(&Text::new(percent, (x + 3, y + CELL - 15), font(12)))?;
        }
        for i in 0..8 {
            let file = char::from(b'a' + i as u8).to_string();
            let below = (MARGIN + i * CELL + CELL / 2 - 4, top + 8 * CELL + 6);
            root.draw(&Text::new(file, below, font(16)))?;
            let left = (MARGIN - 20, top + i * CELL + CELL / 2 - 8);
            root.draw(&Text::new((8 - i).to_string(), left, font(16)))?;
        }
        root.present()?;
        Ok(())
    };
    draw()
        .map_err(|e| anyhow!("{e}"))
        .with_context(|| format!("drawing {}", path.display()))
}
