//! `rtscope serve`: a read-only web server over the history (SQLite or
//! PostgreSQL), so a team can browse, compare and drill into its runs.
//!
//! Pages are rendered on the server from the same report blocks and plots as
//! `rtscope report` (`pages`): no external asset, no CDN, no script. Routes:
//! `/` (runs list: filters, sort, pagination, checkboxes to compare),
//! `/runs/{id}` (the run's report), `/runs/{id}/json` (the stored JSON as a
//! download: `rtscope export`'s bytes), `/compare?runs=1,2,@tag`, and the JSON
//! API `/api/runs`, `/api/runs/{id}`, `/api/runs/{id}/windows` (docs/serve.md).
//!
//! Rules, each with its reason:
//! - Read-only: every method but GET and HEAD is 405 on every path, before
//!   routing; nothing writes the database.
//! - Paths never reach the filesystem: every route is a fixed name or a run
//!   id parsed as an integer; anything else is 404.
//! - The store is synchronous (rusqlite, the `postgres` client): each request
//!   runs on tokio's blocking pool with the one connection behind a mutex, so
//!   the async runtime never blocks.
//! - Every answer says how long the server took (`Server-Timing: app;dur=MS`),
//!   which the serve bench reads.
//! - Idle and half-sent connections are closed, and connections are bounded
//!   (`http`): hostile clients cannot make the server unavailable.

pub mod http;
pub mod metrics;
pub mod pages;
pub mod query;

use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderValue, Method, Request, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::error::BadInput;
use crate::store::Store;

/// What a handler answers, built on the blocking pool.
pub struct Reply {
    pub status: StatusCode,
    pub content_type: &'static str,
    pub body: String,
    /// `Content-Disposition` (downloads).
    pub disposition: Option<String>,
}

impl Reply {
    pub fn html(body: String) -> Reply {
        Reply { status: StatusCode::OK, content_type: "text/html; charset=utf-8", body, disposition: None }
    }
    pub fn json(body: String) -> Reply {
        Reply { status: StatusCode::OK, content_type: "application/json", body, disposition: None }
    }
    /// `{"error": msg}` with `status`: how the API answers what it cannot.
    pub fn json_error(status: StatusCode, msg: &str) -> Reply {
        Reply::json(serde_json::json!({ "error": msg }).to_string()).status(status)
    }
    pub fn status(mut self, s: StatusCode) -> Reply {
        self.status = s;
        self
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let mut r = (self.status, [(header::CONTENT_TYPE, self.content_type)], self.body).into_response();
        if let Some(d) = self.disposition.and_then(|d| HeaderValue::from_str(&d).ok()) {
            r.headers_mut().insert(header::CONTENT_DISPOSITION, d);
        }
        r
    }
}

/// The server's state: the history, and how pages name it.
pub struct App {
    store: Mutex<Store>,
    shown: String,
}

impl App {
    pub fn new(store: Store) -> App {
        let shown = store.shown();
        App { store: Mutex::new(store), shown }
    }
    /// The store, even after a handler panicked while holding it (every
    /// request is a read: no state to repair).
    /// How pages name the history (a URL without its password).
    pub fn shown(&self) -> &str {
        &self.shown
    }
    /// A PostgreSQL connection that broke (the request that saw it break
    /// failed) is opened again here, before the next request uses it.
    fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        let mut s = self.store.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = s.reconnect_if_closed() {
            eprintln!("rtscope serve: reconnecting to {}: {e:#}", self.shown);
        }
        s
    }
}

/// Bind `addr` now, so a bad or busy address is exit 2 before serving.
pub fn bind(addr: SocketAddr) -> Result<TcpListener, BadInput> {
    let l = TcpListener::bind(addr).map_err(|e| {
        BadInput(format!("--listen {addr}: cannot listen there: {e}; pick another port (e.g. --listen 127.0.0.1:8081) or stop what holds it"))
    })?;
    l.set_nonblocking(true).map_err(|e| BadInput(format!("--listen {addr}: {e}")))?;
    Ok(l)
}

/// Serve until SIGINT or SIGTERM, then finish the requests in flight and
/// return.
pub fn run(app: App, listener: TcpListener) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build()?;
    let app = Arc::new(app);
    let served: anyhow::Result<()> = rt.block_on(async {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        http::serve(listener, router(app.clone()), http::Limits::from_fd_limit(), stopped()).await;
        Ok(())
    });
    // The store is dropped outside the runtime: the synchronous PostgreSQL
    // client owns a runtime of its own, which may not be dropped inside ours.
    drop(rt);
    drop(app);
    served
}

