//! `rtscope report`: snapshot tests of the md, csv and term renderers on
//! crafted results (insta; snapshots committed under tests/snapshots), the
//! self-contained HTML with its plots, `--plots DIR`, and a real-browser
//! check (headless Chromium: the DOM has the plot elements and the
//! screenshot is not blank), skipped with a message when Chromium is absent.

mod analysis_support;
mod common;

use std::path::{Path, PathBuf};

use analysis_support::*;
use common::{chromium, chromium_cmd, skip};

/// Two small systems from hand-written histograms, written as a.json and
/// b.json in `dir` (relative names keep the snapshots path-free).
fn crafted(dir: &Path) {
    let a = run(
        host("alpha", "6.1.0"),
        vec![
            from_histogram("timer", "idle", &[(2_000, 500), (3_000, 300), (4_000, 150), (12_000, 45), (31_000, 5)]),
            from_histogram("timer", "mixed", &[(2_500, 400), (6_000, 400), (9_000, 150), (40_000, 49), (95_000, 1)]),
        ],
    );
    let b = run(
        host("beta", "6.1.0-rt"),
        vec![
            from_histogram("timer", "idle", &[(1_000, 600), (1_500, 300), (2_000, 95), (7_000, 5)]),
            from_histogram("timer", "mixed", &[(1_200, 500), (2_500, 400), (4_000, 99), (15_000, 1)]),
        ],
    );
    write(dir, "a.json", &a);
    write(dir, "b.json", &b);
}

fn report(dir: &Path, args: &[&str]) -> String {
    let out = rtscope().current_dir(dir).arg("report").args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn markdown_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    crafted(dir.path());
    let md = report(dir.path(), &["a.json", "b.json", "--name", "A,B", "--format", "md", "--deadline", "10us"]);
    insta::assert_snapshot!("report_md_two_systems", md);
}

#[test]
fn csv_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    crafted(dir.path());
    let csv = report(dir.path(), &["a.json", "b.json", "--format", "csv", "--deadline", "10us"]);
    insta::assert_snapshot!("report_csv_two_systems", csv);
    // Bucket rows sum to the summary's samples, per entry.
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let (mut samples, mut buckets) = (std::collections::BTreeMap::new(), std::collections::BTreeMap::new());
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        let key = (f[col("system")].to_string(), f[col("phase")].to_string());
        if f[0] == "summary" {
            samples.insert(key, f[col("samples")].parse::<u64>().unwrap());
        } else {
            *buckets.entry(key).or_insert(0u64) += f[col("count")].parse::<u64>().unwrap();
        }
    }
    assert_eq!(samples.len(), 4);
    assert_eq!(samples, buckets);
}

#[test]
fn term_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    crafted(dir.path());
    let t = report(dir.path(), &["a.json", "b.json", "--name", "A,B", "--deadline", "10us", "--color", "never"]);
    insta::assert_snapshot!("report_term_two_systems", t);
    let single = report(dir.path(), &["a.json", "--bins", "10us", "--color", "never"]);
    insta::assert_snapshot!("report_term_one_system", single);
    let coloured = report(dir.path(), &["a.json", "b.json", "--color", "always"]);
    assert!(coloured.contains("\u{1b}["), "--color always colours");
}

