//! SVG plots (plotters): latency and bandwidth against message size, and the ULFM
//! phases side by side.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::data::Results;

const COLORS: [RGBColor; 8] = [
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0x7f, 0x7f, 0x7f),
];

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Bounds of positive values, widened to whole decades.
fn decades(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (lo, hi) = values
        .filter(|v| *v > 0.0)
        .fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(v), h.max(v)));
    (lo <= hi).then(|| {
        (
            10f64.powf(lo.log10().floor()),
            10f64.powf(hi.log10().ceil()),
        )
    })
}

fn curves(
    results: &Results,
    metric: &str,
    title: &str,
    unit: &str,
    out: &Path,
) -> Result<(), String> {
    let position = match metric {
        "lat" => SeriesLabelPosition::UpperLeft,
        "mr" => SeriesLabelPosition::LowerLeft,
        _ => SeriesLabelPosition::LowerRight,
    };
    let series = results.series(metric);
    if series.is_empty() {
        return Err(format!("no {metric} points"));
    }
    draw_curves(&series, title, unit, position, false, out)
}

/// Every series against message size (log-log); `parity`: a black line at 1.
fn draw_curves(
    series: &[(String, Vec<(u64, f64)>)],
    title: &str,
    unit: &str,
    position: SeriesLabelPosition,
    parity: bool,
    out: &Path,
) -> Result<(), String> {
    let points = || series.iter().flat_map(|(_, v)| v.iter());
    let values = points().map(|p| p.1).chain(parity.then_some(1.0));
    let (Some((y0, y1)), Some(x1)) = (decades(values), points().map(|p| p.0).max()) else {
        return Err("no points".into());
    };
    // The many comparisons' legend gets a decade of its own above the curves.
    let (y1, height) = if parity { (y1 * 10.0, 600) } else { (y1, 480) };
    let root = SVGBackend::new(out, (760, height)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..log2(x1.next_power_of_two()), (y0..y1).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("message size (bytes)")
        .y_desc(unit)
        // One label every other power of two.
        .x_labels(log2(x1.next_power_of_two()) as usize / 2 + 1)
        .x_label_formatter(&|x| size_label(2f64.powf(x.round()) as u64))
        .draw()
        .map_err(err)?;
    let x_end = log2(x1.next_power_of_two());
    if parity {
        chart
            .draw_series(LineSeries::new(
                [(0.0, 1.0), (x_end, 1.0)],
                BLACK.stroke_width(1),
            ))
            .map_err(err)?;
    }
    for (i, (name, pts)) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|&(x, y)| (log2(x), y)),
                color.stroke_width(2),
            ))
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(
                pts.iter()
                    .map(|&(x, y)| Circle::new((log2(x), y), 3, color.filled())),
            )
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

fn log2(size: u64) -> f64 {
    (size.max(1) as f64).log2()
}

fn size_label(s: u64) -> String {
    match s {
        s if s >= 1 << 20 => format!("{}M", s >> 20),
        s if s >= 1 << 10 => format!("{}K", s >> 10),
        s => s.to_string(),
    }
}

/// One-way latency against size, every series.
pub fn latency(results: &Results, out: &Path) -> Result<(), String> {
    curves(
        results,
        "lat",
        "One-way latency (half the round trip)",
        "µs",
        out,
    )
}

/// Streaming bandwidth (a window of 64) against size, every series.
pub fn bandwidth(results: &Results, out: &Path) -> Result<(), String> {
    curves(results, "bw", "Bandwidth, window of 64", "MB/s", out)
}

/// Ping-pong bandwidth (one message in flight) against size, every series.
pub fn pingpong(results: &Results, out: &Path) -> Result<(), String> {
    curves(
        results,
        "ppbw",
        "Bandwidth, ping-pong (size / one-way time)",
        "MB/s",
        out,
    )
}

/// Message rate against size (osu_mbw_mr's shape), every series.
pub fn rate(results: &Results, out: &Path) -> Result<(), String> {
    curves(
        results,
        "mr",
        "Message rate, one pair, window of 64",
        "messages/s",
        out,
    )
}