/// Resolves at the first SIGINT or SIGTERM.
async fn stopped() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) else {
        // No signal handling: serve until killed.
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
}

/// Every route (GET, and HEAD by axum's GET routing), the 404 fallback and
/// the guard in front of them.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(list))
        .route("/runs/{id}", get(run_page))
        .route("/runs/{id}/json", get(run_json))
        .route("/compare", get(compare))
        .route("/api/runs", get(api_runs))
        .route("/api/runs/{id}", get(api_run))
        .route("/api/runs/{id}/windows", get(api_windows))
        .fallback(not_found)
        .with_state(app)
        .layer(middleware::from_fn(guard))
}

/// 405 for anything but GET and HEAD (on every path: nothing here changes
/// the history), and the headers every answer carries.
async fn guard(req: Request<Body>, next: Next) -> Response {
    let t = Instant::now();
    let mut r = if req.method() == Method::GET || req.method() == Method::HEAD {
        next.run(req).await
    } else {
        let mut r = Reply::html(pages::error_page(
            "Method not allowed",
            &format!("{} is not allowed: rtscope serve is read-only (GET and HEAD only). Change the history with the rtscope commands (tag, rm, import).", req.method()),
        ))
        .status(StatusCode::METHOD_NOT_ALLOWED)
        .into_response();
        r.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        r
    };
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&format!("app;dur={:.3}", t.elapsed().as_secs_f64() * 1e3)) {
        h.insert("server-timing", v);
    }
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // The pages are self-contained: inline styles and inline SVG, nothing else.
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'; img-src data:"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// Run `f` with the app on the blocking pool.
async fn blocking(app: Arc<App>, f: impl FnOnce(&App) -> Reply + Send + 'static) -> Response {
    match tokio::task::spawn_blocking(move || f(&app)).await {
        Ok(r) => r.into_response(),
        Err(e) => Reply::html(pages::error_page("Internal error", &format!("the request failed: {e}")))
            .status(StatusCode::INTERNAL_SERVER_ERROR)
            .into_response(),
    }
}

/// A store error as an answer: bad input (no such run) is 404, the rest 500.
fn failed(e: anyhow::Error) -> Reply {
    match e.downcast_ref::<BadInput>() {
        Some(b) => Reply::html(pages::error_page("Not found", &b.0)).status(StatusCode::NOT_FOUND),
        None => Reply::html(pages::error_page("The history could not be read", &format!("{e:#}"))).status(StatusCode::INTERNAL_SERVER_ERROR),
    }
}

fn failed_json(e: anyhow::Error) -> Reply {
    match e.downcast_ref::<BadInput>() {
        Some(b) => Reply::json_error(StatusCode::NOT_FOUND, &b.0),
        None => Reply::json_error(StatusCode::INTERNAL_SERVER_ERROR, &format!("{e:#}")),
    }
}

fn bad_request(msg: String) -> Reply {
    Reply::html(pages::error_page("Bad request", &msg)).status(StatusCode::BAD_REQUEST)
}

/// A run id from the path, or 404 naming what was given: a page (`api`
/// false) or the API's JSON error.
fn run_id(raw: &str, api: bool) -> Result<i64, Reply> {
    raw.parse::<i64>().ok().filter(|&i| i > 0).ok_or_else(|| {
        let m = format!("'{raw}' is not a run id: run ids are whole numbers ≥ 1 (the list at / shows them)");
        if api {
            Reply::json_error(StatusCode::NOT_FOUND, &m)
        } else {
            Reply::html(pages::error_page("Not found", &m)).status(StatusCode::NOT_FOUND)
        }
    })
}

async fn not_found(req: Request<Body>) -> Response {
    Reply::html(pages::error_page("Not found", &format!("nothing at {}: the pages are /, /runs/ID, /compare?runs=ID,ID and /api/runs", req.uri().path())))
        .status(StatusCode::NOT_FOUND)
        .into_response()
}

async fn list(State(app): State<Arc<App>>, RawQuery(q): RawQuery) -> Response {
    blocking(app, move |app| {
        let q = match query::list_query(q.as_deref().unwrap_or("")) {
            Ok(q) => q,
            Err(m) => return bad_request(m),
        };
        let mut store = app.store();
        let page = match store.page(&q.page) {
            Ok(p) => p,
            Err(e) => return failed(e),
        };
        let facets = match store.facets() {
            Ok(f) => f,
            Err(e) => return failed(e),
        };
        Reply::html(pages::list_page(&app.shown, &q, &page, &facets))
    })
    .await
}