/// A result with a fitted statistical worst case (i.i.d. GPD tail) and one
/// per-thread pair, for the HTML tests.
fn rich(dir: &Path) -> (PathBuf, PathBuf) {
    let mut r = Rng(17);
    let mut series = |n: usize, base: u64| -> Vec<u64> { (0..n).map(|_| base + (1500.0 / 0.1 * (r.uniform().powf(-0.1) - 1.0)) as u64).collect() };
    let mut ea = entries("timer", "idle", &[series(30_000, 5_000), series(30_000, 5_200)], 100_000);
    ea.extend(entries("timer", "mixed", &[series(30_000, 9_000), series(30_000, 9_500)], 100_000));
    let eb = entries("timer", "idle", &[series(30_000, 2_000), series(30_000, 2_100)], 100_000);
    (write(dir, "a.json", &run(host("alpha", "6.1.0"), ea)), write(dir, "b.json", &run(host("beta", "6.1.0-rt"), eb)))
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

#[test]
fn html_is_self_contained_and_plots_go_to_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = rich(dir.path());
    let html = dir.path().join("r.html");
    let plots = dir.path().join("plots");
    let out =
        rtscope().arg("report").arg(&a).arg(&b).args(["--format", "html", "--deadline", "50us", "-o"]).arg(&html).arg("--plots").arg(&plots).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s = std::fs::read_to_string(&html).unwrap();
    // Self-contained: nothing fetched at view time.
    for bad in ["<script", "src=\"http", "href=\"http", "@import", "url("] {
        assert!(!s.contains(bad), "found {bad}");
    }
    // Per run and entry: timeline, histogram, exceedance, pwcet; phases
    // for run 1 (idle + mixed); systems overlays for the matched entry.
    let kinds = |k: &str| count(&s, &format!("<figure class=\"plot\" data-kind=\"{k}\""));
    assert_eq!(kinds("timeline"), 3);
    assert_eq!(kinds("histogram"), 3);
    assert_eq!(kinds("exceedance"), 3);
    assert_eq!(kinds("phases"), 1);
    assert_eq!(kinds("systems"), 1);
    assert_eq!(kinds("systems-histogram"), 1);
    assert!(kinds("pwcet") >= 1, "the i.i.d. tail gets a pWCET panel");
    let figures = count(&s, "<figure class=\"plot\"");
    assert_eq!(count(&s, "<svg"), figures);
    assert!(s.contains("Host fingerprint"));
    assert!(s.contains("Statistical worst case"));
    assert!(s.contains("Comparison"));
    // --plots: one SVG per figure.
    let files: Vec<_> = std::fs::read_dir(&plots).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), figures);
    for f in files {
        let svg = std::fs::read_to_string(&f).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{}", f.display());
        assert!(svg.contains("<polyline") || svg.contains("<path"), "{} has lines", f.display());
    }
}

/// The statistical worst case's refusals stand out on the page: one red
/// `<ul class="refused">` per run, an item per refused entry with its reason
/// (the crafted results carry no tail samples, so every entry is refused).
#[test]
fn html_marks_pwcet_refusals_in_red() {
    let dir = tempfile::tempdir().unwrap();
    crafted(dir.path());
    let html = report(dir.path(), &["a.json", "b.json", "--format", "html"]);
    assert!(html.contains(".refused{color:#b01c1c}"), "the page styles the class");
    let lists: Vec<&str> = html.split("<ul class=\"refused\">").skip(1).map(|l| &l[..l.find("</ul>").unwrap()]).collect();
    assert_eq!(lists.len(), 2, "one list per run: {html}");
    for (list, phases) in lists.iter().zip([["idle", "mixed"], ["idle", "mixed"]]) {
        assert_eq!(count(list, "<li>"), 2, "{list}");
        for p in phases {
            assert!(list.contains(&format!("<li>timer/{p} thread all: no estimate: no tail samples")), "{list}");
        }
    }
    // The text formats keep a plain list (the Markdown snapshot).
    let md = report(dir.path(), &["a.json", "--format", "md"]);
    assert!(md.contains("\n- timer/idle thread all: no estimate:"), "{md}");
}

