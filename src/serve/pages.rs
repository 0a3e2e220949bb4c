//! The pages of `rtscope serve`, each a pure function of what the store
//! returned: the runs list, a run's report, a comparison, an error. Run and
//! comparison pages reuse the HTML report's sections (`report::html`) and
//! plots (`report::plots`), so a page shows what `rtscope report` and
//! `rtscope compare` would.

use std::fmt::Write;

use crate::analysis::summary::{analyse, Options};
use crate::model::{Run, Window};
use crate::report::blocks::{Unit, NOT_APPLICABLE, UNKNOWN};
use crate::report::html::{self, esc};
use crate::store::{Facets, Page, RunRow, Sort};

use super::query::ListQuery;

const STYLE: &str = "nav{display:flex;gap:1.2em;align-items:baseline;border-bottom:1px solid #ddd;padding-bottom:.4em;font-size:.9em}\
nav .db{color:#666;margin-left:auto}a{color:#1f5f99}\
form.filters{display:flex;flex-wrap:wrap;gap:.6em 1em;align-items:end;font-size:.85em;margin:1em 0}\
form.filters label{display:flex;flex-direction:column;gap:.2em}\
.pager{display:flex;gap:1em;font-size:.9em;margin:.6em 0}.pager .off{color:#aaa}\
td.phases{white-space:normal;min-width:14em}th a{text-decoration:none}\
button{font:inherit;padding:.25em .9em}.links{display:flex;gap:1.2em;font-size:.9em}";

fn nav(shown: &str) -> String {
    format!("<nav><strong>rtscope</strong><a href=\"/\">Runs</a><a href=\"/api/runs\">API</a><span class=\"db\">history: {}</span></nav>\n", esc(shown))
}

/// An error page: what went wrong, and what to do.
pub(crate) fn error_page(title: &str, msg: &str) -> String {
    html::document(
        &format!("rtscope: {title}"),
        STYLE,
        &format!("<nav><strong>rtscope</strong><a href=\"/\">Runs</a></nav>\n<h1>{}</h1><p class=\"refused\">{}</p>\n", esc(title), esc(msg)),
    )
}

fn options(values: &[String], chosen: &str, any: &str) -> String {
    let mut s = format!("<option value=\"\">{}</option>", esc(any));
    for v in values {
        let _ = write!(s, "<option{}>{}</option>", if v == chosen { " selected" } else { "" }, esc(v));
    }
    s
}

/// `/`: the filter form, the page of runs (a checkbox each, to compare),
/// sortable headers, and the pager.
pub(crate) fn list_page(shown: &str, q: &ListQuery, page: &Page, facets: &Facets) -> String {
    let mut s = nav(shown);
    s.push_str("<h1>Runs</h1>\n");
    s.push_str(&filters(q, facets));
    let pager = pager(q, page);
    s.push_str(&pager);
    if page.runs.is_empty() {
        s.push_str("<p>No runs match. <a href=\"/\">Show all runs</a>; `rtscope run` and `rtscope import` add runs.</p>\n");
        return html::document("rtscope: runs", STYLE, &s);
    }
    // The table sits in the compare form: checkboxes send runs=ID&runs=ID.
    s.push_str("<form method=\"get\" action=\"/compare\"><div class=\"tw\"><table><thead><tr><th></th>");
    s.push_str(&sort_headers(q));
    s.push_str("</tr></thead><tbody>");
    for r in &page.runs {
        s.push_str(&row(r));
    }
    s.push_str("</tbody></table></div>\n<p><button type=\"submit\">Compare selected runs</button> (tick two or more)</p></form>\n");
    s.push_str(&pager);
    html::document("rtscope: runs", STYLE, &s)
}

/// The filters: a plain GET form; blank fields are no filter. The sort
/// order chosen is kept in hidden fields.
fn filters(q: &ListQuery, facets: &Facets) -> String {
    let mut s = format!(
        "<form class=\"filters\" method=\"get\" action=\"/\">\
         <label>host<select name=\"host\">{}</select></label>\
         <label>kernel contains<input name=\"kernel\" value=\"{}\" size=\"14\"></label>\
         <label>preemption<select name=\"preempt\">{}</select></label>\
         <label>tag<select name=\"tag\">{}</select></label>\
         <label>from<input type=\"date\" name=\"since\" value=\"{}\"></label>\
         <label>to<input type=\"date\" name=\"until\" value=\"{}\"></label>\
         <label>per page<input name=\"per\" value=\"{}\" size=\"4\"></label>",
        options(&facets.hosts, q.given("host"), "any"),
        esc(q.given("kernel")),
        options(&facets.preempt.iter().filter(|p| !p.is_empty()).cloned().collect::<Vec<_>>(), q.given("preempt"), "any"),
        options(&facets.tags, q.given("tag").trim_start_matches('@'), "any"),
        esc(q.given("since")),
        esc(q.given("until")),
        q.per
    );
    for k in ["sort", "order"] {
        if !q.given(k).is_empty() {
            let _ = write!(s, "<input type=\"hidden\" name=\"{k}\" value=\"{}\">", esc(q.given(k)));
        }
    }
    s.push_str("<button type=\"submit\">Filter</button><a href=\"/\">clear</a></form>\n");
    s
}

