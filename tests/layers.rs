//! The layer rule of docs/architecture.md, checked from the source: every
//! `crate::MODULE` path in src/ (outside comments and `#[cfg(test)]` code)
//! is an edge between top-level modules, and
//! - every edge points to a module of a lower layer, or of the same layer
//!   without making a cycle (no import cycle between top-level modules);
//! - `crate::cli` is used only by the face (src/cli, src/commands, main.rs);
//! - clap (derives, parsers, value enums) is used only in src/cli and
//!   src/commands: the layers below take domain values the face maps to;
//! - `Run`, `Plan` and `ProbeResult` are built by struct literal only in
//!   src/model (everything else calls their constructors);
//! - every probe is registered once, by its descriptor (`measure::ProbeInfo`),
//!   and a quoted probe name is matched only in its own file (bar a short
//!   documented list), and every probe flag has a probe that reads it.
//!
//! A new top-level module must be given its layer in [`LAYERS`] (and a
//! sentence in docs/architecture.md): the test names a module it does not know.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level modules from the bottom layer up; modules on one line share a layer.
const LAYERS: &[&[&str]] = &[
    &["units", "error"],
    &["model"],
    &["stats"],
    &["sys"],
    &["sysinfo"],
    &["measure", "load", "trace", "doctor"],
    &["live", "store", "import"],
    &["plan"],
    &["scenario"],
    &["runner", "agent_host"],
    &["monitor"],
    &["analysis"],
    &["report"],
    &["serve", "factors"],
    &["cli"],
    &["commands"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The file's code without comments and without its `#[cfg(test)]` part
/// (the tests of a module may use anything). Strings are kept, so a
/// `//` inside a string literal is not taken for a comment.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    };
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut in_str = false;
    while i < b.len() {
        let c = b[i];
        if in_str {
            if c == b'\\' {
                out.push_str(&text[i..(i + 2).min(b.len())]);
                i += 2;
                continue;
            }
            if c == b'"' {
                in_str = false;
            }
        } else if c == b'"' && !(i > 0 && b[i - 1] == b'\'' && b.get(i + 1) == Some(&b'\'')) {
            in_str = true;
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let end = text[i + 2..].find("*/").map(|k| i + 2 + k + 2).unwrap_or(b.len());
            i = end;
            continue;
        }
        let ch = text[i..].chars().next().unwrap();
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// `crate::NAME` paths in `code`, by name.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + 7..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if name.is_empty() {
            // `crate::{a, b}`: each item of the group.
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    let item = item.trim();
                    let name: String = item.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                    if !name.is_empty() {
                        found.insert(name);
                    }
                }
            }
            continue;
        }
        found.insert(name);
    }
    found
}

/// The top-level module a file of src/ belongs to (`main` for src/main.rs).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_string_lossy().to_string();
    first.trim_end_matches(".rs").to_string()
}

struct Sources {
    /// (module, file, code)
    files: Vec<(String, PathBuf, String)>,
}

fn sources() -> Sources {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let files = files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            (module_of(&src, &f), f.strip_prefix(&src).unwrap().to_path_buf(), code_of(&text))
        })
        .collect();
    Sources { files }
}

/// module → (imported module → first file that imports it)
fn edges(s: &Sources) -> BTreeMap<String, BTreeMap<String, PathBuf>> {
    let mut g: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
    for (m, f, code) in &s.files {
        if m == "lib" || m == "main" {
            continue;
        }
        for t in crate_paths(code) {
            if &t != m {
                g.entry(m.clone()).or_default().entry(t).or_insert_with(|| f.clone());
            }
        }
    }
    g
}

#[test]
fn every_module_has_a_layer() {
    let s = sources();
    let unknown: BTreeSet<&String> = s.files.iter().map(|(m, _, _)| m).filter(|m| *m != "lib" && *m != "main" && layer_of(m).is_none()).collect();
    assert!(unknown.is_empty(), "top-level modules without a layer in tests/layers.rs LAYERS (and docs/architecture.md): {unknown:?}");
}

#[test]
fn every_layer_is_described_in_docs_architecture() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md")).unwrap();
    let mut missing = Vec::new();
    for (layer, modules) in LAYERS.iter().enumerate() {
        for m in *modules {
            if !doc.lines().any(|l| l.starts_with(&format!("| {layer} | `{m}` |"))) {
                missing.push(format!("| {layer} | `{m}` | ... |"));
            }
        }
    }
    assert!(missing.is_empty(), "docs/architecture.md lacks the rows (layer, module, one sentence):\n{}", missing.join("\n"));
}

