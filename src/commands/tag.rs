//! `rtscope tag ID NAME [--remove]`: label stored runs ("baseline",
//! "board-a/rt-6.6") so `history --tag` and `compare @NAME` can find them.

use crate::cli::store_opts::TagArgs;
use crate::error::{BadInput, EXIT_OK};
use crate::store::{Location, Store};

/// A tag is used as `@NAME` on command lines, so it must survive shells and
/// not look like a flag or a file: letters, digits and `. _ - + : /`.
pub(crate) fn check_tag(name: &str) -> Result<(), BadInput> {
    let ok_char = |c: char| c.is_alphanumeric() || ".-_+:/".contains(c);
    if name.is_empty() || name.starts_with('@') || name.starts_with('-') || !name.chars().all(ok_char) || name.chars().count() > 100 {
        return Err(BadInput(format!("tag {name:?}: a tag is 1-100 letters, digits and . _ - + : / characters, not starting with @ or -")));
    }
    Ok(())
}

pub(crate) fn cmd(args: &TagArgs) -> anyhow::Result<u8> {
    check_tag(&args.name)?;
    let mut store = Store::open_existing_rw(&Location::resolve(args.db.db.as_deref())?)?;
    if args.remove {
        if store.untag(args.id, &args.name)? {
            println!("run #{}: tag {} removed", args.id, args.name);
        } else {
            println!("run #{} has no tag {}", args.id, args.name);
        }
    } else if store.tag(args.id, &args.name)? {
        println!("run #{}: tagged {}", args.id, args.name);
    } else {
        println!("run #{} already has the tag {}", args.id, args.name);
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::check_tag;

    #[test]
    fn tags_are_shell_safe_words() {
        assert!(check_tag("baseline").is_ok());
        assert!(check_tag("board-a/rt-6.6").is_ok());
        assert!(check_tag("").is_err());
        assert!(check_tag("@x").is_err());
        assert!(check_tag("-x").is_err());
        assert!(check_tag("a b").is_err());
        assert!(check_tag("a;b").is_err());
    }
}
