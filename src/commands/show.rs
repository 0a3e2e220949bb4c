//! `rtscope show ID`: one stored run — where and when it ran, the plan, the
//! summary table, tags, and for imported runs where they came from and what
//! the source could not give (fidelity notes).

use std::fmt::Write as _;

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
    writeln!(o, "run #{}  {} → {}{}", args.id, run.started_at, run.finished_at, if run.interrupted { "  (interrupted)" } else { "" })?;
    writeln!(o, "host:    {}  kernel {} ({})  realtime: {}  preempt: {}", h.hostname, h.kernel_release, h.kernel_version, if h.realtime { "yes" } else { "no" }, h.preempt_model)?;
    if !h.cpu_model.is_empty() {
        writeln!(o, "cpu:     {}  online {:?}  clocksource {}", h.cpu_model, h.cpus_online, h.clocksource)?;
    }
    writeln!(o, "probes:  {}   phases: {}", run.plan.probes.join(","), run.plan.phases.join(","))?;
    writeln!(o, "tool:    {}", format!("{} {}", run.tool.name, run.tool.version).trim_end())?;
    if !run.command_line.is_empty() {
        writeln!(o, "command: {}", run.command_line.join(" "))?;
    }
    writeln!(o, "tags:    {}", if tags.is_empty() { "-".to_string() } else { tags.join(", ") })?;
    if let Some(i) = &run.imported_from {
        writeln!(o, "imported from {} ({} via {}), system {:?}, sha256 {}", i.file, i.tool, i.format, i.system, i.file_sha256)?;
        for f in &run.fidelity {
            writeln!(o, "  fidelity: {f}")?;
        }
    }
    let end = crate::report::blocks::EndOfRun { unit: crate::report::blocks::Unit::of_ns_flag(args.ns), deadline: None, preset: None };
    o.push_str(&crate::report::term::render_blocks(&crate::report::blocks::end_of_run(&run, &end), false, None));
    for w in &run.warnings {
        writeln!(o, "warning: {w}")?;
    }
    print!("{}", crate::report::escape::terminal_safe(&o));
    Ok(EXIT_OK)
}
