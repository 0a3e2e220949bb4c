//! The query strings of `rtscope serve`: the runs list's filters, order and
//! page (`/` and `/api/runs`), and the runs of `/compare`. Bad values are
//! answered 400 with what was wrong and what is accepted.

use crate::analysis::compare::{MatchBy, Pairing};
use crate::model::Nanos;
use crate::store::{Filter, PageQuery, Sort};

/// Default and largest page sizes.
pub(crate) const PER_PAGE: u64 = 50;
pub(crate) const MAX_PER_PAGE: u64 = 1000;
/// Runs one comparison shows side by side at most.
pub(crate) const MAX_COMPARED: usize = 16;

/// The runs list's request, with the values as given (for the form).
#[derive(Debug, Clone, Default)]
pub(crate) struct ListQuery {
    pub(crate) page: PageQuery,
    /// 1-based page number and size (`offset` = (page − 1) × per).
    pub(crate) number: u64,
    pub(crate) per: u64,
    /// The filter fields as typed, echoed into the form.
    pub(crate) asked: Vec<(String, String)>,
}

impl ListQuery {
    /// The value of a filter field as given, or "".
    pub(crate) fn given(&self, key: &str) -> &str {
        self.asked.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str()).unwrap_or("")
    }
    /// A query string with these filters (not the page), and `extra`.
    pub(crate) fn with(&self, extra: &[(&str, String)]) -> String {
        let mut s = form_urlencoded::Serializer::new(String::new());
        for (k, v) in &self.asked {
            if !extra.iter().any(|(e, _)| e == k) {
                s.append_pair(k, v);
            }
        }
        for (k, v) in extra {
            s.append_pair(k, v);
        }
        s.finish()
    }
}

const FILTERS: [&str; 6] = ["host", "kernel", "preempt", "tag", "since", "until"];

