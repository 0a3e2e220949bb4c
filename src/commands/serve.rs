//! `rtscope serve [--listen ADDR:PORT] [--db PATH|URL]`: the history as local
//! web pages (see `serve`). The address and the database are checked before
//! serving (exit 2 naming them); the URL is printed on stdout; Ctrl-C or
//! SIGTERM stops it after the requests in flight (exit 0).

use std::io::Write;

use crate::cli::store_opts::ServeArgs;
use crate::error::EXIT_OK;
use crate::store::{Location, Store};

pub(crate) fn cmd(args: &ServeArgs) -> anyhow::Result<u8> {
    let addr = crate::cli::parse_listen(&args.listen, "127.0.0.1:8080")?;
    let store = Store::open_existing(&Location::resolve(args.db.db.as_deref())?)?;
    let listener = crate::serve::bind(addr)?;
    let bound = listener.local_addr()?;
    let app = crate::serve::App::new(store);
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "rtscope serve: http://{bound}/ (history {}; read-only; Ctrl-C stops)", app.shown())?;
        out.flush()?;
    }
    crate::serve::run(app, listener)?;
    eprintln!("rtscope serve: stopped");
    Ok(EXIT_OK)
}