/// "runs 1–50 of 120 · page 1 of 3" and the first / previous / next / last links.
fn pager(q: &ListQuery, page: &Page) -> String {
    let first = if page.runs.is_empty() { 0 } else { page.offset + 1 };
    let last = page.offset + page.runs.len() as u64;
    let pages = page.total.div_ceil(q.per).max(1);
    let link = |n: u64, text: &str, on: bool| -> String {
        if on {
            format!("<a href=\"/?{}\">{text}</a>", esc(&q.with(&[("page", n.to_string())])))
        } else {
            format!("<span class=\"off\">{text}</span>")
        }
    };
    format!(
        "<div class=\"pager\"><span>runs {first}–{last} of {} · page {} of {pages}</span>{}{}{}{}</div>\n",
        page.total,
        q.number,
        link(1, "« first", q.number > 1),
        link(q.number.saturating_sub(1).max(1), "‹ previous", q.number > 1),
        link(q.number + 1, "next ›", q.number < pages),
        link(pages, "last »", q.number < pages)
    )
}

/// The list's column headers; a sortable one links to the list sorted by
/// it (again: the other way round) and shows ▲/▼ when it is the order.
fn sort_headers(q: &ListQuery) -> String {
    let mut s = String::new();
    let sorted = q.page.sort;
    for (label, key, class) in [
        ("id", Some(Sort::Id), "r"),
        ("started (UTC)", Some(Sort::Started), "l"),
        ("host", Some(Sort::Host), "l"),
        ("kernel", Some(Sort::Kernel), "l"),
        ("preemption", Some(Sort::Preempt), "l"),
        ("probes", None, "l"),
        ("tags", None, "l"),
        ("source", None, "l"),
        ("max / p99 per phase (µs)", Some(Sort::Max), "l"),
    ] {
        match key {
            Some(k) => {
                let desc = if k == sorted { !q.page.desc } else { matches!(k, Sort::Started | Sort::Id | Sort::Max) };
                let mark = if k == sorted {
                    if q.page.desc {
                        " ▼"
                    } else {
                        " ▲"
                    }
                } else {
                    ""
                };
                let href = q.with(&[("sort", k.name().to_string()), ("order", (if desc { "desc" } else { "asc" }).to_string())]);
                let _ = write!(s, "<th class=\"{class}\"><a href=\"/?{}\">{label}{mark}</a></th>", esc(&href));
            }
            None => {
                let _ = write!(s, "<th class=\"{class}\">{label}</th>");
            }
        }
    }
    s
}

fn row(r: &RunRow) -> String {
    let phases: Vec<String> = r
        .headline_max_ns
        .iter()
        .map(|m| {
            let p99 = m.p99_ns.map(|p| Unit::Us.fmt(p as f64)).unwrap_or_else(|| UNKNOWN.into());
            format!("{}: {} / {}", esc(&m.phase), Unit::Us.fmt(m.max_ns as f64), p99)
        })
        .collect();
    let source = if r.source == "native" { "rtscope".to_string() } else { r.source.clone() };
    format!(
        "<tr><td><input type=\"checkbox\" name=\"runs\" value=\"{id}\" aria-label=\"compare run {id}\"></td>\
         <td class=\"r\"><a href=\"/runs/{id}\">{id}</a></td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>\
         <td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l phases\">{}{}</td></tr>",
        esc(&r.started_at.get(..19).unwrap_or(&r.started_at).replace('T', " ")),
        esc(&r.host),
        esc(&r.kernel),
        esc(&preemption(&r.preempt, crate::model::listed_realtime_word(&r.source, &r.kernel, r.realtime, &r.preempt), true)),
        esc(&r.probes),
        esc(&r.tags.iter().map(|t| format!("@{t}")).collect::<Vec<_>>().join(" ")),
        esc(&source),
        phases.join("<br>"),
        if r.interrupted { " <span class=\"bad\">(interrupted)</span>" } else { "" },
        id = r.id,
    )
}

/// A run's preemption model as serve shows it: "RTOS" (after the model its
/// agent named, if any) for a run on an RTOS (`rt`: the history's RT word,
/// [`crate::model::listed_realtime_word`]), else the model, with "(RT)"
/// after it where `mark_rt` (the runs list) and the run is real-time.
fn preemption(preempt: &str, rt: &str, mark_rt: bool) -> String {
    let said = !preempt.is_empty() && preempt != "unknown";
    match rt {
        "RTOS" if said => format!("{preempt} (RTOS)"),
        "RTOS" => "RTOS".to_string(),
        _ => format!("{}{}", if preempt.is_empty() { UNKNOWN } else { preempt }, if mark_rt && rt == "yes" { " (RT)" } else { "" }),
    }
}