#[test]
fn html_renders_its_plots_in_a_real_browser() {
    let Some(bin) = chromium() else {
        skip!("Chromium is not installed (apt-get install -y chromium): the browser check did not run");
    };
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = rich(dir.path());
    let html = dir.path().join("r.html");
    // With --deadline: the deadline table and verdict must fit 1280 px too.
    let st = rtscope().arg("report").arg(&a).arg(&b).args(["--format", "html", "--deadline", "200us", "-o"]).arg(&html).output().unwrap();
    assert!(st.status.success());
    let figures = count(&std::fs::read_to_string(&html).unwrap(), "<figure class=\"plot\"");
    let url = format!("file://{}", html.display());

    // The DOM the browser built holds every plot, each an SVG with lines.
    let dom = chromium_cmd(&bin, &dir.path().join("p1")).arg("--dump-dom").arg(&url).output().unwrap();
    assert!(dom.status.success(), "{}", String::from_utf8_lossy(&dom.stderr));
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(count(&dom, "<figure class=\"plot\""), figures, "browser DOM");
    assert!(count(&dom, "<svg") >= figures);
    assert!(count(&dom, "<polyline") >= figures, "every plot has line series");

    // The screenshot is not blank: plot ink (axes, text, coloured series).
    let shot = dir.path().join("shot.png");
    let out =
        chromium_cmd(&bin, &dir.path().join("p2")).arg(format!("--screenshot={}", shot.display())).arg("--window-size=1280,2000").arg(&url).output().unwrap();
    assert!(out.status.success() && shot.exists(), "{}", String::from_utf8_lossy(&out.stderr));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let ch = info.color_type.samples();
    let px = &buf[..info.buffer_size()];
    let (mut ink, mut blue) = (0usize, 0usize);
    for p in px.chunks(ch) {
        let (r, g, b) = (p[0] as i32, p[1] as i32, p[2] as i32);
        if r < 235 || g < 235 || b < 235 {
            ink += 1;
        }
        // The first series colour, rgb(31, 119, 180).
        if (r - 31).abs() < 40 && (g - 119).abs() < 40 && (b - 180).abs() < 40 {
            blue += 1;
        }
    }
    let total = px.len() / ch;
    assert!(ink * 100 > total * 3, "screenshot looks blank: {ink} of {total} pixels inked");
    assert!(blue > 200, "no plotted series visible ({blue} series-coloured pixels)");

    // Layout at 1280 px, measured from the DOM Chromium laid out: a copy of
    // the page with a script (the report itself has none) that writes the
    // measurements into an attribute --dump-dom prints.
    let measured = dir.path().join("m.html");
    let page = std::fs::read_to_string(&html).unwrap().replace("</body>", &format!("<script>{MEASURE}</script></body>"));
    std::fs::write(&measured, page).unwrap();
    let dom = chromium_cmd(&bin, &dir.path().join("p3"))
        .args(["--window-size=1280,2000", "--dump-dom"])
        .arg(format!("file://{}", measured.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dom.stdout);
    let attr = dom.split("data-metrics=\"").nth(1).and_then(|x| x.split('"').next()).unwrap_or_else(|| panic!("no metrics in the DOM"));
    let m: serde_json::Value = serde_json::from_str(&attr.replace("&quot;", "\"")).unwrap();
    eprintln!("html layout at 1280 px: {m}");
    assert_eq!(m["window"], 1280, "{m}");
    assert!(m["page"].as_f64().unwrap() <= 1280.0, "the page scrolls sideways: {m}");
    assert!(m["tables"].as_u64().unwrap() >= 5, "{m}");
    assert_eq!(m["overflowing"], serde_json::json!([]), "a table needs a horizontal scrollbar at 1280 px: {m}");
    assert!(m["plot_texts"].as_u64().unwrap() > 100, "{m}");
    assert!(m["min_text_px"].as_f64().unwrap() >= 11.0, "plot text under 11 px: {m}");
    assert!(m["min_plot_width_ratio"].as_f64().unwrap() >= 0.95, "plots do not use the page width: {m}");
    assert_eq!(m["legend_over_data"], 0, "a legend entry is inside a plotting area: {m}");
    assert_eq!(m["bins_folded"], true, "{m}");
}

/// Measures the laid-out report: page and table overflow, the smallest
/// plot text in CSS px (font size × the SVG's scale), the narrowest plot
/// relative to its section, legend text left of the legend column (x < 860
/// of 1100: over the plotting area), and
/// whether the bin tables are folded.
const MEASURE: &str = r#"
(function () {
  var all = function (root, q) { return Array.prototype.slice.call(root.querySelectorAll(q)); };
  var r = { window: window.innerWidth, page: document.documentElement.scrollWidth };
  r.tables = all(document, '.tw').length;
  r.overflowing = all(document, '.tw').filter(function (d) { return d.scrollWidth > d.clientWidth + 1; })
    .map(function (d) { return d.scrollWidth + '>' + d.clientWidth; });
  var min = 1e9, n = 0, narrow = 1e9, over = 0;
  all(document, 'figure.plot svg').forEach(function (svg) {
    var w = svg.getBoundingClientRect().width;
    var scale = w / svg.viewBox.baseVal.width;
    narrow = Math.min(narrow, w / svg.closest('section').getBoundingClientRect().width);
    all(svg, 'text').forEach(function (t) {
      n++;
      min = Math.min(min, parseFloat(getComputedStyle(t).fontSize) * scale);
    });
  });
  all(document, 'figure.plot svg').forEach(function (svg) {
    var box = svg.getBoundingClientRect(), scale = box.width / svg.viewBox.baseVal.width;
    all(svg, 'text').forEach(function (t) {
      var b = t.getBoundingClientRect();
      var x = (b.left - box.left) / scale;
      if (/^(thread|all threads|observed|GPD|estimate|partial)/.test(t.textContent.trim()) && x < 860) over++;
    });
  });
  r.plot_texts = n; r.min_text_px = min; r.min_plot_width_ratio = narrow; r.legend_over_data = over;
  var b = document.querySelector('details.bins'); r.bins_folded = b ? !b.open : null;
  document.body.setAttribute('data-metrics', JSON.stringify(r));
})();
"#;

#[test]
fn term_snapshot_with_a_statistical_worst_case() {
    // The i.i.d. GPD-tailed runs of `rich`: every entry gets an estimate
    // (seeded bootstrap, so the intervals are reproducible).
    let dir = tempfile::tempdir().unwrap();
    rich(dir.path());
    let out = rtscope().current_dir(dir.path()).args(["report", "b.json", "--name", "B", "--color", "never", "--deadline", "20us", "--wide"]).output().unwrap();
    assert!(out.status.success());
    let t = String::from_utf8(out.stdout).unwrap();
    assert!(t.contains("  fit"), "{t}");
    insta::assert_snapshot!("report_term_pwcet", t);
}

/// The terminal report of a 2-phase, 2-thread run fits one screen: at most
/// 80 lines of at most 80 characters, the bins only with --bins, every
/// column with --wide; the numbers in the narrowed table are the report
/// JSON's.
#[test]
fn term_report_fits_an_80_column_screen() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = rich(dir.path());
    let text = report(dir.path(), &[a.to_str().unwrap(), "--color", "never"]);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() <= 80, "{} lines:\n{text}", lines.len());
    for l in &lines {
        assert!(l.chars().count() <= 80, "{} characters: {l}", l.chars().count());
    }
    assert!(!text.contains("Bins of"), "{text}");
    // The merged idle row: p99 and max as the JSON has them.
    let json: serde_json::Value = serde_json::from_str(&report(dir.path(), &[a.to_str().unwrap(), "--format", "json"])).unwrap();
    let e = json["runs"][0]["entries"].as_array().unwrap().iter().find(|e| e["phase"] == "idle" && e["thread"].is_null()).unwrap();
    let p99 = e["percentiles"].as_array().unwrap().iter().find(|p| p["label"] == "p99").unwrap()["value_ns"].as_u64().unwrap();
    let header: Vec<&str> = lines.iter().find(|l| l.starts_with("probe  phase")).unwrap().split_whitespace().collect();
    let row: Vec<&str> = lines.iter().find(|l| l.starts_with("timer  idle   all")).unwrap().split_whitespace().collect();
    let col = |h: &str| header.iter().position(|x| x.starts_with(h)).unwrap_or_else(|| panic!("no {h} in {header:?}"));
    assert_eq!(row[col("p99(")], format!("{:.1}", p99 as f64 / 1000.0));
    assert_eq!(row[col("max")], format!("{:.1}", e["max_ns"].as_u64().unwrap() as f64 / 1000.0));
    assert!(!header.iter().any(|h| h.starts_with("min")), "min left out at 80 columns: {header:?}");
    assert!(text.contains("left out to fit 80 columns: variant, cpu"), "{text}");

    let bins = report(dir.path(), &[a.to_str().unwrap(), "--bins", "--color", "never"]);
    assert!(bins.contains("-- Bins of 5.0 us: timer/idle") && bins.contains("-- Bins of 5.0 us: timer/mixed"), "{bins}");
    let wide = report(dir.path(), &[a.to_str().unwrap(), "--wide", "--color", "never"]);
    let wide_header = wide.lines().find(|l| l.starts_with("probe  variant")).unwrap();
    assert!(wide_header.contains("min(us)") && wide_header.contains("p99.99(us)") && wide_header.chars().count() > 80, "{wide_header}");
    assert!(!wide.contains("left out"), "{wide}");
}

