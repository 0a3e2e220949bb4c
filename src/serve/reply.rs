//! What `serve`'s handlers answer: a [`Reply`] (status, type, body), or a
//! [`Fail`] — why the request could not be answered — which becomes the
//! error page or the API's `{"error": …}` by who asked ([`Face`]). Handlers
//! return `Result<Reply, Fail>` and use `?`; a store error converts by
//! itself (no such run is 404, anything else 500).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::error::BadInput;

use super::pages;

/// What a handler answers, built on the blocking pool.
pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) content_type: &'static str,
    pub(crate) body: String,
    /// `Content-Disposition` (downloads).
    pub(crate) disposition: Option<String>,
}

impl Reply {
    pub(crate) fn html(body: String) -> Reply {
        Reply { status: StatusCode::OK, content_type: "text/html; charset=utf-8", body, disposition: None }
    }
    pub(crate) fn json(body: String) -> Reply {
        Reply { status: StatusCode::OK, content_type: "application/json", body, disposition: None }
    }
    /// `{"error": msg}` with `status`: how the API answers what it cannot.
    pub(crate) fn json_error(status: StatusCode, msg: &str) -> Reply {
        Reply::json(serde_json::json!({ "error": msg }).to_string()).status(status)
    }
    pub(crate) fn status(mut self, s: StatusCode) -> Reply {
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

/// Who reads an answer: a person (an HTML page) or a program (the JSON API).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Face {
    Page,
    Api,
}

/// Why a handler could not answer.
#[derive(Debug)]
pub(crate) enum Fail {
    /// The request is wrong (a query value, too few or too many runs): 400,
    /// the message says what to change.
    BadRequest(String),
    /// Nothing at that address (not a run id, not a monitor run): 404.
    NotFound(String),
    /// The store could not answer: its bad input (no such run) is 404, any
    /// other error 500.
    Store(anyhow::Error),
}

impl From<anyhow::Error> for Fail {
    fn from(e: anyhow::Error) -> Fail {
        Fail::Store(e)
    }
}

impl Fail {
    /// The answer for `face`: an error page, or the API's JSON error.
    pub(crate) fn reply(self, face: Face) -> Reply {
        let (status, title, msg) = match self {
            Fail::BadRequest(m) => (StatusCode::BAD_REQUEST, "Bad request", m),
            Fail::NotFound(m) => (StatusCode::NOT_FOUND, "Not found", m),
            Fail::Store(e) => match e.downcast_ref::<BadInput>() {
                Some(b) => (StatusCode::NOT_FOUND, "Not found", b.0.clone()),
                None => (StatusCode::INTERNAL_SERVER_ERROR, "The history could not be read", format!("{e:#}")),
            },
        };
        match face {
            Face::Page => Reply::html(pages::error_page(title, &msg)).status(status),
            Face::Api => Reply::json_error(status, &msg),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_error_is_404_when_it_is_bad_input_and_500_otherwise_on_both_faces() {
        for face in [Face::Page, Face::Api] {
            let missing = Fail::from(anyhow::Error::new(BadInput("run 7 is not in the history".into()))).reply(face);
            assert_eq!(missing.status, StatusCode::NOT_FOUND);
            assert!(missing.body.contains("run 7 is not in the history"), "{}", missing.body);
            let broken = Fail::from(anyhow::anyhow!("disk I/O error")).reply(face);
            assert_eq!(broken.status, StatusCode::INTERNAL_SERVER_ERROR);
            assert!(broken.body.contains("disk I/O error"), "{}", broken.body);
        }
        let page = Fail::BadRequest("per=0: give 1 to 500".into()).reply(Face::Page);
        assert_eq!((page.status, page.content_type), (StatusCode::BAD_REQUEST, "text/html; charset=utf-8"));
        assert!(page.body.contains("<h1>Bad request</h1>"), "{}", page.body);
        let api = Fail::NotFound("no windows".into()).reply(Face::Api);
        assert_eq!((api.status, api.content_type, api.body.as_str()), (StatusCode::NOT_FOUND, "application/json", r#"{"error":"no windows"}"#));
    }
}
