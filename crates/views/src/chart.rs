//! The token chart: an inline SVG of the surface's size after every event
//! on the active path, with the window and compaction threshold drawn in.

use std::fmt::Write as _;

use abridge_session::Seq;

/// The surface's tokens just after one event on the active path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Point {
    /// The event's seq in the session file.
    pub(crate) seq: Seq,
    /// Tokens to act on after it.
    pub(crate) tokens: u64,
    /// Whether the event was a compaction (replace or rewrite).
    pub(crate) compaction: bool,
}

const WIDTH: f64 = 1000.0;
const HEIGHT: f64 = 320.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 40.0;
/// Compaction markers closer than this (in pixels) are drawn as one band:
/// a pass of many rewrites, one line each, made a solid block.
const MERGE_PX: f64 = 6.0;
/// Labels inside the plot get a white outline, so no line drawn under
/// them hides a letter.
const HALO: &str = "paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round";

/// The chart as an `<svg>` element. The vertical scale fits the data and
/// the threshold, rounded up to a round tick; the window is drawn when it
/// fits, else named in a note, so a small session in a large window is
/// still readable. Compactions are dashed lines, merged into bands where
/// they crowd; every label is drawn last, over the lines.
pub(crate) fn svg(points: &[Point], window: u64, threshold: u64) -> String {
    let max_tokens = points.iter().map(|p| p.tokens).max().unwrap_or(0);
    let mut top_value = (max_tokens.max(threshold) as f64 * 1.1).max(1.0);
    if (window as f64) <= top_value * 1.2 {
        top_value = top_value.max(window as f64 * 1.05);
    }
    let y_step = round_step(top_value / 5.0);
    let y_max = (top_value / y_step).ceil() * y_step;
    let first = points.first().map_or(0, |p| p.seq) as f64;
    let last = points.last().map_or(1, |p| p.seq) as f64;
    let span = (last - first).max(1.0);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |seq: f64| LEFT + (seq - first) / span * plot_w;
    let y = |tokens: f64| TOP + plot_h - tokens / y_max * plot_h;

    let mut out = format!(
        "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"100%\" role=\"img\" aria-label=\"surface tokens after each event\">\n"
    );
    // Labels are collected and written after every line.
    let mut labels = String::new();
    let _ = writeln!(
        out,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{plot_w}\" height=\"{plot_h}\" fill=\"#fff\" stroke=\"#bbb\"/>"
    );
    let mut value = 0.0;
    while value <= y_max + y_step / 2.0 {
        let py = y(value);
        let _ = writeln!(
            out,
            "<line x1=\"{LEFT}\" y1=\"{py:.1}\" x2=\"{:.1}\" y2=\"{py:.1}\" stroke=\"#eee\"/>",
            LEFT + plot_w
        );
        let _ = writeln!(
            labels,
            "<text class=\"tick-y\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT - 6.0,
            py + 4.0,
            value as u64
        );
        value += y_step;
    }
    let x_step = round_step(span / 8.0).max(1.0);
    let mut seq = (first / x_step).ceil() * x_step;
    while seq <= last {
        let _ = writeln!(
            labels,
            "<text class=\"tick-x\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            x(seq),
            TOP + plot_h + 16.0,
            seq as u64
        );
        seq += x_step;
    }
    let _ = writeln!(
        labels,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">event seq</text><text x=\"14\" y=\"{:.1}\" transform=\"rotate(-90 14 {:.1})\" text-anchor=\"middle\">tokens</text>",
        LEFT + plot_w / 2.0,
        HEIGHT - 4.0,
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0
    );
    let marks: Vec<(f64, Seq)> = points
        .iter()
        .filter(|p| p.compaction)
        .map(|p| (x(p.seq as f64), p.seq))
        .collect();
    for group in bands(&marks) {
        let (x0, from) = group[0];
        let (x1, to) = group[group.len() - 1];
        if group.len() == 1 {
            let _ = writeln!(
                out,
                "<line class=\"compaction\" x1=\"{x0:.1}\" y1=\"{TOP}\" x2=\"{x0:.1}\" y2=\"{:.1}\" stroke=\"#d69e2e\" stroke-dasharray=\"3 3\"><title>compaction at #{from}</title></line>",
                TOP + plot_h
            );
        } else {
            let _ = writeln!(
                out,
                "<rect class=\"compaction-band\" x=\"{:.1}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{plot_h}\" fill=\"#d69e2e\" fill-opacity=\"0.25\"><title>{} compactions, #{from} to #{to}</title></rect>",
                x0 - 1.0,
                x1 - x0 + 2.0,
                group.len()
            );
        }
    }
    let ty = y(threshold as f64);
    let _ = writeln!(
        out,
        "<line class=\"threshold\" x1=\"{LEFT}\" y1=\"{ty:.1}\" x2=\"{:.1}\" y2=\"{ty:.1}\" stroke=\"#dd6b20\" stroke-dasharray=\"6 4\"/>",
        LEFT + plot_w
    );
    let _ = writeln!(
        labels,
        "<text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" style=\"fill:#dd6b20;{HALO}\">threshold {threshold}</text>",
        LEFT + plot_w - 4.0,
        ty - 4.0
    );
    if (window as f64) <= y_max {
        let wy = y(window as f64);
        let _ = writeln!(
            out,
            "<line class=\"window\" x1=\"{LEFT}\" y1=\"{wy:.1}\" x2=\"{:.1}\" y2=\"{wy:.1}\" stroke=\"#c53030\"/>",
            LEFT + plot_w
        );
        // Two labels at nearly one height would print over each other:
        // the window's moves to the left end.
        let (lx, anchor) = if (wy - ty).abs() < 14.0 {
            (LEFT + 4.0, "start")
        } else {
            (LEFT + plot_w - 4.0, "end")
        };
        let _ = writeln!(
            labels,
            "<text class=\"label window\" x=\"{lx:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\" style=\"fill:#c53030;{HALO}\">window {window}</text>",
            wy - 4.0
        );
    } else {
        let _ = writeln!(
            labels,
            "<text class=\"label window\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" style=\"fill:#c53030;{HALO}\">window {window} (above the chart)</text>",
            LEFT + plot_w - 4.0,
            TOP + 12.0
        );
    }
    let line: Vec<String> = points
        .iter()
        .map(|p| format!("{:.1},{:.1}", x(p.seq as f64), y(p.tokens as f64)))
        .collect();
    let _ = writeln!(
        out,
        "<polyline class=\"tokens\" fill=\"none\" stroke=\"#2b6cb0\" stroke-width=\"1.5\" points=\"{}\"/>",
        line.join(" ")
    );
    out.push_str(&labels);
    out.push_str("</svg>\n");
    out
}