/// Issue 31 item 5: `report --deadline 200us` at 80 columns left out `miss
/// ratio` and `P(miss)/h`, and no report gave the PASS/FAIL verdict of
/// `run --deadline` nor drew the deadline. a.json (crafted): idle has 45
/// samples at 12 µs and 5 at 31 µs of 1000, mixed 49 at 40 µs and 1 at
/// 95 µs of 1000.
#[test]
fn deadline_view_keeps_the_asked_columns_and_gives_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    crafted(dir.path());
    let text = report(dir.path(), &["a.json", "--deadline", "10us", "--color", "never"]);
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "{} characters: {l}", l.chars().count());
    }
    let header = text.lines().find(|l| l.starts_with("probe") && l.contains("misses")).unwrap_or_else(|| panic!("{text}"));
    assert!(header.contains("miss ratio") && header.contains("P(miss)/h") && header.contains("overruns"), "{header}");
    let dropped = text.lines().filter(|l| l.contains("left out")).collect::<Vec<_>>().join(" ");
    assert!(!dropped.contains("miss"), "an asked-for column was left out: {dropped}");
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("verdict: FAIL (2 of 2 entries missed the deadline)"), "{text}");
    // The report exits 0 on a FAIL, and says which command is the gate.
    assert!(text.contains("this command exits 0 on a FAIL: the gate is `rtscope check --deadline` (exit 3)"), "{text}");
    assert!(text.contains("FAIL timer/idle: 50 of 1000 periods missed the 10.0 us deadline (50 late sample(s), 0 missed period(s))"), "{text}");
    assert!(text.contains("FAIL timer/mixed: 50 of 1000 periods missed the 10.0 us deadline"), "{text}");
    // Verdict lines wrap at 80 columns: read them with the wrapping undone.
    let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let pass = flat(&report(dir.path(), &["a.json", "--deadline", "100us", "--color", "never"]));
    assert!(pass.contains("verdict: PASS (all 2 entries met the deadline)"), "{pass}");
    assert!(pass.contains("PASS timer/idle: no sample over the 100.0 us deadline and no period missed (1000 periods)"), "{pass}");
    // A missed period is a miss: no sample over 100 µs, 3 periods missed.
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("a.json")).unwrap()).unwrap();
    v["results"][0]["overruns"] = 3.into();
    std::fs::write(dir.path().join("o.json"), serde_json::to_string(&v).unwrap()).unwrap();
    let o = flat(&report(dir.path(), &["o.json", "--deadline", "100us", "--color", "never"]));
    assert!(
        o.contains("FAIL timer/idle: 3 of 1003 periods missed the 100.0 us deadline (0 late sample(s), 3 missed period(s))") && o.contains("PASS timer/mixed"),
        "{o}"
    );
    // Markdown and HTML give the same verdict; every latency plot draws the deadline.
    let md = report(dir.path(), &["a.json", "--deadline", "10us", "--format", "md"]);
    assert!(md.contains("FAIL timer/idle: 50 of 1000 periods missed the 10.0 us deadline"), "{md}");
    let html = report(dir.path(), &["a.json", "--deadline", "10us", "--format", "html"]);
    assert!(html.contains("FAIL (2 of 2 entries)") && html.contains("FAIL timer/idle: 50 of 1000 periods missed"), "verdict in HTML");
    let figures = html.matches("<figure class=\"plot\"").count();
    let pwcet = html.matches("data-kind=\"pwcet\"").count();
    assert!(figures > 0);
    assert_eq!(html.matches("deadline 10 µs").count(), figures - pwcet, "every latency plot names the deadline in its legend");
}

