//! The API's routes, each listed once with its method and path so the
//! OpenAPI document can be checked against what is really served.

mod events;
mod maintenance;
mod read;
mod sessions;
mod summarize;
mod tools;

use axum::Router;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::MethodRouter;
use axum::routing::get;
use axum::routing::post;

use crate::state::AppState;

/// The OpenAPI 3.1 document of the API, served at `/openapi.json`.
pub const OPENAPI: &str = include_str!("openapi.json");

/// The router under construction and every `(method, path)` added to it.
struct Api {
    router: Router<AppState>,
    listed: Vec<(&'static str, &'static str)>,
}

impl Api {
    fn add(
        mut self,
        method: &'static str,
        path: &'static str,
        handler: MethodRouter<AppState>,
    ) -> Self {
        self.listed.push((method, path));
        self.router = self.router.route(path, handler);
        self
    }
}

/// The `/v1/` routes (without auth or limits, which the service adds) and
/// their `(method, path)` list, lower-case methods as OpenAPI writes them.
pub(crate) fn api() -> (Router<AppState>, Vec<(&'static str, &'static str)>) {
    let api = Api {
        router: Router::new(),
        listed: Vec::new(),
    }
    .add("post", "/v1/sessions", post(sessions::create))
    .add("get", "/v1/sessions", get(sessions::list))
    .add("post", "/v1/sessions/{id}/messages", post(sessions::append))
    .add("get", "/v1/sessions/{id}/request", get(read::request))
    .add("get", "/v1/sessions/{id}/context", get(read::context))
    .add("get", "/v1/sessions/{id}/stats", get(read::stats))
    .add("post", "/v1/sessions/{id}/recall", post(read::recall))
    .add("get", "/v1/sessions/{id}/tools", get(tools::list))
    .add(
        "post",
        "/v1/sessions/{id}/compact-context",
        post(tools::compact_context),
    )
    .add("get", "/v1/sessions/{id}/report", get(read::report))
    .add(
        "post",
        "/v1/sessions/{id}/after-turn",
        post(maintenance::after_turn),
    )
    .add(
        "post",
        "/v1/sessions/{id}/mid-turn",
        post(maintenance::mid_turn),
    )
    .add("post", "/v1/sessions/{id}/idle", post(maintenance::idle))
    .add(
        "post",
        "/v1/sessions/{id}/on-error",
        post(maintenance::on_error),
    )
    .add(
        "post",
        "/v1/sessions/{id}/compact",
        post(maintenance::compact),
    )
    .add(
        "get",
        "/v1/sessions/{id}/compaction/events",
        get(events::stream),
    )
    .add("post", "/v1/summarize", post(summarize::summarize));
    (api.router, api.listed)
}

/// `GET /openapi.json`.
pub(crate) async fn openapi() -> impl IntoResponse {
    ([(CONTENT_TYPE, "application/json")], OPENAPI)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// Every served route is in the document and the document lists no
    /// route that is not served.
    #[test]
    fn openapi_lists_exactly_the_served_routes() {
        let document: serde_json::Value = serde_json::from_str(OPENAPI).expect("valid JSON");
        let mut documented = BTreeSet::new();
        for (path, item) in document["paths"].as_object().expect("paths") {
            for method in item.as_object().expect("path item").keys() {
                if ["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                    documented.insert((method.clone(), path.clone()));
                }
            }
        }
        let (_, listed) = api();
        let mut served: BTreeSet<(String, String)> = listed
            .iter()
            .map(|(m, p)| ((*m).to_string(), (*p).to_string()))
            .collect();
        served.insert(("get".to_string(), "/openapi.json".to_string()));
        assert_eq!(served, documented);
        assert_eq!(listed.len() + 1, served.len(), "a route is listed twice");
    }
}