/// `/runs/{id}`: the run's report (host, plan, doctor findings, summary,
/// statistical worst case, plots, worst samples with their trace
/// attribution), a monitor run's windows over time, the bin tables.
pub(crate) fn run_page(shown: &str, id: i64, run: Run, tags: &[String], windows: &[Window], deadline: Option<crate::model::Nanos>) -> anyhow::Result<String> {
    let label = format!("#{id}");
    let monitor = run.monitor.clone();
    let runs = vec![(label.clone(), run)];
    // `?deadline=200us`: the deadline table and the PASS/FAIL verdict, as `report --deadline`.
    let a = analyse(&runs, &[], &Options { deadline, ..Options::default() })?;
    let plots = crate::report::plots::plots(&a);
    let mut s = nav(shown);
    let r = &runs[0].1;
    let _ = writeln!(
        s,
        "<h1>Run #{id}: {} {}</h1><div class=\"links\"><a href=\"/runs/{id}/json\" download>Download the result JSON</a>\
         <a href=\"/api/runs/{id}\">as API JSON</a><a href=\"/?host={}\">runs of this host</a><span>tags: {}</span></div>",
        esc(&r.host.hostname),
        esc(&r.host.kernel_release),
        esc(&form_urlencoded::byte_serialize(r.host.hostname.as_bytes()).collect::<String>()),
        if tags.is_empty() { NOT_APPLICABLE.to_string() } else { esc(&tags.iter().map(|t| format!("@{t}")).collect::<Vec<_>>().join(" ")) }
    );
    if let Some(i) = &r.imported_from {
        let _ = writeln!(s, "<p>Imported from {} ({} via {}).</p>", esc(&i.file), esc(&i.tool), esc(&i.format));
        if !r.fidelity.is_empty() {
            s.push_str("<ul class=\"notes\">");
            for f in &r.fidelity {
                let _ = write!(s, "<li>{}</li>", esc(f));
            }
            s.push_str("</ul>\n");
        }
    }
    s.push_str(&html::runs(&a, &plots, Unit::Us));
    if let Some(m) = &monitor {
        s.push_str("<section id=\"windows\">");
        if windows.is_empty() {
            let _ = writeln!(s, "<h2>Monitor windows</h2><p>No windows of monitor {} are in this history.</p>", esc(&m.id));
        } else {
            s.push_str(&html::render_blocks(&crate::report::blocks::monitor_windows(&label, m, windows, Unit::Us)));
            if let Some(p) = crate::report::plots::windows_plot(&format!("run{id}"), &label, windows) {
                s.push_str(&html::figure(&p));
            }
        }
        s.push_str("</section>\n");
    }
    s.push_str(&html::bins(&a, Unit::Us));
    Ok(html::document(&format!("rtscope: run #{id}"), STYLE, &s))
}

/// `/compare`: the runs side by side as `rtscope compare` shows them (notes
/// on paired phases, the table, sentences, overlays), then the bin tables.
pub(crate) fn compare_page(shown: &str, runs: Vec<(i64, Run)>, q: &crate::serve::query::CompareQuery) -> anyhow::Result<String> {
    let ids: Vec<i64> = runs.iter().map(|(i, _)| *i).collect();
    let runs: Vec<(String, Run)> = runs.into_iter().map(|(i, r)| (format!("#{i}"), r)).collect();
    // Paired as `rtscope compare --match/--phases` pairs them.
    let opts = Options { pwcet: false, pairing: q.pairing.clone(), deadline: q.deadline, ..Options::default() };
    let a = analyse(&runs, &[], &opts)?;
    let plots: Vec<_> = crate::report::plots::plots(&a).into_iter().filter(|p| p.run.is_none()).collect();
    let mut s = nav(shown);
    let _ = writeln!(s, "<h1>Comparison of {} runs</h1><ul>", runs.len());
    for ((id, (_, r)), sys) in ids.iter().zip(&runs).zip(&a.comparison.systems) {
        let _ = write!(
            s,
            "<li><a href=\"/runs/{id}\">#{id}</a> {} {} ({}), {}: shown as <strong>{}</strong></li>",
            esc(&r.host.hostname),
            esc(&r.host.kernel_release),
            esc(&preemption(
                &r.host.preempt_model,
                crate::model::listed_realtime_word(r.source(), &r.host.kernel_release, r.host.realtime, &r.host.preempt_model),
                false
            )),
            esc(&r.started_at),
            esc(sys)
        );
    }
    s.push_str("</ul>\n");
    s.push_str(&html::comparison(&a, &plots, Unit::Us));
    s.push_str(&html::bins(&a, Unit::Us));
    let title = ids.iter().map(|i| format!("#{i}")).collect::<Vec<_>>().join(" vs ");
    Ok(html::document(&format!("rtscope: {title}"), STYLE, &s))
}