/// Issue 31 item 5: the trace attribution `run` prints at its end ("what
/// held the CPU") was absent from the terminal report. Both render one block.
#[test]
fn term_report_shows_what_held_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixture_path("golden/result-v1.json")).unwrap()).unwrap();
    v["results"][0]["worst"][0]["trace"]["culprits"] = serde_json::json!([
        {"kind": "task", "name": "hog-planted", "pid": 4242, "prio": 49, "duration_ns": 30000, "count": 1}
    ]);
    let p = dir.path().join("traced.json");
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    let text = report(dir.path(), &["traced.json", "--color", "never", "--wide"]);
    let at = text.find("-- What held the CPU (trace)").unwrap_or_else(|| panic!("{text}"));
    let block = &text[at..];
    assert!(block.contains("hog-planted (pid 4242, rt prio 50) 30.0us"), "{block}");
}

/// Issue 59: names in a result from elsewhere are text, never layout. A
/// culprit's name with `\r\n` forged a report line ("error: …"), a code
/// path's frame with HTML went raw into the Markdown report.
#[test]
fn names_in_a_result_cannot_forge_lines_or_markup() {
    let dir = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixture_path("golden/result-v1.json")).unwrap()).unwrap();
    v["results"][0]["worst"][0]["trace"]["culprits"] = serde_json::json!([
        {"kind": "task", "name": "hog\r\nerror: forged line", "pid": 4242, "prio": 49, "duration_ns": 30000, "count": 1,
         "paths": [{"frames": ["<img src=x onerror=alert(1)>", "vfs_read"], "samples": 3, "share": 1.0}]}
    ]);
    std::fs::write(dir.path().join("traced.json"), serde_json::to_string(&v).unwrap()).unwrap();
    let text = report(dir.path(), &["traced.json", "--color", "never", "--wide"]);
    assert!(text.contains("hog\\x0d\\x0aerror: forged line (pid 4242, rt prio 50)"), "{text}");
    assert!(!text.lines().any(|l| l.trim_start().starts_with("error: forged")), "{text}");
    let md = report(dir.path(), &["traced.json", "--format", "md"]);
    assert!(md.contains("&lt;img src=x onerror=alert(1)> ← vfs_read"), "{md}");
    assert!(!md.contains("<img"), "{md}");
    assert!(!md.lines().any(|l| l.trim_start().starts_with("error: forged")), "{md}");
}

