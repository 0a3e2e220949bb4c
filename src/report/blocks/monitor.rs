//! A monitor run's windows as blocks (`rtscope report` on one, and the
//! run page of `serve`).

use super::{Block, Table, Unit};

/// What a report of a monitor's windows lacks: `""`, or `" (4 closed;
/// missing: #2, #3 — the history did not take them)"`.
pub(crate) fn missing_note(m: &crate::model::MonitorRecord, windows: &[crate::model::Window]) -> String {
    let missing = m.missing(windows);
    if missing.is_empty() {
        return String::new();
    }
    let mut list: Vec<String> = missing.iter().take(20).map(|i| format!("#{i}")).collect();
    if missing.len() > 20 {
        list.push(format!("and {} more", missing.len() - 20));
    }
    format!(
        " ({} closed; missing: {} — the history did not take them; a monitor's rescue file brings them with `rtscope import FILE`)",
        m.windows,
        list.join(", ")
    )
}

/// The windows of a monitor run (`rtscope report` on one): per phase, how
/// many windows, the worst window's max (and when), the median window max,
/// samples and overruns; then the last few windows. The full series is
/// `rtscope history --windows ID`.
pub(crate) fn monitor_windows(label: &str, m: &crate::model::MonitorRecord, windows: &[crate::model::Window], u: Unit) -> Vec<Block> {
    let un = u.name();
    let merged: Vec<&crate::model::Window> = windows.iter().filter(|w| w.thread.is_none()).collect();
    // The windows the history has, never the count the run says it closed.
    let stored = merged.iter().map(|w| w.index).collect::<std::collections::BTreeSet<_>>().len();
    let mut out = vec![
        Block::Heading(2, format!("Monitor windows: {label}")),
        Block::Text(format!(
            "{} windows of {} stored (`rtscope history --windows` lists every one){}; per phase and probe:",
            stored,
            crate::units::fmt_ns(m.window_ns.0),
            missing_note(m, windows)
        )),
    ];
    let keys: Vec<(String, String)> = crate::units::first_seen(merged.iter().map(|w| (w.phase.clone(), w.probe.clone())));
    let header: Vec<String> = ["phase", "probe", "windows", "samples", "overruns"]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("median max({un})"), format!("worst max({un})"), "worst window".to_string()])
        .collect();
    let rows: Vec<Vec<String>> = keys
        .iter()
        .map(|(phase, probe)| {
            let ws: Vec<&&crate::model::Window> = merged.iter().filter(|w| &w.phase == phase && &w.probe == probe).collect();
            let mut maxes: Vec<u64> = ws.iter().map(|w| w.max_ns.0).collect();
            maxes.sort_unstable();
            let median = maxes[(maxes.len() - 1) / 2];
            let worst = ws.iter().max_by_key(|w| w.max_ns.0).expect("a group has a window");
            vec![
                phase.clone(),
                probe.clone(),
                ws.len().to_string(),
                ws.iter().map(|w| w.samples).sum::<u64>().to_string(),
                ws.iter().map(|w| w.overruns).sum::<u64>().to_string(),
                u.fmt_n(crate::model::Nanos(median)),
                u.fmt_n(worst.max_ns),
                format!("#{} at {}", worst.index, worst.started_at),
            ]
        })
        .collect();
    out.push(Block::Table(Table::plain(header, 2, rows)));
    let last: Vec<&&crate::model::Window> = merged.iter().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect();
    if !last.is_empty() {
        out.push(Block::Text("The last windows:".into()));
        let header: Vec<String> = ["window", "started", "phase", "probe", "samples"]
            .iter()
            .map(|s| s.to_string())
            .chain(["p50", "p99", "max"].iter().map(|s| format!("{s}({un})")))
            .collect();
        let rows = last
            .iter()
            .map(|w| {
                vec![
                    w.index.to_string(),
                    w.started_at.clone(),
                    w.phase.clone(),
                    w.probe.clone(),
                    w.samples.to_string(),
                    u.fmt_n(w.p50_ns),
                    u.fmt_n(w.p99_ns),
                    u.fmt_n(w.max_ns),
                ]
            })
            .collect();
        out.push(Block::Table(Table::plain(header, 4, rows)));
    }
    out
}
