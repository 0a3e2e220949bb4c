//! `rtscope report RESULT... --format term|md|json|csv|html [-o FILE]
//! [--plots DIR]`: analyse results and render them. Inputs are read and
//! checked first, so bad input exits 2 having written nothing; outputs are
//! written atomically.

use crate::analysis::summary::{analyse, Options};
use crate::cli::analysis_opts::{ReportArgs, ReportFormat};
use crate::commands::inputs;
use crate::error::{BadInput, EXIT_OK};
use crate::model::Nanos;
use crate::report::{self, blocks::Unit, plots::Plot, Renderer};

pub(crate) fn cmd(args: &ReportArgs) -> anyhow::Result<u8> {
    let runs = inputs::load_inputs(&args.inputs, args.common.db.db.as_deref())?;
    let c = &args.common;
    inputs::check_names(&c.names, runs.len())?;
    if let Some(dir) = &args.plots {
        if dir.exists() && !dir.is_dir() {
            return Err(BadInput(format!("--plots {}: exists and is not a directory; give a directory for the SVG files", dir.display())).into());
        }
    }
    let opts = Options { deadline: args.deadline.map(Nanos), bin_width: Nanos(c.bin_width()), pwcet: !args.no_pwcet, pairing: c.pairing() };
    let a = analyse(&runs, &c.names, &opts)?;
    let unit = Unit::of_ns_flag(c.ns);
    let need_plots = args.format == ReportFormat::Html || args.plots.is_some();
    let plots: Vec<Plot> = if need_plots { report::plots::plots(&a) } else { Vec::new() };
    let colour = inputs::colour(c.color, c.output.is_some());
    let width = report::term::width(c.output.is_some());
    let renderer: Box<dyn Renderer + '_> = match args.format {
        ReportFormat::Term => Box::new(report::term::Term { unit, bins: c.bins.is_some(), colour, width }),
        ReportFormat::Md => Box::new(report::md::Markdown { unit, bins: c.bins.is_some() }),
        ReportFormat::Json => Box::new(report::json::Json),
        ReportFormat::Csv => Box::new(report::csv::Csv),
        ReportFormat::Html => Box::new(report::html::Html { plots: &plots, unit }),
    };
    let mut bytes = renderer.render(&a)?;
    // A monitor run's windows are in the history, not the file: a summary
    // of them follows the text reports when the history holds them.
    if matches!(args.format, ReportFormat::Term | ReportFormat::Md) && runs.iter().any(|(_, r)| r.monitor.is_some()) {
        if let Some(mut store) = crate::store::Store::open_if_exists(&crate::store::Location::resolve(c.db.db.as_deref())?)? {
            for (label, run) in &runs {
                let Some(m) = &run.monitor else { continue };
                let w = store.windows(&m.id)?;
                if w.is_empty() {
                    continue;
                }
                let blocks = report::blocks::monitor_windows(label, m, &w, unit);
                let text = match args.format {
                    ReportFormat::Md => report::md::render_blocks("", &blocks),
                    _ => report::term::render_blocks(&blocks, colour, width),
                };
                bytes.extend_from_slice(text.as_bytes());
            }
        }
    }
    match args.format {
        ReportFormat::Term | ReportFormat::Md => inputs::emit_text(c.output.as_deref(), &String::from_utf8_lossy(&bytes))?,
        _ => inputs::emit(c.output.as_deref(), &bytes)?,
    }
    if let Some(dir) = &args.plots {
        for p in &plots {
            let path = dir.join(format!("{}.svg", p.id));
            crate::store::json::write_atomic(&path, |w| Ok(w.write_all(p.svg.as_bytes())?))?;
        }
        eprintln!("{} plots written to {}", plots.len(), dir.display());
    }
    Ok(EXIT_OK)
}
