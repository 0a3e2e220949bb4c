//! `rtscope history`: list the runs saved in the history database, with
//! filters. Saving a run is the end of run's (`commands::end`).

use crate::cli::store_opts::HistoryArgs;
use crate::error::{BadInput, EXIT_OK};
use crate::report::blocks::Unit;
use crate::store::{Filter, Location, Store};

// What `rtscope factors` opens before measuring is the end of run's (commands/end.rs).
pub(crate) use super::end::open_for_run;

/// `--since` (`end_of_day` false: a date is its midnight UTC) or `--until`
/// (true: a date is the midnight after it, so the day is included):
/// YYYY-MM-DD or RFC 3339, as an RFC 3339 UTC string that compares
/// correctly with stored `started_at` values.
fn parse_bound(flag: &str, s: &str, end_of_day: bool) -> Result<String, BadInput> {
    crate::units::parse_time_bound(s, end_of_day)
        .ok_or_else(|| BadInput(format!("{flag} {s:?}: expected a date YYYY-MM-DD or an RFC 3339 time like 2026-11-22T09:00:00Z")))
}

pub(crate) fn parse_since(s: &str) -> Result<String, BadInput> {
    parse_bound("--since", s, false)
}

/// `--windows ID`: a monitor run's windows, merged entries (every thread)
/// as a table, or every row as JSON.
fn windows(store: &mut Store, id: i64, args: &HistoryArgs) -> anyhow::Result<u8> {
    let run = store.load(id)?;
    let Some(m) = &run.monitor else {
        return Err(BadInput(format!(
            "run #{id} is not a monitor run (it has no windows); `rtscope history` lists runs, monitor runs show their window count"
        ))
        .into());
    };
    let rows = store.windows(&m.id)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(EXIT_OK);
    }
    let u = Unit::of_ns_flag(args.ns);
    let unit = u.name();
    let header: Vec<String> = ["window", "started", "phase", "probe", "variant", "samples", "overruns"]
        .iter()
        .map(|s| s.to_string())
        .chain(["min", "p50", "p99", "max"].iter().map(|s| format!("{s}({unit})")))
        .collect();
    let body: Vec<Vec<String>> = rows
        .iter()
        .filter(|w| w.thread.is_none())
        .map(|w| {
            vec![
                w.index.to_string(),
                w.started_at.get(..19).unwrap_or(&w.started_at).replace('T', " "),
                w.phase.clone(),
                w.probe.clone(),
                w.variant.clone().unwrap_or_else(|| "-".into()),
                w.samples.to_string(),
                w.overruns.to_string(),
                u.fmt_n(w.min_ns),
                u.fmt_n(w.p50_ns),
                u.fmt_n(w.p99_ns),
                u.fmt_n(w.max_ns),
            ]
        })
        .collect();
    let stored = rows.iter().map(|w| w.index).collect::<std::collections::BTreeSet<_>>().len();
    println!("monitor run #{id}: {stored} windows of {} ({}){}", crate::units::fmt_ns(m.window_ns.0), m.id, crate::report::blocks::missing_note(m, &rows));
    let table = crate::report::blocks::Table::plain(header, 5, body).optional(&["variant", "started", "overruns", "min"]);
    print!(
        "{}",
        crate::report::escape::terminal_safe(&crate::report::term::render_blocks(
            &[crate::report::blocks::Block::Table(table)],
            false,
            crate::report::term::width(false)
        ))
    );
    Ok(EXIT_OK)
}

