//! PNG charts: strategy reports (Hit@k and the full-evidence share per strategy, beside
//! the average input tokens per question), request-log reports (each metric per group
//! with its 95% interval), and the ANN scale curve (QPS at a recall target against size). Text is drawn with DejaVu Sans embedded in the
//! binary, so no system font is needed.

use std::path::Path;
use std::sync::OnceLock;

use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::ann::curve::{Curve, ENGINES};
use crate::error::EvalError;
use crate::score::StrategyReport;
use folio::review::{Estimate, GroupMetrics, LogReport};

/// The font family name the chart registers and uses.
const FONT: &str = "sans-serif";
const COLORS: [RGBColor; 6] = [
    RGBColor(158, 202, 225),
    RGBColor(66, 146, 198),
    RGBColor(8, 69, 148),
    RGBColor(227, 74, 51),
    RGBColor(116, 196, 118),
    RGBColor(150, 150, 150),
];

fn register_font() -> Result<(), EvalError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular()).is_ok()
    });
    if *ok {
        Ok(())
    } else {
        Err(EvalError::Plot("the embedded font does not load".into()))
    }
}

fn plot_error(e: impl std::fmt::Display) -> EvalError {
    EvalError::Plot(e.to_string())
}

/// One bar series: a name and a value per strategy.
struct Series {
    name: String,
    values: Vec<f64>,
}

/// Writes the chart to `path` (PNG).
pub fn write_png(reports: &[StrategyReport], k: usize, path: &Path) -> Result<(), EvalError> {
    register_font()?;
    let mut quality: Vec<Series> = reports
        .first()
        .map(|r| {
            r.all
                .hit_at
                .iter()
                .enumerate()
                .map(|(i, (k, _))| Series {
                    name: format!("Hit@{k}"),
                    values: reports.iter().map(|r| r.all.hit_at[i].1).collect(),
                })
                .collect()
        })
        .unwrap_or_default();
    quality.push(Series {
        name: format!("full evidence@{k}"),
        values: reports.iter().map(|r| r.all.full).collect(),
    });
    let tokens = [Series {
        name: format!("input tokens@{k}"),
        values: reports.iter().map(|r| r.all.avg_input_tokens).collect(),
    }];
    let labels: Vec<String> = reports.iter().map(|r| r.strategy.clone()).collect();
    let height = 120 + 26 * labels.len() as u32 * quality.len().max(2) as u32;
    let root = BitMapBackend::new(path, (1400, height)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_error)?;
    let (left, right) = root.split_horizontally(900);
    // Room on the right of the longest bar for the legend.
    let max_tokens = tokens[0].values.iter().copied().fold(1.0, f64::max) * 1.4;
    panel(
        &root,
        &left,
        "Hit@k and full-evidence share",
        1.25,
        &labels,
        &quality,
        true,
    )?;
    panel(
        &root,
        &right,
        "Average input tokens per question",
        max_tokens,
        &labels,
        &tokens,
        false,
    )?;
    root.present().map_err(plot_error)
}

/// A horizontal grouped bar chart in `area`; bars are drawn on `root` in pixels, since
/// plotters' category axis has no sub-positions.
fn panel(
    root: &DrawingArea<BitMapBackend, plotters::coord::Shift>,
    area: &DrawingArea<BitMapBackend, plotters::coord::Shift>,
    title: &str,
    max: f64,
    labels: &[String],
    series: &[Series],
    show_labels: bool,
) -> Result<(), EvalError> {
    let n = labels.len() as i32;
    let shares = max <= 2.0;
    let label_width = if show_labels { 230 } else { 10 };
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(label_width)
        // A segmented 0..m has m + 1 bands, one per strategy (and an empty one above a
        // single strategy: 0..0 has no scale).
        .build_cartesian_2d(0.0..max, (0..(n - 1).max(1)).into_segmented())
        .map_err(plot_error)?;
    // The first strategy on top.
    let row = |i: usize| n - 1 - i as i32;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(WHITE)
        .x_label_formatter(&|x| {
            if shares {
                format!("{x:.1}")
            } else {
                format!("{x:.0}")
            }
        })
        .y_labels(labels.len())
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(y) if show_labels => usize::try_from(n - 1 - y)
                .ok()
                .and_then(|i| labels.get(i).cloned())
                .unwrap_or_default(),
            _ => String::new(),
        })
        .label_style((FONT, 15))
        .draw()
        .map_err(plot_error)?;
    for (j, s) in series.iter().enumerate() {
        let color = COLORS[j % COLORS.len()];
        chart
            .draw_series(std::iter::empty::<Rectangle<(f64, SegmentValue<i32>)>>())
            .map_err(plot_error)?
            .label(s.name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], color.filled()));
        for (i, &value) in s.values.iter().enumerate() {
            let (x0, top) = chart.backend_coord(&(0.0, SegmentValue::Exact(row(i) + 1)));
            let (_, bottom) = chart.backend_coord(&(0.0, SegmentValue::Exact(row(i))));
            let (x1, _) = chart.backend_coord(&(value, SegmentValue::Exact(row(i))));
            let band = (bottom - top) as f64;
            let slot = band * 0.8 / series.len() as f64;
            let y0 = top + (band * 0.1 + slot * j as f64) as i32;
            let y1 = y0 + slot.max(1.0) as i32 - 1;
            root.draw(&Rectangle::new(
                [(x0, y0), (x1.max(x0 + 1), y1)],
                color.filled(),
            ))
            .map_err(plot_error)?;
            let text = if shares {
                format!("{value:.2}")
            } else {
                format!("{value:.0}")
            };
            root.draw(&Text::new(text, (x1 + 4, y0), (FONT, 12).into_font()))
                .map_err(plot_error)?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FONT, 14))
        .draw()
        .map_err(plot_error)
}

