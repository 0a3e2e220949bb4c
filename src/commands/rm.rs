//! `rtscope rm ID...`: delete stored runs with their results, buckets and
//! tags. Every id is checked first, so a typo deletes nothing.

use crate::cli::store_opts::RmArgs;
use crate::error::{BadInput, EXIT_OK};
use crate::store::{Location, Store};

pub(crate) fn cmd(args: &RmArgs) -> anyhow::Result<u8> {
    let mut store = Store::open_existing_rw(&Location::resolve(args.db.db.as_deref())?)?;
    for &id in &args.ids {
        if !store.exists(id)? {
            return Err(BadInput(format!("no run with id {id} in {}; nothing was deleted. `rtscope history` lists the ids", store.shown())).into());
        }
    }
    for &id in &args.ids {
        store.remove(id)?;
        println!("run #{id} deleted");
    }
    Ok(EXIT_OK)
}