async fn run_page(State(app): State<Arc<App>>, Path(raw): Path<String>, RawQuery(q): RawQuery) -> Response {
    blocking(app, move |app| {
        let id = match run_id(&raw, false) {
            Ok(i) => i,
            Err(r) => return r,
        };
        let deadline = match query::run_query(q.as_deref().unwrap_or("")) {
            Ok(d) => d,
            Err(m) => return bad_request(m),
        };
        let mut store = app.store();
        let loaded = store.load(id).and_then(|run| {
            let tags = store.tags(id)?;
            let windows = match &run.monitor {
                Some(m) => store.windows(&m.id)?,
                None => Vec::new(),
            };
            Ok((run, tags, windows))
        });
        drop(store);
        match loaded {
            Ok((run, tags, windows)) => match pages::run_page(&app.shown, id, run, &tags, &windows, deadline) {
                Ok(html) => Reply::html(html),
                Err(e) => failed(e),
            },
            Err(e) => failed(e),
        }
    })
    .await
}

async fn run_json(State(app): State<Arc<App>>, Path(raw): Path<String>) -> Response {
    blocking(app, move |app| {
        let id = match run_id(&raw, false) {
            Ok(i) => i,
            Err(r) => return r,
        };
        match app.store().json_text(id) {
            Ok(text) => Reply { disposition: Some(format!("attachment; filename=\"rtscope-run-{id}.json\"")), ..Reply::json(text) },
            Err(e) => failed(e),
        }
    })
    .await
}

async fn compare(State(app): State<Arc<App>>, RawQuery(q): RawQuery) -> Response {
    blocking(app, move |app| {
        let cq = match query::compare_query(q.as_deref().unwrap_or("")) {
            Ok(v) => v,
            Err(m) => return bad_request(m),
        };
        let inputs = &cq.runs;
        let mut runs = Vec::new();
        {
            let mut store = app.store();
            for input in inputs {
                let ids = match input {
                    query::Input::Id(id) => vec![*id],
                    query::Input::Tag(t) => match store.ids_with_tag(t) {
                        Ok(ids) if ids.is_empty() => return bad_request(format!("no run has the tag @{t}; the list at / shows the tags")),
                        Ok(ids) => ids,
                        Err(e) => return failed(e),
                    },
                };
                for id in ids {
                    match store.load(id) {
                        Ok(r) => runs.push((id, r)),
                        Err(e) => return failed(e),
                    }
                }
            }
        }
        if runs.len() < 2 {
            return bad_request(format!(
                "a comparison needs two or more runs; {} given. Tick two or more runs in the list at / and press Compare, or ask for /compare?runs=1,2",
                runs.len()
            ));
        }
        if runs.len() > query::MAX_COMPARED {
            return bad_request(format!("{} runs asked for; a comparison shows at most {} side by side", runs.len(), query::MAX_COMPARED));
        }
        match pages::compare_page(&app.shown, runs, &cq) {
            Ok(html) => Reply::html(html),
            Err(e) => bad_request(format!("{e:#}")),
        }
    })
    .await
}

async fn api_runs(State(app): State<Arc<App>>, RawQuery(q): RawQuery) -> Response {
    blocking(app, move |app| {
        let q = match query::list_query(q.as_deref().unwrap_or("")) {
            Ok(q) => q,
            Err(m) => return Reply::json_error(StatusCode::BAD_REQUEST, &m),
        };
        match app.store().page(&q.page) {
            Ok(p) => Reply::json(serde_json::json!({ "total": p.total, "offset": p.offset, "limit": q.page.limit, "runs": p.runs }).to_string()),
            Err(e) => failed_json(e),
        }
    })
    .await
}

async fn api_run(State(app): State<Arc<App>>, Path(raw): Path<String>) -> Response {
    blocking(app, move |app| match run_id(&raw, true) {
        Err(r) => r,
        Ok(id) => match app.store().json_text(id) {
            Ok(text) => Reply::json(text),
            Err(e) => failed_json(e),
        },
    })
    .await
}

async fn api_windows(State(app): State<Arc<App>>, Path(raw): Path<String>) -> Response {
    blocking(app, move |app| {
        let id = match run_id(&raw, true) {
            Ok(i) => i,
            Err(r) => return r,
        };
        let mut store = app.store();
        let run = match store.load(id) {
            Ok(r) => r,
            Err(e) => return failed_json(e),
        };
        let Some(m) = &run.monitor else {
            return Reply::json_error(StatusCode::NOT_FOUND, &format!("run #{id} is not a monitor run: it has no windows"));
        };
        match store.windows(&m.id) {
            Ok(w) => Reply::json(serde_json::to_string(&w).unwrap_or_else(|_| "[]".into())),
            Err(e) => failed_json(e),
        }
    })
    .await
}
