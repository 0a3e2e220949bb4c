//! `rtscope show ID`: one stored run — where and when it ran, the plan, the
//! summary table, tags, and for imported runs where they came from and what
//! the source could not give (fidelity notes).

use crate::cli::store_opts::ShowArgs;
use crate::error::EXIT_OK;
use crate::store::{Location, Store};

pub(crate) fn cmd(args: &ShowArgs) -> anyhow::Result<u8> {
    let mut store = Store::open_existing(&Location::resolve(args.db.db.as_deref())?)?;
    let run = store.load(args.id)?;
    let tags = store.tags(args.id)?;
    let h = &run.host;
    // Every string here comes from the stored run: printed through
    // `report::escape` so a hostile host name cannot act on the terminal.
    let mut o = String::new();
    // Each line one paragraph of the width rule, its further lines under its text.
    let mut line = |label: &str, text: String| o.push_str(&crate::report::term::para(label, &crate::report::escape::terminal_safe(&text)));
    line("", format!("run #{}  {} → {}{}", args.id, run.started_at, run.finished_at, if run.interrupted { "  (interrupted)" } else { "" }));
    // A target that is not Linux is a system named by its OS and release
    // ("NuttX unversioned"), an RTOS real-time by kind; PREEMPT_RT's yes/no
    // is Linux's word (as the report's header says it).
    let other = run.agent.as_ref().map(|a| a.os.as_str()).filter(|os| !os.is_empty() && *os != "Linux");
    let (kind, rt) = match other {
        Some(os) => ("system", if crate::model::is_rtos(os) { "RTOS" } else { "-" }),
        None => ("kernel", if h.realtime { "yes" } else { "no" }),
    };
    line(
        "host:    ",
        format!(
            "{}  {kind} {} ({})  realtime: {rt}  preempt: {}",
            if h.hostname.is_empty() { "-" } else { &h.hostname },
            h.kernel_release,
            h.kernel_version,
            h.preempt_model
        ),
    );
    if !h.cpu_model.is_empty() {
        line("cpu:     ", format!("{}  online {:?}  clocksource {}", h.cpu_model, h.cpus_online, h.clocksource));
    }
    line("probes:  ", format!("{}   phases: {}", run.plan.probes.join(","), run.plan.phases.join(",")));
    line("tool:    ", format!("{} {}", run.tool.name, run.tool.version).trim_end().to_string());
    if !run.command_line.is_empty() {
        line("command: ", run.command_line.join(" "));
    }
    // Whole here (`history` shows a count or the first + N).
    line("tags:    ", if tags.is_empty() { "-".to_string() } else { tags.join(", ") });
    if let Some(i) = &run.imported_from {
        line("", format!("imported from {} ({} via {}), system {:?}, sha256 {}", i.file, i.tool, i.format, i.system, i.file_sha256));
        for f in &run.fidelity {
            line("  fidelity: ", f.clone());
        }
    }
    let end = crate::report::blocks::EndOfRun { unit: crate::report::blocks::Unit::of_ns_flag(args.ns), deadline: None, preset: None };
    o.push_str(&crate::report::term::render_blocks(&crate::report::blocks::end_of_run(&run, &end), false, crate::report::term::width(false)));
    for w in &run.warnings {
        o.push_str(&crate::report::term::para("warning: ", &crate::report::escape::terminal_safe(w)));
    }
    print!("{}", crate::report::escape::terminal_safe(&o));
    Ok(EXIT_OK)
}