#[test]
fn imports_point_down() {
    let g = edges(&sources());
    let mut up = Vec::new();
    for (from, tos) in &g {
        for (to, file) in tos {
            if let (Some(a), Some(b)) = (layer_of(from), layer_of(to)) {
                if b > a {
                    up.push(format!("{from} (layer {a}) imports {to} (layer {b}) in src/{}", file.display()));
                }
            }
        }
    }
    assert!(up.is_empty(), "imports that point up the layers of docs/architecture.md:\n{}", up.join("\n"));
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    let g = edges(&sources());
    // Depth-first search; a back edge closes a cycle, reported with its files.
    fn visit(v: &str, g: &BTreeMap<String, BTreeMap<String, PathBuf>>, state: &mut BTreeMap<String, u8>, path: &mut Vec<String>, cycles: &mut Vec<String>) {
        state.insert(v.to_string(), 1);
        path.push(v.to_string());
        for (w, _) in g.get(v).into_iter().flatten() {
            match state.get(w.as_str()).copied().unwrap_or(0) {
                0 => visit(w, g, state, path, cycles),
                1 => {
                    let start = path.iter().position(|x| x == w).unwrap();
                    let mut c: Vec<String> = path[start..].to_vec();
                    c.push(w.clone());
                    let hops: Vec<String> = c.windows(2).map(|p| format!("{}->{} (src/{})", p[0], p[1], g[&p[0]][&p[1]].display())).collect();
                    cycles.push(hops.join(", "));
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(v.to_string(), 2);
    }
    let mut state = BTreeMap::new();
    let mut cycles = Vec::new();
    for v in g.keys() {
        if state.get(v.as_str()).copied().unwrap_or(0) == 0 {
            visit(v, &g, &mut state, &mut Vec::new(), &mut cycles);
        }
    }
    assert!(cycles.is_empty(), "import cycles between top-level modules:\n{}", cycles.join("\n"));
}

#[test]
fn only_the_face_uses_cli() {
    let s = sources();
    let outside: Vec<String> = s
        .files
        .iter()
        .filter(|(m, _, code)| !matches!(m.as_str(), "cli" | "commands" | "main" | "lib") && crate_paths(code).contains("cli"))
        .map(|(_, f, _)| format!("src/{}", f.display()))
        .collect();
    assert!(outside.is_empty(), "crate::cli used below the face (only src/cli, src/commands, src/main.rs may): {outside:?}");
}

/// True when `code` names the `clap` crate (`clap::…`, `use clap`), not a
/// longer name that ends in it.
fn uses_clap(code: &str) -> bool {
    let mut rest = code;
    while let Some(i) = rest.find("clap") {
        let before = rest[..i].chars().last();
        let after = rest[i + 4..].trim_start();
        let word_start = !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
        let in_use = rest[..i].trim_end().ends_with("use");
        rest = &rest[i + 4..];
        if word_start && (after.starts_with("::") || (in_use && (after.starts_with(';') || after.starts_with("as")))) {
            return true;
        }
    }
    false
}

#[test]
fn only_the_face_uses_clap() {
    let s = sources();
    let below: Vec<String> = s
        .files
        .iter()
        .filter(|(m, _, code)| !matches!(m.as_str(), "cli" | "commands") && uses_clap(code))
        .map(|(_, f, _)| format!("src/{}", f.display()))
        .collect();
    assert!(below.is_empty(), "clap used outside src/cli and src/commands (put the clap type in src/cli and map it to a domain value there): {below:?}");
}

#[test]
fn model_values_are_built_only_in_src_model() {
    let s = sources();
    let mut found = Vec::new();
    for (m, f, code) in &s.files {
        if m == "model" {
            continue;
        }
        for (n, line) in code.lines().enumerate() {
            for ty in ["Run", "Plan", "ProbeResult"] {
                if struct_literal(line, ty) {
                    found.push(format!("src/{}:{}: {}", f.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "struct literals of Run/Plan/ProbeResult outside src/model (use their constructors):\n{}", found.join("\n"));
}

/// `Ty {` as an expression (a literal), not `struct Ty {`, `impl Ty {`,
/// `fn f() -> Ty {`, a pattern `Ty { .. } =>` or a longer name (`RunPlan {`).
fn struct_literal(line: &str, ty: &str) -> bool {
    let mut rest = line;
    while let Some(i) = rest.find(ty) {
        let before = rest[..i].chars().last();
        let after = rest[i + ty.len()..].trim_start();
        // `-> &'a Ty {` and `-> &Ty {` are return types: drop the reference.
        let mut head = rest[..i].trim_end().trim_end_matches("::").trim_end();
        head = head.trim_end_matches(|c: char| c.is_alphanumeric() || c == '_' || c == ':').trim_end();
        head = head.trim_end_matches(|c: char| c.is_alphanumeric() || c == '_' || c == '\'').trim_end_matches('&').trim_end();
        rest = &rest[i + ty.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') || !after.starts_with('{') {
            continue;
        }
        let decl = ["struct", "impl", "enum", "for", "->", "trait"].iter().any(|k| head.ends_with(k))
            || line.contains("=>")
            || line.trim_start().starts_with("impl")
            || line.trim_start().starts_with("pub struct")
            || line.trim_start().starts_with("struct");
        if !decl {
            return true;
        }
    }
    false
}

#[test]
fn the_checks_catch_what_they_look_for() {
    // The helpers on known inputs, so a broken helper cannot pass the tree.
    assert_eq!(code_of("let a = 1; // crate::cli\nlet s = \"crate://x\";"), "let a = 1; \nlet s = \"crate://x\";");
    assert_eq!(code_of("use crate::x;\n#[cfg(test)]\nmod tests { use crate::cli; }"), "use crate::x;\n");
    let p = crate_paths("use crate::{model, units::Nanos};\nlet x = crate::sys::time::now_ns(); notcrate::cli");
    assert_eq!(p.into_iter().collect::<Vec<_>>(), vec!["model", "sys", "units"]);
    assert!(struct_literal("    let mut run = Run {", "Run"));
    assert!(struct_literal("Ok(ProbeResult { probe, phase })", "ProbeResult"));
    assert!(!struct_literal("pub struct Run {", "Run"));
    assert!(!struct_literal("impl Run {", "Run"));
    assert!(!struct_literal("let p = RunPlan { a };", "Run"));
    assert!(!struct_literal("fn f() -> Plan {", "Plan"));
    assert!(!struct_literal("    fn deref(&self) -> &ProbeResult {", "ProbeResult"));
    assert!(!struct_literal("fn g<'a>(x: &'a X) -> &'a model::Run {", "Run"));
    assert!(struct_literal("let r = model::Run {", "Run"));
    assert!(!struct_literal("Plan { .. } => 1,", "Plan"));
    assert!(uses_clap("#[derive(Debug, clap::ValueEnum)]\nenum E { A }"));
    assert!(uses_clap("use clap::{Args, Parser};"));
    assert!(uses_clap("use clap;"));
    assert!(!uses_clap("let s = \"clap\"; fn clapper() {} mod not_clap {} use x::clap_like;"));
    assert_eq!(layer_of("units"), Some(0));
    assert!(layer_of("commands") > layer_of("cli"));
}

// ---- The probe registry (docs/architecture.md, "The probe registry") ----

/// Where a quoted probe name may still be matched outside its own file and
/// the registry, and why. Keep it short: a new entry needs a reason the
/// descriptor cannot give.
const PROBE_NAME_ALLOWED: &[(&str, &str, &str)] = &[
    ("measure/osnoise.rs", "noise", "osnoise's own variant `noise` (not the probe)"),
    ("serve/query.rs", "preempt", "the history filter on the kernel's preemption model (not the probe)"),
    ("import/", "*", "importers name the probe another tool's figures stand for (a mapping of foreign names)"),
    ("plan/probes.rs", "mq", "mq's message size is bounded by this system's mqueue limit, read at plan time"),
    ("plan/probes.rs", "migrate", "migrate's priority and period rules, checked against the plan (measure cannot see it)"),
    ("report/noise.rs", "noise", "the noise probe's own gap table"),
    ("agent_host/session.rs", "pi", "the agent's probe descriptors' prio_below (pi's low thread -2), which hello does not announce yet"),
    ("agent_host/session.rs", "sem", "the agent's pair probes' prio_below (-1), which hello does not announce yet"),
    ("agent_host/session.rs", "pipe", "the agent's pair probes' prio_below (-1), which hello does not announce yet"),
    ("agent_host/session.rs", "mq", "the agent's pair probes' prio_below (-1), which hello does not announce yet"),
    ("agent_host/session.rs", "signal", "the agent's pair probes' prio_below (-1), which hello does not announce yet"),
    ("agent_host/session.rs", "preempt", "the agent's pair probes' prio_below (-1), which hello does not announce yet"),
    ("report/presets.rs", "timer", "seed 001's bin table is the timer's by the seed's definition"),
];

fn allowed(file: &str, name: &str) -> bool {
    PROBE_NAME_ALLOWED.iter().any(|(f, n, _)| (file == *f || (f.ends_with('/') && file.starts_with(f))) && (*n == "*" || *n == name))
}

/// Lines of `code` that match the quoted `name` (a comparison, a `match`
/// arm or pattern, `wants("name"`, `contains(&"name")`, or a `const`/`static`
/// list holding it); producing a name (`probe: "timer".into()`) is not matching.
fn matches_name(code: &str, name: &str) -> Vec<(usize, String)> {
    let q = format!("\"{name}\"");
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let Some(i) = line.find(&q) else { continue };
        let before = line[..i].trim_end();
        let after = line[i + q.len()..].trim_start();
        let compare = before.ends_with("==") || before.ends_with("!=") || after.starts_with("==") || after.starts_with("!=");
        let arm = after.starts_with("=>") || (after.starts_with('|') && !after.starts_with("||")) || (before.ends_with('|') && !before.ends_with("||"));
        let call = before.ends_with("wants(") || before.ends_with("contains(&") || before.ends_with("contains(");
        let list = line.contains("&[") && (line.contains("const ") || line.contains("static "));
        if compare || arm || call || list {
            out.push((n + 1, line.trim().to_string()));
        }
    }
    out
}

#[test]
fn every_probe_is_registered_once_by_its_descriptor() {
    let names = rtscope::measure::names();
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "a probe is registered twice: {names:?}");
    // Every file of src/measure that implements `Probe` is in the registry,
    // under its file's name, and says its facts in its own `INFO`.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/measure");
    let mut implementors = BTreeSet::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        if text.contains("impl Probe for ") {
            let stem = p.file_stem().unwrap().to_string_lossy().to_string();
            assert!(
                text.contains(&format!("name: \"{stem}\",")) && text.contains("&INFO"),
                "src/measure/{stem}.rs: its INFO must name it '{stem}' and `fn info` return &INFO"
            );
            implementors.insert(stem);
        }
    }
    let registered: BTreeSet<String> = names.iter().map(|n| n.to_string()).collect();
    assert_eq!(implementors, registered, "files implementing Probe vs measure::REGISTRY");
    for info in rtscope::measure::infos() {
        let p = rtscope::measure::probe_by_name(info.name).unwrap();
        assert!(std::ptr::eq(p.info(), info), "{}: the registry answers with another descriptor", info.name);
        assert!(!info.about.is_empty(), "{}: no `about` line", info.name);
        let vs: BTreeSet<&str> = info.variants.iter().copied().collect();
        assert_eq!(vs.len(), info.variants.len(), "{}: a variant listed twice", info.name);
        assert!(!info.multi_period() || info.variants.is_empty(), "{}: variants are its periods, none selectable", info.name);
    }
    assert!(rtscope::measure::info("cyclictest").is_none());
    // The binary lists them, each once, in the registry's order.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rtscope")).arg("probes").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let listed: Vec<&str> = text.lines().filter(|l| !l.starts_with(' ')).filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(listed, names, "`rtscope probes` lists:\n{text}");
}

#[test]
fn the_descriptor_is_the_only_place_a_probe_name_is_matched() {
    let s = sources();
    let mut found = Vec::new();
    for name in rtscope::measure::names() {
        for (_, f, code) in &s.files {
            let file = f.display().to_string();
            if file == format!("measure/{name}.rs") || file == "measure/registry.rs" || allowed(&file, name) {
                continue;
            }
            for (n, line) in matches_name(code, name) {
                found.push(format!("src/{file}:{n}: [{name}] {line}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a probe name matched outside its own file: ask measure::info(name) for the fact instead (or add a reason to PROBE_NAME_ALLOWED):\n{}",
        found.join("\n")
    );
    // Every allowance is still needed (a stale one would hide a new match).
    for (f, n, why) in PROBE_NAME_ALLOWED.iter().filter(|(_, n, _)| *n != "*") {
        let code = &s.files.iter().find(|(_, p, _)| p.display().to_string() == *f).unwrap_or_else(|| panic!("{f} is gone; drop its allowance")).2;
        assert!(!matches_name(code, n).is_empty(), "src/{f} no longer matches \"{n}\" ({why}); drop the allowance");
    }
}

/// The `model::ProbeOptions` field a probe-specific flag fills.
fn field_of(flag: &str) -> String {
    let f = flag.trim_start_matches("--").replace('-', "_");
    match f.as_str() {
        "noise_threshold" | "pi_burst" | "tm_interval" | "migrate_run" | "migrate_sleep" | "migrate_max_err" => format!("{f}_ns"),
        _ => f,
    }
}

#[test]
fn every_probe_flag_has_a_reader_and_every_read_flag_is_checked() {
    // The flags `rtscope run` has, from the binary.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rtscope")).args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let infos: Vec<_> = rtscope::measure::infos().collect();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/measure");
    let mut probe_flags = BTreeSet::new();
    for info in &infos {
        let own = code_of(&std::fs::read_to_string(dir.join(format!("{}.rs", info.name))).unwrap());
        for flag in info.flags {
            assert!(help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n")), "{}: flag {flag} is not a flag of `rtscope run`", info.name);
            probe_flags.insert(*flag);
        }
        // A settings field the probe's own file reads is a flag it lists.
        for flag in PROBE_FLAGS {
            let field = field_of(flag);
            let read = [".probe.", "settings."].iter().any(|p| own.contains(&format!("{p}{field}")))
                || (*flag == "--periods" && own.contains(".probe.periods_or("))
                || (*flag == "--iterations" && own.contains("select::max_events("));
            assert!(!read || info.flags.contains(flag), "{}: reads {flag} (`{field}`) but its INFO.flags does not list it", info.name);
        }
    }
    // Every probe-specific flag is read by some probe.
    for flag in PROBE_FLAGS {
        assert!(probe_flags.contains(flag), "{flag}: no probe lists it in its INFO.flags");
    }
    assert_eq!(field_of("--pi-burst"), "pi_burst_ns");
    assert_eq!(field_of("--msg-size"), "msg_size");
}

/// The probe-specific flags of `rtscope run` (src/cli/probe_opts.rs, bar the
/// SCHED_DEADLINE reservation, which is `--policy deadline`'s).
const PROBE_FLAGS: &[&str] = &[
    "--periods",
    "--msg-size",
    "--noise-threshold",
    "--noise-policy",
    "--iterations",
    "--back-to-back",
    "--sender-priority",
    "--pi-burst",
    "--tm-interval",
    "--chain",
    "--migrate-run",
    "--migrate-sleep",
    "--migrate-max-err",
];

#[test]
fn the_probe_name_scan_catches_what_it_looks_for() {
    assert_eq!(matches_name("if p == \"timer\" {", "timer").len(), 1);
    assert_eq!(matches_name("\"timer\" | \"periodic\" => 1,", "periodic").len(), 1);
    assert_eq!(matches_name("pub const X: &[&str] = &[\"sem\", \"pipe\"];", "pipe").len(), 1);
    assert_eq!(matches_name("plan.probe.wants(\"signal\", v)", "signal").len(), 1);
    assert!(matches_name("probe: \"timer\".into(),", "timer").is_empty());
    assert!(matches_name("if a || \"x\" == b {", "timer").is_empty());
    assert!(allowed("import/rtai.rs", "switch") && !allowed("report/term.rs", "timer"));
}

#[test]
fn probe_opts_lists_the_probe_flags() {
    // PROBE_FLAGS follows src/cli/probe_opts.rs: every field there is one of them or a deadline one.
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli/probe_opts.rs")).unwrap();
    let start = text.find("struct ProbeOpts {").unwrap();
    let body = &text[start..start + text[start..].find("\n}\n").unwrap()];
    for line in body.lines().map(str::trim).filter(|l| l.starts_with("pub") && l.contains(':')) {
        let field = line.trim_start_matches("pub(crate) ").trim_start_matches("pub ").split(':').next().unwrap();
        let flag = format!("--{}", field.replace('_', "-"));
        assert!(
            PROBE_FLAGS.contains(&flag.as_str()) || flag.starts_with("--dl-"),
            "ProbeOpts::{field}: add {flag} to PROBE_FLAGS (and to the INFO.flags of the probes that read it)"
        );
    }
}

/// The names a `pub` line of code declares: the item (`pub fn f`, `pub
/// struct S`, `pub mod m`, …), the field (`pub x: T`), or each name a
/// `pub use` re-exports. Empty for `pub(crate)`/`pub(super)` and other lines.
fn pub_names(line: &str) -> Vec<String> {
    let Some(rest) = line.trim_start().strip_prefix("pub ") else { return Vec::new() };
    let word = |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    if let Some(path) = rest.strip_prefix("use ") {
        let path = path.trim_end_matches(';');
        return match path.find('{') {
            Some(i) => path[i + 1..].trim_end_matches('}').split(',').map(|n| word(n.trim().rsplit("::").next().unwrap())).filter(|n| !n.is_empty()).collect(),
            None => vec![word(path.rsplit("::").next().unwrap())],
        };
    }
    let mut rest = rest;
    loop {
        let before = rest;
        for q in ["unsafe ", "async ", "extern \"C\" "] {
            rest = rest.strip_prefix(q).unwrap_or(rest);
        }
        if let Some(r) = rest.strip_prefix("const ").filter(|r| r.starts_with("fn ") || r.starts_with("unsafe ")) {
            rest = r;
        }
        if rest == before {
            break;
        }
    }
    for kw in ["fn ", "struct ", "enum ", "trait ", "type ", "mod ", "const ", "static "] {
        if let Some(r) = rest.strip_prefix(kw) {
            return vec![word(r)];
        }
    }
    let name = word(rest);
    if !name.is_empty() && rest[name.len()..].trim_start().starts_with(':') {
        return vec![name];
    }
    Vec::new()
}

fn has_word(text: &str, name: &str) -> bool {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(name).any(|(i, _)| !text[..i].chars().next_back().is_some_and(is_word) && !text[i + name.len()..].chars().next().is_some_and(is_word))
}

/// Issue 32: `pub(crate)` unless a test, an example or the binary needs
/// more. The result schema (src/model) is the library's public face and
/// stays `pub`; anywhere else a `pub` item or field must be named by
/// tests/, examples/ or src/main.rs.
/// Types a test never names but a `pub` function it calls takes or
/// returns (rustc's private_interfaces): pub for that reason only.
const PUB_FOR_A_SIGNATURE: &[&str] = &["BadInput", "Parsed", "ParseError", "ProbeCtx", "ThreadOutcome", "Quantile", "Live", "Target"];

#[test]
fn pub_only_where_a_test_example_or_main_needs_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut users = String::new();
    let mut files = Vec::new();
    rust_files(&root.join("tests"), &mut files);
    rust_files(&root.join("examples"), &mut files);
    files.push(root.join("src/main.rs"));
    for f in files {
        users.push_str(&std::fs::read_to_string(f).unwrap());
    }
    let mut wrong = Vec::new();
    let mut declared = BTreeSet::new();
    for (m, f, code) in &sources().files {
        if m == "model" || m == "main" {
            continue;
        }
        for (n, line) in code.lines().enumerate() {
            for name in pub_names(line) {
                declared.insert(name.clone());
                if !has_word(&users, &name) && !PUB_FOR_A_SIGNATURE.contains(&name.as_str()) {
                    wrong.push(format!("src/{}:{}: `{name}` is pub but no test, example or main names it: make it pub(crate)", f.display(), n + 1));
                }
            }
        }
    }
    for name in PUB_FOR_A_SIGNATURE {
        if !declared.contains(*name) {
            wrong.push(format!("PUB_FOR_A_SIGNATURE lists `{name}`, no longer pub: drop it from the list"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_pub_scan_catches_what_it_looks_for() {
    assert_eq!(pub_names("pub fn lines(run: &Run) -> String {"), ["lines"]);
    assert_eq!(pub_names("    pub unsafe fn f() {"), ["f"]);
    assert_eq!(pub_names("pub const fn g() {"), ["g"]);
    assert_eq!(pub_names("pub const FORMATS: &[Format] = &["), ["FORMATS"]);
    assert_eq!(pub_names("pub struct Nanos(pub u64);"), ["Nanos"]);
    assert_eq!(pub_names("    pub file_sha256: String,"), ["file_sha256"]);
    assert_eq!(pub_names("pub use build::{build_run, Context};"), ["build_run", "Context"]);
    assert_eq!(pub_names("pub use crate::units::Nanos;"), ["Nanos"]);
    assert!(pub_names("pub(crate) fn hidden() {").is_empty());
    assert!(pub_names("let pub_x = 1;").is_empty());
    assert!(has_word("use rtscope::import::{self, FORMATS};", "FORMATS") && !has_word("FORMATS_X", "FORMATS"));
}