/// Parse the list's query string. Empty values are "no filter" (a form
/// sends blank fields).
pub(crate) fn list_query(q: &str) -> Result<ListQuery, String> {
    let mut lq = ListQuery { number: 1, per: PER_PAGE, ..ListQuery::default() };
    let mut f = Filter::default();
    let (mut sort, mut order, mut offset, mut limit) = (None, None, None, None);
    for (k, v) in form_urlencoded::parse(q.as_bytes()) {
        let v = v.trim().to_string();
        if v.is_empty() {
            continue;
        }
        let num = |what: &str| -> Result<u64, String> { v.parse::<u64>().map_err(|_| format!("{k}={v:?}: {what} must be a whole number")) };
        match k.as_ref() {
            "host" => f.host = Some(v.clone()),
            "kernel" => f.kernel = Some(v.clone()),
            "preempt" => f.preempt = Some(v.clone()),
            "tag" => f.tag = Some(v.trim_start_matches('@').to_string()),
            "since" => {
                f.since = Some(crate::units::parse_time_bound(&v, false).ok_or_else(|| bad_date(&k, &v))?);
            }
            "until" => {
                f.until = Some(crate::units::parse_time_bound(&v, true).ok_or_else(|| bad_date(&k, &v))?);
            }
            "sort" => {
                sort = Some(
                    Sort::parse(&v)
                        .ok_or_else(|| format!("sort={v:?}: sort by one of {}", Sort::ALL.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")))?,
                )
            }
            "order" => {
                order = Some(match v.as_str() {
                    "asc" => false,
                    "desc" => true,
                    _ => return Err(format!("order={v:?}: asc or desc")),
                })
            }
            "page" => lq.number = num("the page")?.max(1),
            "per" => lq.per = num("the page size")?,
            "offset" => offset = Some(num("the offset")?),
            "limit" => limit = Some(num("the limit")?),
            other => return Err(format!("unknown parameter {other:?}: the runs list takes {}, sort, order, page, per (or offset, limit)", FILTERS.join(", "))),
        }
        if FILTERS.contains(&k.as_ref()) || k == "sort" || k == "order" || k == "per" {
            lq.asked.push((k.to_string(), v));
        }
    }
    let per = limit.unwrap_or(lq.per);
    if per == 0 || per > MAX_PER_PAGE {
        return Err(format!("page size {per}: give 1 to {MAX_PER_PAGE} runs per page"));
    }
    lq.per = per;
    let sort = sort.unwrap_or_default();
    // Newest, largest, highest id first; names A to Z.
    let desc = order.unwrap_or(matches!(sort, Sort::Started | Sort::Id | Sort::Max));
    let offset = offset.unwrap_or((lq.number - 1).saturating_mul(per));
    lq.number = offset / per + 1;
    lq.page = PageQuery { filter: f, sort, desc, offset, limit: Some(per) };
    Ok(lq)
}

fn bad_date(k: &str, v: &str) -> String {
    format!("{k}={v:?}: expected a date YYYY-MM-DD (UTC) or an RFC 3339 time like 2026-11-22T09:00:00Z")
}

/// One run named in `/compare?runs=`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Input {
    Id(i64),
    Tag(String),
}

/// `runs=1,2,@tag` (repeatable: the list's checkboxes send `runs=1&runs=2`),
/// in order, each id once.
#[cfg(test)]
pub(crate) fn compare_inputs(q: &str) -> Result<Vec<Input>, String> {
    Ok(compare_query(q)?.runs)
}

/// What `/compare` was asked for: the runs, how they pair (`match=`,
/// `phases=`, as `rtscope compare --match/--phases`) and a deadline.
#[derive(Debug, Clone, Default)]
pub(crate) struct CompareQuery {
    pub(crate) runs: Vec<Input>,
    pub(crate) pairing: Pairing,
    pub(crate) deadline: Option<Nanos>,
}

/// `deadline=200us` (a bare number is µs, as `--deadline`), empty = none.
pub(crate) fn deadline(k: &str, v: &str) -> Result<Option<Nanos>, String> {
    if v.trim().is_empty() {
        return Ok(None);
    }
    crate::units::parse_interval(v.trim()).map(|d| Some(Nanos(d))).map_err(|e| format!("{k}={v:?}: {e}"))
}

/// The query of `/runs/ID`: an optional `deadline=` for the verdict.
pub(crate) fn run_query(q: &str) -> Result<Option<Nanos>, String> {
    let mut out = None;
    for (k, v) in form_urlencoded::parse(q.as_bytes()) {
        match k.as_ref() {
            "deadline" => out = deadline(&k, &v)?,
            _ => return Err(format!("unknown parameter {k:?}: /runs/ID takes deadline=LATENCY (e.g. 200us) for a PASS/FAIL verdict")),
        }
    }
    Ok(out)
}

/// Parse `/compare`'s query (see [`CompareQuery`]).
pub(crate) fn compare_query(q: &str) -> Result<CompareQuery, String> {
    let mut query = CompareQuery::default();
    let out = &mut query.runs;
    for (k, v) in form_urlencoded::parse(q.as_bytes()) {
        match k.as_ref() {
            "runs" => {}
            "match" => {
                query.pairing.by = match v.as_ref() {
                    "auto" | "" => MatchBy::Auto,
                    "phase" => MatchBy::Phase,
                    "probe" => MatchBy::Probe,
                    _ => return Err(format!("match={v:?}: expected auto, phase or probe (as rtscope compare --match)")),
                };
                continue;
            }
            "phases" => {
                for pair in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    match pair.split_once('=') {
                        Some((a, b)) if !a.trim().is_empty() && !b.trim().is_empty() => query.pairing.phases.push((a.trim().to_string(), b.trim().to_string())),
                        _ => return Err(format!("phases: {pair:?} is not a pair of phases; write FIRST=OTHER, e.g. phases=mixed=cpu")),
                    }
                }
                continue;
            }
            "deadline" => {
                query.deadline = deadline(&k, &v)?;
                continue;
            }
            _ => {
                return Err(format!(
                    "unknown parameter {k:?}: /compare takes runs=ID,ID,... or runs=@TAG, and match=auto|phase|probe, phases=FIRST=OTHER,..., deadline=LATENCY"
                ))
            }
        }
        for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let input = match part.strip_prefix('@') {
                Some(t) if !t.is_empty() => Input::Tag(t.to_string()),
                _ => Input::Id(
                    part.parse::<i64>()
                        .ok()
                        .filter(|&i| i > 0)
                        .ok_or_else(|| format!("runs: {part:?} is neither a run id (a whole number ≥ 1) nor an @TAG"))?,
                ),
            };
            if !out.contains(&input) {
                out.push(input);
            }
        }
    }
    Ok(query)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_defaults_newest_first_fifty_per_page() {
        let q = list_query("").unwrap();
        assert_eq!((q.page.sort, q.page.desc, q.page.offset, q.page.limit), (Sort::Started, true, 0, Some(50)));
        let q = list_query("sort=host&page=3&per=20&kernel=rt&host=").unwrap();
        assert_eq!((q.page.sort, q.page.desc, q.page.offset, q.number), (Sort::Host, false, 40, 3));
        assert_eq!(q.page.filter.kernel.as_deref(), Some("rt"));
        assert_eq!(q.page.filter.host, None, "a blank field is no filter");
        assert_eq!(list_query("offset=7&limit=3").unwrap().page.offset, 7);
    }

    #[test]
    fn list_dates_bound_whole_days() {
        let q = list_query("since=2026-11-01&until=2026-11-22").unwrap();
        assert_eq!(q.page.filter.since.as_deref(), Some("2026-11-01T00:00:00Z"));
        assert_eq!(q.page.filter.until.as_deref(), Some("2026-11-23T00:00:00Z"), "until keeps its whole day");
    }

    #[test]
    fn list_refuses_what_it_does_not_know() {
        for (q, says) in [
            ("sort=speed", "sort by one of"),
            ("order=up", "asc or desc"),
            ("page=x", "whole number"),
            ("per=0", "1 to 1000"),
            ("per=5000", "1 to 1000"),
            ("since=yesterday", "YYYY-MM-DD"),
            ("hots=a", "unknown parameter \"hots\""),
        ] {
            let e = list_query(q).unwrap_err();
            assert!(e.contains(says), "{q}: {e}");
        }
    }

    #[test]
    fn compare_takes_ids_and_tags_in_order_once() {
        assert_eq!(compare_inputs("runs=3,1&runs=@rt&runs=3").unwrap(), vec![Input::Id(3), Input::Id(1), Input::Tag("rt".into())]);
        assert!(compare_inputs("runs=1,x").unwrap_err().contains("\"x\""));
        assert!(compare_inputs("runs=0").is_err());
        assert!(compare_inputs("ids=1").unwrap_err().contains("unknown parameter"));
        let q = compare_query("runs=1,2&match=probe&phases=idle=cpu&deadline=200us").unwrap();
        assert_eq!(q.runs, vec![Input::Id(1), Input::Id(2)]);
        assert_eq!(q.pairing.by, MatchBy::Probe);
        assert_eq!(q.pairing.phases, vec![("idle".to_string(), "cpu".to_string())]);
        assert_eq!(q.deadline, Some(Nanos(200_000)));
        assert!(compare_query("runs=1,2&match=name").unwrap_err().contains("auto, phase or probe"));
        assert!(compare_query("runs=1,2&phases=idle").unwrap_err().contains("FIRST=OTHER"));
        assert_eq!(run_query("deadline=150").unwrap(), Some(Nanos(150_000)));
        assert!(run_query("x=1").is_err());
    }
}