fn fixture_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel)
}

/// Issue 49 item 6: a lab's names fit 80 columns. The report of a run
/// whose phases are named as the lab names them (`guest:cpu:1,fork:1,io:1,net:1`,
/// 89-94 columns before) and the comparison of three systems with long
/// names (217 columns before) keep every line within 80 characters: each
/// long name becomes a key (`P1`, `#2`) spelled out under its table.
#[test]
fn long_lab_names_fit_80_columns_as_keys() {
    let dir = tempfile::tempdir().unwrap();
    let (long_a, long_b) = ("guest:cpu:1,fork:1,io:1,net:1", "guest:memory:1,sched:1,irq:1");
    let mut e = entries("timer", long_a, &[vec![5_000, 6_000, 7_000], vec![5_500, 6_500]], 100_000);
    e.extend(entries("timer", long_b, &[vec![9_000, 9_500], vec![8_000]], 100_000));
    let a = write(dir.path(), "a.json", &run(host("kernel-lab-stock-arm64-qemu-virt", "6.1.0-37-arm64"), e.clone()));
    let text = report(dir.path(), &[a.to_str().unwrap(), "--color", "never"]);
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "{} characters: {l}\n{text}", l.chars().count());
    }
    assert!(text.contains(&format!("P1 = {long_a}")) && text.contains(&format!("P2 = {long_b}")), "{text}");
    let row = text.lines().find(|l| l.starts_with("timer  P1") && l.contains("all")).unwrap_or_else(|| panic!("no keyed row:\n{text}"));
    assert!(row.contains("7.0"), "the merged max of {long_a}: {row}");
    // --wide: the names as they are, no key.
    let wide = report(dir.path(), &[a.to_str().unwrap(), "--wide", "--color", "never"]);
    assert!(wide.contains(long_a) && !wide.contains("P1 ="), "{wide}");

    let b = write(dir.path(), "b.json", &run(host("kernel-lab-rt-arm64-qemu-virt", "6.1.0-37-rt-arm64"), e.clone()));
    let c = write(dir.path(), "c.json", &run(host("kernel-lab-stock-amd64-qemu-pc", "6.1.0-37-amd64"), e));
    let out = rtscope().current_dir(dir.path()).arg("compare").args([&a, &b, &c]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "{} characters: {l}\n{text}", l.chars().count());
    }
    assert!(text.contains("#1 = kernel-lab-stock-arm64-qemu-virt"), "{text}");
    // At 80 columns the ratio columns are left out (the last system's first)
    // and named; with the room for them (--width 120) they are shown, keyed.
    assert!(text.lines().any(|l| l.starts_with("entry") && l.contains("#2") && l.contains("#3")), "{text}");
    assert!(text.contains("(left out to fit 80 columns: #3/#1, #2/#1; --wide shows them)"), "{text}");
    let out = rtscope().current_dir(dir.path()).arg("compare").args([&a, &b, &c]).args(["--width", "120"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    for l in text.lines() {
        assert!(l.chars().count() <= 120, "{} characters: {l}\n{text}", l.chars().count());
    }
    assert!(text.contains("#1 = kernel-lab-stock-arm64-qemu-virt"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("entry") && l.contains("#2/#1") && l.contains("#3/#1")), "{text}");
}

/// Issue 64, item 14: at 80 columns the report keeps the variant column
/// when the entries name variants (`sem` posix and sysv would otherwise read
/// as identical rows), and a block that measured nothing shows "-" for its
/// min, mean, percentiles and max, never 0.0. a.json: sem posix/same-cpu
/// (max 9.0 µs), sysv/same-cpu (max 31.0 µs) and mutex/same-cpu with no
/// sample (a variant stopped before its first hand-off).
#[test]
fn term_report_keeps_variants_and_dashes_an_empty_block_at_80_columns() {
    let dir = tempfile::tempdir().unwrap();
    let with_variant = |v: &str, mut es: Vec<rtscope::model::ProbeResult>| {
        es.iter_mut().for_each(|e| e.variant = Some(v.into()));
        es
    };
    let mut e = with_variant("posix/same-cpu", entries("sem", "idle", &[vec![2_000, 3_000, 9_000]], 1_000_000));
    e.extend(with_variant("sysv/same-cpu", entries("sem", "idle", &[vec![4_000, 5_000, 31_000]], 1_000_000)));
    e.extend(with_variant("mutex/same-cpu", entries("sem", "idle", &[vec![]], 1_000_000)));
    let a = write(dir.path(), "a.json", &run(host("alpha", "6.1.0"), e));
    // The merged ("all") row of each variant, by the header's columns.
    let rows = |text: &str| -> (Vec<String>, Vec<Vec<String>>) {
        let words = |l: &str| l.split_whitespace().map(String::from).collect::<Vec<_>>();
        let header = words(text.lines().find(|l| l.starts_with("probe  variant")).unwrap_or_else(|| panic!("no variant column:\n{text}")));
        let all = ["posix/same-cpu", "sysv/same-cpu", "mutex/same-cpu"]
            .iter()
            .map(|v| {
                words(text.lines().find(|l| l.starts_with(&format!("sem    {v}")) && l.contains(" all ")).unwrap_or_else(|| panic!("no {v} row:\n{text}")))
            })
            .collect();
        (header, all)
    };
    let col =
        |header: &[String], h: &str| header.iter().position(|x| x == h || x.starts_with(&format!("{h}("))).unwrap_or_else(|| panic!("no {h} in {header:?}"));

    let text = report(dir.path(), &[a.to_str().unwrap(), "--color", "never"]);
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "{} characters: {l}", l.chars().count());
    }
    let (header, all) = rows(&text);
    assert_eq!(col(&header, "variant"), 1, "{header:?}");
    assert!(!text.contains("left out to fit 80 columns: variant"), "{text}");
    let (posix, sysv, empty) = (&all[0], &all[1], &all[2]);
    assert_eq!((posix[col(&header, "max")].as_str(), sysv[col(&header, "max")].as_str()), ("9.0", "31.0"), "{text}");
    assert_eq!((posix[col(&header, "p50")].as_str(), sysv[col(&header, "p50")].as_str()), ("3.0", "5.0"), "{text}");
    assert_eq!(empty[col(&header, "samples")], "0", "{text}");
    for h in ["p50", "p99", "max"] {
        assert_eq!(empty[col(&header, h)], "-", "{h} of the empty block:\n{text}");
    }
    // --wide adds min and mean±σ: a dash for the empty block there too.
    let wide = report(dir.path(), &[a.to_str().unwrap(), "--wide", "--color", "never"]);
    let (header, all) = rows(&wide);
    assert_eq!(all[1][col(&header, "min")], "4.0", "{wide}");
    for h in ["min", "mean±σ", "max"] {
        assert_eq!(all[2][col(&header, h)], "-", "{h} of the empty block:\n{wide}");
    }
}
