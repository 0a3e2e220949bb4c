//! `rtscope compare A B [C ...]`: the systems side by side — percentiles,
//! max, mean ± σ, overruns, ratios to the first input, one sentence per
//! entry, a two-sample KS test, and with `--bins` the bin tables (default
//! 5 µs; always in JSON).
//! Exit 0, or 2 on bad input (nothing written).

use crate::analysis::summary::{analyse, Options};
use crate::cli::analysis_opts::{CompareArgs, CompareFormat};
use crate::commands::inputs;
use crate::error::EXIT_OK;
use crate::model::Nanos;
use crate::report::{self, blocks::Unit};

pub(crate) fn cmd(args: &CompareArgs) -> anyhow::Result<u8> {
    let runs = inputs::load_inputs(&args.inputs, args.common.db.db.as_deref())?;
    // Counted after resolution: one @TAG may name several runs.
    if runs.len() < 2 {
        return Err(crate::error::BadInput(format!(
            "compare needs at least two RESULT inputs; {} resolved to {} (give two or more files, run ids, or an @TAG with several runs)",
            args.inputs.join(" "),
            runs.len()
        ))
        .into());
    }
    let c = &args.common;
    inputs::check_names(&c.names, runs.len())?;
    let opts = Options { deadline: None, bin_width: Nanos(c.bin_width()), pwcet: false, pairing: c.pairing() };
    let a = analyse(&runs, &c.names, &opts)?;
    let unit = Unit::of_ns_flag(c.ns);
    let blocks = report::blocks::compare_blocks(&a, unit, c.bins.is_some());
    let bytes = match args.format {
        CompareFormat::Term => {
            report::term::render_blocks(&blocks, inputs::colour(c.color, c.output.is_some()), report::term::width(c.output.is_some())).into_bytes()
        }
        CompareFormat::Md => report::md::render_blocks("rtscope compare", &blocks).into_bytes(),
        CompareFormat::Json => {
            let mut s = serde_json::to_string_pretty(&a.comparison)?;
            s.push('\n');
            s.into_bytes()
        }
    };
    match args.format {
        CompareFormat::Json => inputs::emit(c.output.as_deref(), &bytes)?,
        _ => inputs::emit_text(c.output.as_deref(), &String::from_utf8_lossy(&bytes))?,
    }
    Ok(EXIT_OK)
}