/// A metric's panel: its title and each group's estimate.
type Metric = (&'static str, fn(&GroupMetrics) -> Option<Estimate>);

const METRICS: [Metric; 6] = [
    ("thumb-up rate", |g| g.thumb_up.estimate),
    ("follow-up rate", |g| g.follow_up.estimate),
    ("wrong-verdict rate", |g| g.wrong.estimate),
    ("p50 latency (ms)", |g| g.latency_p50_ms),
    ("p95 latency (ms)", |g| g.latency_p95_ms),
    ("mean context tokens", |g| g.context_tokens),
];

/// Writes the report's chart to `path` (PNG).
pub fn write_log_png(report: &LogReport, path: &Path) -> Result<(), EvalError> {
    register_font()?;
    let root = BitMapBackend::new(path, (1500, 800)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_error)?;
    let labels: Vec<&str> = report.groups.iter().map(|g| g.group.as_str()).collect();
    for (area, (title, get)) in root.split_evenly((2, 3)).iter().zip(METRICS) {
        let points: Vec<Option<Estimate>> = report.groups.iter().map(get).collect();
        let top = points
            .iter()
            .flatten()
            .map(|e| e.high)
            .fold(0.0, f64::max)
            .max(if title.ends_with("rate") { 1.0 } else { 1e-9 })
            * 1.1;
        let n = labels.len().max(1) as f64;
        let mut chart = ChartBuilder::on(area)
            .caption(title, (FONT, 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..n, 0.0..top)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(labels.len() * 2 + 1)
            .x_label_formatter(&|x| {
                let i = x.floor() as usize;
                if (x - i as f64 - 0.5).abs() < 0.01 {
                    labels.get(i).map(|s| s.to_string()).unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .label_style((FONT, 14))
            .draw()
            .map_err(plot_error)?;
        for (i, e) in points.iter().enumerate() {
            let Some(e) = e else { continue };
            let color = COLORS[(i + 1) % COLORS.len()];
            let x = i as f64 + 0.5;
            // The interval: a vertical line with caps.
            let style = color.stroke_width(2);
            let (cap0, cap1) = (x - 0.08, x + 0.08);
            chart
                .draw_series([
                    PathElement::new(vec![(x, e.low), (x, e.high)], style),
                    PathElement::new(vec![(cap0, e.low), (cap1, e.low)], style),
                    PathElement::new(vec![(cap0, e.high), (cap1, e.high)], style),
                ])
                .map_err(plot_error)?;
            chart
                .draw_series([Circle::new((x, e.value), 5, color.filled())])
                .map_err(plot_error)?;
        }
    }
    root.present().map_err(plot_error)
}

/// The colour of each of [`ENGINES`] in the scale curve.
const ENGINE_COLORS: [RGBColor; 4] = [COLORS[3], COLORS[2], COLORS[4], COLORS[5]];

/// Writes the scale curve to `path` (PNG): a panel per filter, QPS at the curve's recall
/// target against size (both axes logarithmic), a line per engine and dataset (the marker
/// tells the dataset). An engine that never reached the target at a size has no point there.
pub fn write_curve_png(curve: &Curve, path: &Path) -> Result<(), EvalError> {
    register_font()?;
    let filters = curve.filters();
    let datasets = curve.datasets();
    let rows = filters.len().div_ceil(3).max(1);
    let root = BitMapBackend::new(path, (1500, 520 * rows as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_error)?;
    let title = format!(
        "QPS at recall@10 >= {} against size (median of rounds; marker: {})",
        curve.target,
        datasets
            .iter()
            .zip(["circle", "triangle", "cross"])
            .map(|(d, m)| format!("{d} {m}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let root = root.titled(&title, (FONT, 22)).map_err(plot_error)?;
    let sizes = curve.points.iter().map(|p| p.n as f64);
    let (x0, x1) = sizes.fold((f64::MAX, f64::MIN), |(lo, hi), n| (lo.min(n), hi.max(n)));
    let x_range = (x0 / 1.5).max(1.0)..(x1 * 1.5).max(2.0);
    for (area, filter) in root.split_evenly((rows, 3)).iter().zip(&filters) {
        let all: Vec<f64> = ENGINES
            .iter()
            .flat_map(|e| datasets.iter().flat_map(|d| curve.series(d, filter, e)))
            .map(|(_, q)| q)
            .filter(|q| *q > 0.0)
            .collect();
        let (y0, y1) = all
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), &q| (lo.min(q), hi.max(q)));
        let y_range = if all.is_empty() {
            1.0..10.0
        } else {
            y0 / 2.0..y1 * 2.0
        };
        let mut chart = ChartBuilder::on(area)
            .caption(*filter, (FONT, 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(x_range.clone().log_scale(), y_range.log_scale())
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .x_desc("vectors")
            .y_desc("QPS")
            .x_label_formatter(&|x| short_count(*x))
            .y_label_formatter(&|y| short_count(*y))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 14))
            .draw()
            .map_err(plot_error)?;
        for (d, dataset) in datasets.iter().enumerate() {
            for (engine, color) in ENGINES.iter().zip(ENGINE_COLORS) {
                let points = curve.series(dataset, filter, engine);
                let style = color.stroke_width(2);
                chart
                    .draw_series([PathElement::new(points.clone(), style)])
                    .map_err(plot_error)?
                    .label(format!("{engine} ({dataset})"))
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
                let filled = color.filled();
                let drawn = match d {
                    0 => chart.draw_series(points.into_iter().map(|p| Circle::new(p, 5, filled))),
                    1 => chart.draw_series(
                        points
                            .into_iter()
                            .map(|p| TriangleMarker::new(p, 6, filled)),
                    ),
                    _ => chart.draw_series(points.into_iter().map(|p| Cross::new(p, 6, style))),
                };
                drawn.map_err(plot_error)?;
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font((FONT, 12))
            .draw()
            .map_err(plot_error)?;
    }
    root.present().map_err(plot_error)
}

/// `200k`, `1M`, `1.5M`: axis labels for counts.
fn short_count(x: f64) -> String {
    match x {
        x if x >= 1e6 => format!("{}M", (x / 1e5).round() / 10.0),
        x if x >= 1e3 => format!("{}k", (x / 1e2).round() / 10.0),
        x => format!("{}", (x * 10.0).round() / 10.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ann::curve::{CurvePoint, PointFile};

    #[test]
    fn the_scale_curve_is_written_as_a_png() {
        let point = |n: usize, folio: f64| -> PointFile {
            let search = |peer: &str, filter: &str, qps: f64| {
                serde_json::json!({"type": "search", "peer": peer, "filter": filter,
                                   "recall": 0.97, "qps": qps})
            };
            serde_json::from_value(serde_json::json!({
                "dataset": "clustered-128", "n": n,
                "rounds": [[search("folio", "none", folio), search("hnswlib", "none", 900.0),
                            search("exact", "random_0.01", 50.0)]]
            }))
            .unwrap()
        };
        let curve = Curve {
            target: 0.95,
            points: vec![
                CurvePoint::new(point(20_000, 2000.0), 0.95),
                CurvePoint::new(point(1_000_000, 1000.0), 0.95),
            ],
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("curve.png");
        write_curve_png(&curve, &path).unwrap();
        let png = std::fs::read(&path).unwrap();
        assert!(png.len() > 1000);
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    }

    #[test]
    fn counts_read_short() {
        assert_eq!(short_count(200_000.0), "200k");
        assert_eq!(short_count(1_500_000.0), "1.5M");
        assert_eq!(short_count(2_000_000.0), "2M");
        assert_eq!(short_count(50.0), "50");
    }
}
