//! The one HTTP stack of rtscope's servers (`serve`, and `monitor --listen`'s
//! `/metrics`): an axum router behind an accept loop that hostile or
//! careless clients cannot take down.
//!
//! `axum::serve` keeps a connection as long as the client likes and stops
//! accepting while the process is out of file descriptors; a few hundred idle
//! or half-sent connections then make the server unavailable (issue 36:
//! 1 140 idle connections under `ulimit -n 1024`; tiny_http, which `monitor`
//! used, panicked on `Too many open files` and its port stayed dead). So:
//!
//! - **Idle connections are closed.** A connection with no request in flight
//!   for [`Limits::idle`] — connected and silent, half-sent headers
//!   (slowloris), or kept alive after its last answer — is closed by a
//!   janitor that looks once a second. A request being answered is never cut.
//! - **A bounded number of connections.** At most [`Limits::max_connections`]
//!   (from the file-descriptor limit, leaving room for the database and the
//!   files a request reads). A new connection at the limit, or an accept that
//!   fails for want of descriptors, closes the connection idle the longest: a
//!   client that asks something is always served before one that waits.
//! - **Accept errors never end the loop**: it backs off 10 ms and goes on.
//!
//! Both servers stay what rule 9 of ARCHITECTURE.md says: loopback by
//! default (their `--listen`), GET and HEAD only (their routers' guards).

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::Notify;
use tower::ServiceExt;

/// How long and how many.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// A connection with no request in flight for this long is closed.
    pub(crate) idle: Duration,
    /// Connections open at once; the oldest idle one makes room.
    pub(crate) max_connections: usize,
}

impl Limits {
    /// 10 s idle; connections: the file-descriptor limit (raised to its hard
    /// limit first) less 64 for the database, the listener and what a request
    /// opens, at least 16, at most 4 096.
    pub(crate) fn from_fd_limit() -> Limits {
        let fds = crate::sys::resource::raise_nofile();
        Limits { idle: Duration::from_secs(10), max_connections: fds.saturating_sub(64).clamp(16, 4096) }
    }
}

/// One open connection as the accept loop and the janitor see it.
struct Conn {
    /// Requests being answered on it (HTTP/1: 0 or 1).
    busy: AtomicUsize,
    /// Milliseconds since the server started, at accept or at the end of
    /// the last request.
    last_ms: AtomicU64,
    close: Notify,
}

struct Table {
    start: Instant,
    conns: Mutex<VecDeque<Arc<Conn>>>,
}

impl Table {
    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// Close the connection idle the longest; false when every one is busy.
    fn evict_oldest_idle(&self) -> bool {
        let mut conns = self.conns.lock().unwrap_or_else(|e| e.into_inner());
        let oldest = conns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.busy.load(Ordering::Acquire) == 0)
            .min_by_key(|(_, c)| c.last_ms.load(Ordering::Relaxed))
            .map(|(i, _)| i);
        match oldest.and_then(|i| conns.remove(i)) {
            Some(c) => {
                c.close.notify_one();
                true
            }
            None => false,
        }
    }

    /// Close every connection idle for longer than `idle`.
    fn close_idle(&self, idle: Duration) {
        let now = self.now_ms();
        let limit = idle.as_millis() as u64;
        let mut conns = self.conns.lock().unwrap_or_else(|e| e.into_inner());
        conns.retain(|c| {
            let stale = c.busy.load(Ordering::Acquire) == 0 && now.saturating_sub(c.last_ms.load(Ordering::Relaxed)) >= limit;
            if stale {
                c.close.notify_one();
            }
            !stale
        });
    }

    fn remove(&self, conn: &Arc<Conn>) {
        let mut conns = self.conns.lock().unwrap_or_else(|e| e.into_inner());
        conns.retain(|c| !Arc::ptr_eq(c, conn));
    }
}

/// Serve `router` on `listener` until `shutdown` resolves; requests in flight
/// then finish (each connection closes after its current answer).
pub(crate) async fn serve(listener: tokio::net::TcpListener, router: Router, limits: Limits, shutdown: impl Future<Output = ()>) {
    let table = Arc::new(Table { start: Instant::now(), conns: Mutex::new(VecDeque::new()) });
    let stopping = Arc::new(Notify::new());
    let janitor = {
        let table = table.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                table.close_idle(limits.idle);
            }
        })
    };
    let mut tasks = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            _ = &mut shutdown => break,
            a = listener.accept() => a,
            // Reap finished connection tasks as they end.
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
        };
        let stream = match accepted {
            Ok((s, _)) => s,
            Err(_) => {
                // EMFILE, ENFILE, ECONNABORTED…: make room if we can, back
                // off, go on. Never end the loop: the port must stay up.
                table.evict_oldest_idle();
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let over = table.conns.lock().map(|c| c.len()).unwrap_or(0) >= limits.max_connections;
        if over && !table.evict_oldest_idle() {
            // Every connection is busy answering: this one waits its turn
            // in the kernel's backlog no longer; it is closed now.
            drop(stream);
            continue;
        }
        let conn = Arc::new(Conn { busy: AtomicUsize::new(0), last_ms: AtomicU64::new(table.now_ms()), close: Notify::new() });
        table.conns.lock().unwrap_or_else(|e| e.into_inner()).push_back(conn.clone());
        tasks.spawn(connection(stream, conn, router.clone(), table.clone(), stopping.clone(), limits));
    }
    janitor.abort();
    drop(listener);
    drain(tasks, &stopping).await;
}

/// One connection's life: answer its requests (marking it busy while one is
/// answered, so the janitor never cuts it), until the client leaves, the
/// janitor or an eviction closes it, or the server stops (then the answer in
/// flight finishes first).
async fn connection(stream: tokio::net::TcpStream, conn: Arc<Conn>, router: Router, table: Arc<Table>, stopping: Arc<Notify>, limits: Limits) {
    let svc = {
        let (conn, table) = (conn.clone(), table.clone());
        hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            conn.busy.fetch_add(1, Ordering::AcqRel);
            let (conn, table, answer) = (conn.clone(), table.clone(), router.clone().oneshot(req));
            async move {
                let r = answer.await;
                conn.last_ms.store(table.now_ms(), Ordering::Relaxed);
                conn.busy.fetch_sub(1, Ordering::AcqRel);
                r
            }
        })
    };
    let http = hyper::server::conn::http1::Builder::new().timer(TokioTimer::new()).header_read_timeout(limits.idle).serve_connection(TokioIo::new(stream), svc);
    tokio::pin!(http);
    tokio::select! {
        _ = http.as_mut() => {}
        _ = conn.close.notified() => {}
        _ = stopping.notified() => {
            http.as_mut().graceful_shutdown();
            let _ = http.as_mut().await;
        }
    }
    table.remove(&conn);
}

/// At shutdown: answers in flight finish (up to 5 s); idle connections
/// close now.
async fn drain(mut tasks: tokio::task::JoinSet<()>, stopping: &Notify) {
    stopping.notify_waiters();
    let deadline = tokio::time::sleep(Duration::from_secs(5));
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            _ = &mut deadline => break,
            next = tasks.join_next() => if next.is_none() { break },
        }
    }
    tasks.abort_all();
}
