//! `rtscope show ID`: one stored run — where and when it ran, the plan, the
//! summary table, tags, and for imported runs where they came from and what
//! the source could not give (fidelity notes).

use crate::cli::store_opts::ShowArgs;
use crate::error::EXIT_OK;
use crate::report::term::summary_table;
use crate::store::{Location, Store};

pub fn cmd(args: &ShowArgs) -> anyhow::Result<u8> {
    let mut store = Store::open_existing(&Location::resolve(args.db.db.as_deref())?)?;
    let run = store.load(args.id)?;
    let tags = store.tags(args.id)?;
    let h = &run.host;
    println!("run #{}  {} → {}{}", args.id, run.started_at, run.finished_at, if run.interrupted { "  (interrupted)" } else { "" });
    println!("host:    {}  kernel {} ({})  realtime: {}  preempt: {}", h.hostname, h.kernel_release, h.kernel_version, if h.realtime { "yes" } else { "no" }, h.preempt_model);
    if !h.cpu_model.is_empty() {
        println!("cpu:     {}  online {:?}  clocksource {}", h.cpu_model, h.cpus_online, h.clocksource);
    }
    println!("probes:  {}   phases: {}", run.plan.probes.join(","), run.plan.phases.join(","));
    println!("tool:    {}", format!("{} {}", run.tool.name, run.tool.version).trim_end());
    if !run.command_line.is_empty() {
        println!("command: {}", run.command_line.join(" "));
    }
    println!("tags:    {}", if tags.is_empty() { "-".to_string() } else { tags.join(", ") });
    if let Some(i) = &run.imported_from {
        println!("imported from {} ({} via {}), system {:?}, sha256 {}", i.file, i.tool, i.format, i.system, i.file_sha256);
        for f in &run.fidelity {
            println!("  fidelity: {f}");
        }
    }
    print!("{}", summary_table(&run, args.ns));
    for w in &run.warnings {
        println!("warning: {w}");
    }
    Ok(EXIT_OK)
}