pub(crate) fn cmd(args: &HistoryArgs) -> anyhow::Result<u8> {
    let filter = Filter {
        host: args.host.clone(),
        kernel: args.kernel.clone(),
        tag: args.tag.clone(),
        since: args.since.as_deref().map(parse_since).transpose()?,
        until: args.until.as_deref().map(|s| parse_bound("--until", s, true)).transpose()?,
        preempt: args.preempt.clone(),
    };
    let loc = Location::resolve(args.db.db.as_deref())?;
    let Some(mut store) = Store::open_if_exists(&loc)? else {
        // Listing never creates the database.
        if args.json {
            println!("[]");
        } else {
            println!("no runs in {} (no database there yet: `rtscope run` or `rtscope import` creates it)", loc.shown());
        }
        return Ok(EXIT_OK);
    };
    if let Some(id) = args.windows {
        return windows(&mut store, id, args);
    }
    let rows = store.list(&filter)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(EXIT_OK);
    }
    if rows.is_empty() {
        println!("no runs in {}{}", store.shown(), if filter_is_set(&filter) { " match the filters" } else { "" });
        return Ok(EXIT_OK);
    }
    let table: Vec<[String; 8]> = rows
        .iter()
        .map(|r| {
            let date = r.started_at.get(..16).unwrap_or(&r.started_at).replace('T', " ");
            let maxes =
                r.headline_max_ns.iter().map(|m| format!("{} {}", m.phase, Unit::of_ns_flag(args.ns).fmt(m.max_ns as f64))).collect::<Vec<_>>().join(", ");
            let what = if r.source == "native" { r.probes.clone() } else { format!("{} [{}]", r.probes, r.source) };
            [
                r.id.to_string(),
                date,
                r.host.clone(),
                r.kernel.clone(),
                rt_shown(r).into(),
                what,
                tags_shown(&r.tags, filter.tag.is_some()),
                format!("{maxes}{}", if r.interrupted { " (interrupted)" } else { "" }),
            ]
        })
        .collect();
    let max_head = if args.ns { "MAX PER PHASE (ns)" } else { "MAX PER PHASE (µs)" };
    let head = ["ID", "STARTED (UTC)", "HOST", "KERNEL", "RT", "PROBES", "TAGS", max_head];
    let rows: Vec<Vec<String>> = table.into_iter().map(Vec::from).collect();
    // Narrow: ID, start, probes, tags and the maxima stay; long cells become keys under the table.
    let table = crate::report::blocks::Table::plain(head.map(String::from).to_vec(), head.len(), rows).optional(&["KERNEL", "RT", "HOST"]);
    let text = crate::report::term::render_blocks(&[crate::report::blocks::Block::Table(table)], false, crate::report::term::width(false));
    print!("{}", crate::report::escape::terminal_safe(&text));
    Ok(EXIT_OK)
}

/// A run's tags in the list: the first and how many more (`fx-…-design +4`),
/// all of them with `--tag` (the runs of one experiment, read tag by tag;
/// `show` gives them whole too).
fn tags_shown(tags: &[String], whole: bool) -> String {
    match tags {
        // A long list becomes a key under the table: ", " wraps it between tags, not inside one.
        _ if whole => tags.join(", "),
        [] => String::new(),
        [one] => one.clone(),
        [first, more @ ..] => format!("{first} +{}", more.len()),
    }
}

fn filter_is_set(f: &Filter) -> bool {
    f.host.is_some() || f.kernel.is_some() || f.tag.is_some() || f.since.is_some() || f.until.is_some() || f.preempt.is_some()
}

/// The RT column ([`crate::model::realtime_word`]; issue 49: NuttX, RTAI,
/// Xenomai and pmqtest results showed `no`).
fn rt_shown(r: &crate::store::RunRow) -> &'static str {
    crate::model::listed_realtime_word(&r.source, &r.kernel, r.realtime, &r.preempt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_show_as_the_first_and_a_count_unless_asked_for() {
        let tags: Vec<String> = ["fx-1-design", "fx-1-r01", "fx-1-c02"].map(String::from).to_vec();
        assert_eq!(tags_shown(&tags, false), "fx-1-design +2");
        assert_eq!(tags_shown(&tags, true), "fx-1-design, fx-1-r01, fx-1-c02");
        assert_eq!(tags_shown(&tags[..1], false), "fx-1-design");
        assert_eq!(tags_shown(&[], false), "");
    }

    #[test]
    fn since_accepts_dates_and_rfc3339_and_normalises_to_utc() {
        assert_eq!(parse_since("2026-11-22").unwrap(), "2026-11-22T00:00:00Z");
        assert_eq!(parse_since("2026-11-22T10:30:00+02:00").unwrap(), "2026-11-22T08:30:00Z");
        assert!(parse_since("22/11/2026").is_err());
        assert!(parse_since("2026-13-01").is_err());
    }
}
