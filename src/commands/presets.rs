//! `rtscope presets`: list the built-in presets, one line each (name and
//! what it measures); `rtscope run --preset NAME --dry-run` shows one's plan.

use crate::error::EXIT_OK;
use crate::scenario::presets;

pub(crate) fn cmd() -> anyhow::Result<u8> {
    for (name, _) in presets::PRESETS {
        let s = presets::get(name)?;
        let def = if *name == presets::DEFAULT { " (default of a bare `rtscope run`)" } else { "" };
        println!("{name:<18} {}{def}", s.file.description.as_deref().unwrap_or(""));
    }
    Ok(EXIT_OK)
}
