//! `monitor --listen`'s `/metrics` for Prometheus, on the servers' one HTTP
//! stack (`http`): GET and HEAD `/metrics` answer the text the monitor last
//! rendered; any other method on it is 405, any other path 404. It runs on a
//! thread of its own with a current-thread runtime, off the measured CPUs'
//! way like every non-RT thread of the monitor, until [`MetricsServer::stop`].

use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use tokio::sync::Notify;

/// The running server: its address, and how to stop it.
pub(crate) struct MetricsServer {
    addr: SocketAddr,
    stop: Arc<Notify>,
    thread: std::thread::JoinHandle<()>,
}

impl MetricsServer {
    /// Serve `metrics` on `listener` (bound, non-blocking: `serve::bind`).
    pub(crate) fn start(listener: TcpListener, metrics: Arc<Mutex<String>>) -> anyhow::Result<MetricsServer> {
        let addr = listener.local_addr()?;
        let rt = tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build()?;
        let stop = Arc::new(Notify::new());
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("rtscope-http".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                rt.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
                    let app = Router::new().route("/metrics", any(metrics_page)).fallback(not_found).with_state(metrics);
                    super::http::serve(listener, app, super::http::Limits::from_fd_limit(), stopped.notified()).await;
                });
            })
            .map_err(|e| crate::sys::pthread::spawn_refused("the /metrics server's thread", &e))?;
        Ok(MetricsServer { addr, stop, thread })
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stop serving (answers in flight finish) and wait for the thread.
    pub(crate) fn stop(self) {
        self.stop.notify_one();
        let _ = self.thread.join();
    }
}

async fn metrics_page(State(metrics): State<Arc<Mutex<String>>>, method: Method) -> Response {
    if method != Method::GET && method != Method::HEAD {
        let mut r = (StatusCode::METHOD_NOT_ALLOWED, "only GET /metrics\n").into_response();
        r.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let body = metrics.lock().map(|m| m.clone()).unwrap_or_default();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], body).into_response()
}

async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "not found: rtscope serves /metrics\n").into_response()
}
