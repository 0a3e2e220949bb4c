//! `rtscope presets`: list the built-in presets, one line each (name and
//! what it measures, wrapped at the terminal's width); `rtscope run
//! --preset NAME --dry-run` shows one's plan.

use crate::error::EXIT_OK;
use crate::report::term;
use crate::scenario::presets;

pub(crate) fn cmd() -> anyhow::Result<u8> {
    for (name, _) in presets::PRESETS {
        let s = presets::get(name)?;
        let def = if *name == presets::DEFAULT { " (default of a bare `rtscope run`)" } else { "" };
        // The description wraps under itself at the width rule's width (80 piped).
        let text = format!("{}{def}", s.file.description.as_deref().unwrap_or(""));
        println!("{}", term::paragraph(&text, &format!("{name:<18} "), &" ".repeat(19), term::width(false)));
    }
    Ok(EXIT_OK)
}