/// The markers (x position, seq) in runs whose neighbours are at most
/// [`MERGE_PX`] apart.
fn bands(marks: &[(f64, Seq)]) -> Vec<&[(f64, Seq)]> {
    let mut groups = Vec::new();
    let mut start = 0;
    for i in 1..=marks.len() {
        if i == marks.len() || marks[i].0 - marks[i - 1].0 > MERGE_PX {
            if start < i {
                groups.push(&marks[start..i]);
            }
            start = i;
        }
    }
    groups
}

/// The round step (1, 2, 2.5 or 5 times a power of ten, and at least 1)
/// nearest to `raw`, so ticks read 0, 10000, 20000 rather than 0, 10421,
/// and a scale of five steps gets five to eight ticks.
fn round_step(raw: f64) -> f64 {
    if raw.is_nan() || raw <= 1.0 {
        return 1.0;
    }
    let power = 10f64.powf(raw.log10().floor());
    let fraction = raw / power;
    let nice = [(1.5, 1.0), (2.25, 2.0), (3.5, 2.5), (7.5, 5.0)]
        .into_iter()
        .find(|(below, _)| fraction < *below)
        .map_or(10.0, |(_, nice)| nice);
    (nice * power).max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(seq: Seq, tokens: u64, compaction: bool) -> Point {
        Point {
            seq,
            tokens,
            compaction,
        }
    }

    #[test]
    fn draws_threshold_window_and_one_marker_per_compaction() {
        let points = [
            point(0, 100, false),
            point(1, 900, false),
            point(2, 300, true),
        ];
        let svg = svg(&points, 1000, 800);
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("class=\"threshold\""));
        assert!(svg.contains("threshold 800"));
        assert!(svg.contains("class=\"window\" x1"));
        assert_eq!(svg.matches("class=\"compaction\"").count(), 1);
        assert!(svg.contains("compaction at #2"));
    }

    /// Issue 27, point 8: a pass of many rewrites drew one line each,
    /// which merged into a block over the labels. Crowded markers are one
    /// band, each label comes after every line, and ticks are round.
    #[test]
    fn crowded_markers_are_one_band_under_round_labelled_ticks() {
        let mut points: Vec<Point> = (0..1000)
            .map(|seq| point(seq, 40_000 + seq, false))
            .collect();
        for p in &mut points[500..581] {
            p.compaction = true;
        }
        points[900].compaction = true;
        let svg = svg(&points, 200_000, 47_369);
        assert_eq!(svg.matches("class=\"compaction-band\"").count(), 1, "{svg}");
        assert!(svg.contains("81 compactions, #500 to #580"), "{svg}");
        assert_eq!(svg.matches("class=\"compaction\"").count(), 1, "{svg}");
        let last_line = svg.rfind("<line").unwrap().max(svg.rfind("<rect").unwrap());
        let polyline = svg.find("<polyline").unwrap();
        let first_label = svg.find("<text").unwrap();
        assert!(first_label > last_line && first_label > polyline, "{svg}");
        assert!(svg.contains("threshold 47369</text>"));
        for axis in ["tick-y", "tick-x"] {
            let ticks: Vec<f64> = svg
                .split(&format!("<text class=\"{axis}\""))
                .skip(1)
                .map(|t| {
                    t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()]
                        .parse()
                        .unwrap()
                })
                .collect();
            assert!(ticks.len() >= 5, "{axis}: {ticks:?}");
            let step = ticks[1] - ticks[0];
            assert_eq!(round_step(step), step, "{axis}: {ticks:?}");
            for pair in ticks.windows(2) {
                assert_eq!(pair[1] - pair[0], step, "{axis}: {ticks:?}");
                assert_eq!(pair[0] % step, 0.0, "{axis}: {ticks:?}");
            }
        }
    }

    #[test]
    fn steps_are_the_nearest_of_one_two_two_and_a_half_or_five_times_a_power_of_ten() {
        assert_eq!(round_step(0.3), 1.0);
        assert_eq!(round_step(9_474.0), 10_000.0);
        assert_eq!(round_step(4_737.0), 5_000.0);
        assert_eq!(round_step(2_900.0), 2_500.0);
        assert_eq!(round_step(2_100.0), 2_000.0);
        assert_eq!(round_step(10_421.0), 10_000.0);
        assert_eq!(round_step(112.5), 100.0);
    }

    #[test]
    fn a_far_window_is_named_not_drawn() {
        let svg = svg(&[point(0, 10, false), point(5, 20, false)], 200_000, 100);
        assert!(svg.contains("window 200000 (above the chart)"));
    }

    #[test]
    fn empty_and_single_point_sessions_still_draw() {
        assert!(svg(&[], 1000, 800).contains("</svg>"));
        assert!(!svg(&[point(3, 5, false)], 1000, 800).contains("NaN"));
    }
}
