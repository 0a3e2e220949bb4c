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

pub(crate) mod http;
pub(crate) mod metrics;
pub(crate) mod pages;
pub(crate) mod query;
pub(crate) mod reply;

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

pub(crate) use reply::{Face, Fail, Reply};

/// The server's state: the history, and how pages name it.
pub(crate) struct App {
    store: Mutex<Store>,
    shown: String,
}

impl App {
    pub(crate) fn new(store: Store) -> App {
        let shown = store.shown();
        App { store: Mutex::new(store), shown }
    }
    /// The store, even after a handler panicked while holding it (every
    /// request is a read: no state to repair).
    /// How pages name the history (a URL without its password).
    pub(crate) fn shown(&self) -> &str {
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
pub(crate) fn bind(addr: SocketAddr) -> Result<TcpListener, BadInput> {
    let l = TcpListener::bind(addr)
        .map_err(|e| BadInput(format!("--listen {addr}: cannot listen there: {e}; pick another port (e.g. --listen 127.0.0.1:8081) or stop what holds it")))?;
    l.set_nonblocking(true).map_err(|e| BadInput(format!("--listen {addr}: {e}")))?;
    Ok(l)
}

/// Serve until SIGINT or SIGTERM, then finish the requests in flight and
/// return.
pub(crate) fn run(app: App, listener: TcpListener) -> anyhow::Result<()> {
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
pub(crate) fn router(app: Arc<App>) -> Router {
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
            &format!(
                "{} is not allowed: rtscope serve is read-only (GET and HEAD only). Change the history with the rtscope commands (tag, rm, import).",
                req.method()
            ),
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

/// Run `f` with the app on the blocking pool; a [`Fail`] becomes the
/// answer for `face`.
async fn blocking(app: Arc<App>, face: Face, f: impl FnOnce(&App) -> Result<Reply, Fail> + Send + 'static) -> Response {
    match tokio::task::spawn_blocking(move || f(&app)).await {
        Ok(r) => r.unwrap_or_else(|fail| fail.reply(face)).into_response(),
        Err(e) => {
            Reply::html(pages::error_page("Internal error", &format!("the request failed: {e}"))).status(StatusCode::INTERNAL_SERVER_ERROR).into_response()
        }
    }
}

/// A run id from the path, or 404 naming what was given.
fn run_id(raw: &str) -> Result<i64, Fail> {
    raw.parse::<i64>()
        .ok()
        .filter(|&i| i > 0)
        .ok_or_else(|| Fail::NotFound(format!("'{raw}' is not a run id: run ids are whole numbers ≥ 1 (the list at / shows them)")))
}

async fn not_found(req: Request<Body>) -> Response {
    Reply::html(pages::error_page("Not found", &format!("nothing at {}: the pages are /, /runs/ID, /compare?runs=ID,ID and /api/runs", req.uri().path())))
        .status(StatusCode::NOT_FOUND)
        .into_response()
}

async fn list(State(app): State<Arc<App>>, RawQuery(q): RawQuery) -> Response {
    blocking(app, Face::Page, move |app| {
        let q = query::list_query(q.as_deref().unwrap_or("")).map_err(Fail::BadRequest)?;
        let mut store = app.store();
        let page = store.page(&q.page)?;
        let facets = store.facets()?;
        Ok(Reply::html(pages::list_page(&app.shown, &q, &page, &facets)))
    })
    .await
}

async fn run_page(State(app): State<Arc<App>>, Path(raw): Path<String>, RawQuery(q): RawQuery) -> Response {
    blocking(app, Face::Page, move |app| {
        let id = run_id(&raw)?;
        let deadline = query::run_query(q.as_deref().unwrap_or("")).map_err(Fail::BadRequest)?;
        let (run, tags, windows) = {
            let mut store = app.store();
            let run = store.load(id)?;
            let tags = store.tags(id)?;
            let windows = match &run.monitor {
                Some(m) => store.windows(&m.id)?,
                None => Vec::new(),
            };
            (run, tags, windows)
        };
        Ok(Reply::html(pages::run_page(&app.shown, id, run, &tags, &windows, deadline)?))
    })
    .await
}

async fn run_json(State(app): State<Arc<App>>, Path(raw): Path<String>) -> Response {
    blocking(app, Face::Page, move |app| {
        let id = run_id(&raw)?;
        let text = app.store().json_text(id)?;
        Ok(Reply { disposition: Some(format!("attachment; filename=\"rtscope-run-{id}.json\"")), ..Reply::json(text) })
    })
    .await
}

/// The runs a comparison names, in order: each id, and every run of each tag.
fn compared_runs(app: &App, inputs: &[query::Input]) -> Result<Vec<(i64, crate::model::Run)>, Fail> {
    let mut store = app.store();
    let mut runs = Vec::new();
    for input in inputs {
        let ids = match input {
            query::Input::Id(id) => vec![*id],
            query::Input::Tag(t) => match store.ids_with_tag(t)? {
                ids if ids.is_empty() => return Err(Fail::BadRequest(format!("no run has the tag @{t}; the list at / shows the tags"))),
                ids => ids,
            },
        };
        for id in ids {
            runs.push((id, store.load(id)?));
        }
    }
    Ok(runs)
}

async fn compare(State(app): State<Arc<App>>, RawQuery(q): RawQuery) -> Response {
    blocking(app, Face::Page, move |app| {
        let cq = query::compare_query(q.as_deref().unwrap_or("")).map_err(Fail::BadRequest)?;
        let runs = compared_runs(app, &cq.runs)?;
        if runs.len() < 2 {
            return Err(Fail::BadRequest(format!(
                "a comparison needs two or more runs; {} given. Tick two or more runs in the list at / and press Compare, or ask for /compare?runs=1,2",
                runs.len()
            )));
        }
        if runs.len() > query::MAX_COMPARED {
            return Err(Fail::BadRequest(format!("{} runs asked for; a comparison shows at most {} side by side", runs.len(), query::MAX_COMPARED)));
        }
        let html = pages::compare_page(&app.shown, runs, &cq).map_err(|e| Fail::BadRequest(format!("{e:#}")))?;
        Ok(Reply::html(html))
    })
    .await
}

async fn api_runs(State(app): State<Arc<App>>, RawQuery(q): RawQuery) -> Response {
    blocking(app, Face::Api, move |app| {
        let q = query::list_query(q.as_deref().unwrap_or("")).map_err(Fail::BadRequest)?;
        let p = app.store().page(&q.page)?;
        Ok(Reply::json(serde_json::json!({ "total": p.total, "offset": p.offset, "limit": q.page.limit, "runs": p.runs }).to_string()))
    })
    .await
}

async fn api_run(State(app): State<Arc<App>>, Path(raw): Path<String>) -> Response {
    blocking(app, Face::Api, move |app| {
        let id = run_id(&raw)?;
        Ok(Reply::json(app.store().json_text(id)?))
    })
    .await
}

async fn api_windows(State(app): State<Arc<App>>, Path(raw): Path<String>) -> Response {
    blocking(app, Face::Api, move |app| {
        let id = run_id(&raw)?;
        let mut store = app.store();
        let run = store.load(id)?;
        let Some(m) = &run.monitor else {
            return Err(Fail::NotFound(format!("run #{id} is not a monitor run: it has no windows")));
        };
        let w = store.windows(&m.id)?;
        Ok(Reply::json(serde_json::to_string(&w).unwrap_or_else(|_| "[]".into())))
    })
    .await
}
