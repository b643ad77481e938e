//! The race as a picture: each attempt's objective over time, as an SVG
//! image part a client can show beside the text (`include_plot` on
//! `get_solve_job` and `get_portfolio_job`). Drawn from the trajectories
//! the results already hold; nothing is measured again.

use base64::Engine;
use plotters::prelude::*;
use rmcp::model::ContentBlock;

use crate::minizinc::TrajectoryPoint;

/// The image's size in pixels.
pub const WIDTH: u32 = 640;
/// The image's height in pixels.
pub const HEIGHT: u32 = 400;
/// What the image part is.
pub const MIME: &str = "image/svg+xml";

/// One attempt's line.
pub struct Series<'a> {
    /// How the legend names it (`attempt 2 (gecode)`).
    pub label: String,
    /// Its trajectory.
    pub points: &'a [TrajectoryPoint],
    /// The race's winner: drawn thicker and named so.
    pub winner: bool,
}

/// The image part of `series`, or `None` when no point has both a time and
/// an objective (a job still running, a satisfaction model, a run that
/// asked for every solution and so has no times).
pub fn objective_over_time(series: &[Series<'_>]) -> Option<ContentBlock> {
    let lines: Vec<(&Series<'_>, Vec<(f64, f64)>)> = series
        .iter()
        .map(|one| (one, timed(one.points)))
        .filter(|(_, points)| !points.is_empty())
        .collect();
    let all = lines.iter().flat_map(|(_, points)| points.iter());
    let (mut low, mut high, mut end) = (f64::INFINITY, f64::NEG_INFINITY, 0.0_f64);
    for (time, objective) in all {
        low = low.min(*objective);
        high = high.max(*objective);
        end = end.max(*time);
    }
    if lines.is_empty() {
        return None;
    }
    let pad = match high > low {
        true => (high - low) * 0.05,
        false => 1.0,
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut chart = ChartBuilder::on(&root)
            .margin(16)
            .caption("objective over time", ("sans-serif", 18))
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..(end * 1.05).max(0.001), (low - pad)..(high + pad))
            .ok()?;
        chart
            .configure_mesh()
            .x_desc("seconds")
            .y_desc("objective")
            .draw()
            .ok()?;
        for (index, (one, points)) in lines.iter().enumerate() {
            let color = Palette99::pick(index).to_rgba();
            let style = color.stroke_width(if one.winner { 3 } else { 1 });
            let label = match one.winner {
                true => format!("{} — winner", one.label),
                false => one.label.clone(),
            };
            chart
                .draw_series(LineSeries::new(points.iter().copied(), style))
                .ok()?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], style));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .ok()?;
        root.present().ok()?;
    }
    let data = base64::engine::general_purpose::STANDARD.encode(svg);
    Some(ContentBlock::image(data, MIME))
}

/// The points with a time, as (seconds, objective); an improving run's
/// line is drawn as the solver found it.
fn timed(points: &[TrajectoryPoint]) -> Vec<(f64, f64)> {
    points
        .iter()
        .filter_map(|point| {
            let time = point.time_ms? as f64 / 1000.0;
            Some((time, point.objective.as_f64()?))
        })
        .collect()
}

/// The line the text part adds about the plot.
pub fn caption(drawn: bool, attempts: usize) -> String {
    match drawn {
        true => format!(
            "plot: the objective over time of {attempts} attempt(s), {MIME} {WIDTH}×{HEIGHT}"
        ),
        false => "plot: none — no attempt has timed objectives yet (a satisfaction model, a job still queued, or all_solutions, which records no times)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(time_ms: u64, objective: i64) -> TrajectoryPoint {
        TrajectoryPoint {
            time_ms: Some(time_ms),
            objective: objective.into(),
            bound: None,
        }
    }

    #[test]
    fn two_attempts_make_an_svg_of_the_stated_size() {
        let fast = [point(10, 1), point(200, 5), point(900, 9)];
        let slow = [point(50, 2), point(1500, 4)];
        let series = [
            Series {
                label: "attempt 0".into(),
                points: &fast,
                winner: true,
            },
            Series {
                label: "attempt 1".into(),
                points: &slow,
                winner: false,
            },
        ];
        let Some(ContentBlock::Image(image)) = objective_over_time(&series) else {
            panic!("no image part");
        };
        assert_eq!(image.mime_type, MIME);
        let svg = base64::engine::general_purpose::STANDARD
            .decode(&image.data)
            .unwrap();
        let svg = String::from_utf8(svg).unwrap();
        assert!(svg.starts_with(&format!(
            r#"<svg width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}""#
        )));
        assert!(svg.contains("attempt 0 — winner") && svg.contains("attempt 1"));
        // The winner's line and its legend mark are the only thick strokes.
        let thick = svg
            .lines()
            .filter(|line| line.starts_with("<polyline") && line.contains(r#"stroke-width="3""#))
            .count();
        assert_eq!(thick, 2, "{svg}");
    }

    #[test]
    fn nothing_timed_draws_nothing() {
        let untimed = [TrajectoryPoint {
            time_ms: None,
            objective: 3.into(),
            bound: None,
        }];
        let series = [Series {
            label: "attempt 0".into(),
            points: &untimed,
            winner: false,
        }];
        assert!(objective_over_time(&series).is_none());
        assert!(objective_over_time(&[]).is_none());
    }
}