/// How many times slower steadfast is than each peer at each size, every metric and
/// path on one plot (latency: steadfast's / the peer's; bandwidth and rates: the
/// peer's / steadfast's): above the line at 1, steadfast is behind.
pub fn slowdown(results: &Results, out: &Path) -> Result<(), String> {
    let series: Vec<(String, Vec<(u64, f64)>)> = crate::ratios::size_tables(results)
        .iter()
        .flat_map(|t| {
            let flip = !t.metric.lower_is_better();
            t.peers.iter().enumerate().map(move |(i, peer)| {
                let pts = t
                    .ratios(i)
                    .filter(|&(_, r)| r > 0.0)
                    .map(|(s, r)| (s, if flip { 1.0 / r } else { r }))
                    .collect();
                (format!("{} {} vs {peer}", t.metric.title(), t.path), pts)
            })
        })
        .filter(|(_, pts): &(String, Vec<_>)| !pts.is_empty())
        .collect();
    if series.is_empty() {
        return Err("no size at which steadfast and a peer were both measured".into());
    }
    draw_curves(
        &series,
        "Times slower than the peer (above 1: steadfast behind)",
        "times slower (bandwidth, rate: peer's / steadfast's)",
        SeriesLabelPosition::UpperRight,
        true,
        out,
    )
}

/// The ULFM phases: for each phase, steadfast and Open MPI at each rank count.
pub fn phases(results: &Results, out: &Path) -> Result<(), String> {
    let rows: Vec<_> = results
        .pairs
        .iter()
        .filter(|p| p.section.starts_with("ULFM") && p.peer.contains("ULFM"))
        .collect();
    let mut phases: Vec<&str> = Vec::new();
    let mut sections: Vec<&str> = Vec::new();
    for p in &rows {
        if !phases.contains(&p.what.as_str()) {
            phases.push(&p.what);
        }
        if !sections.contains(&p.section.as_str()) {
            sections.push(&p.section);
        }
    }
    let Some((y0, y1)) = decades(rows.iter().flat_map(|p| [p.ours, p.theirs]).flatten()) else {
        return Err("no ULFM phases".into());
    };
    // Bars per phase: (steadfast, peer) per section, then a gap.
    let width = (sections.len() * 2) as f64 + 1.0;
    let root = SVGBackend::new(out, (900, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "ULFM phases, steadfast against Open MPI 5 ULFM (lower is better)",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..width * phases.len() as f64, (y0..y1).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("µs")
        .draw()
        .map_err(err)?;
    for (si, section) in sections.iter().enumerate() {
        for side in 0..2 {
            let color = COLORS[(si * 2 + side) % COLORS.len()];
            let mut bars = Vec::new();
            let mut name = String::new();
            for (pi, phase) in phases.iter().enumerate() {
                let Some(p) = rows
                    .iter()
                    .find(|p| p.section == *section && p.what == *phase)
                else {
                    continue;
                };
                let (who, v) = if side == 0 {
                    ("steadfast", p.ours)
                } else {
                    (p.peer.as_str(), p.theirs)
                };
                name = format!("{who}, {}", section.trim_start_matches("ULFM "));
                if let Some(v) = v.filter(|v| *v > 0.0) {
                    let x = pi as f64 * width + 0.5 + (si * 2 + side) as f64;
                    bars.push(Rectangle::new([(x, y0), (x + 0.9, v)], color.filled()));
                }
            }
            chart
                .draw_series(bars)
                .map_err(err)?
                .label(name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                });
        }
    }
    // Phase names under their groups.
    let style = ("sans-serif", 13).into_font().color(&BLACK);
    for (pi, phase) in phases.iter().enumerate() {
        let (px, py) = chart
            .plotting_area()
            .map_coordinate(&(pi as f64 * width + width / 2.0, y0));
        let label = phase.trim_end_matches(" (us)").trim_start_matches("agree ");
        let pos = Pos::new(HPos::Center, VPos::Top);
        root.draw(&Text::new(label.to_string(), (px, py + 6), style.pos(pos)))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decades_and_labels() {
        assert_eq!(decades([0.12, 300.0].into_iter()), Some((0.1, 1000.0)));
        assert_eq!(decades([0.0].into_iter()), None);
        assert_eq!(size_label(4 << 20), "4M");
        assert_eq!(size_label(2048), "2K");
        assert_eq!(size_label(8), "8");
    }
}
