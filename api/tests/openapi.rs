//! `openapi/openapi.yaml` and the server agree: the same paths and methods, the same problem
//! codes; every listed route is served and an unlisted one is not.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use tower::ServiceExt;
use xcd_api::{AppState, Config, ROUTES, router};

fn spec() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../openapi/openapi.yaml");
    std::fs::read_to_string(path).expect("openapi/openapi.yaml")
}

/// (method, path) pairs under `paths:`, read from the document's indentation.
fn spec_routes(text: &str) -> Vec<(String, String)> {
    let mut routes = Vec::new();
    let mut in_paths = false;
    let mut path = String::new();
    for line in text.lines() {
        if line == "paths:" {
            in_paths = true;
            continue;
        }
        if in_paths && !line.starts_with(' ') && !line.is_empty() {
            break;
        }
        if let Some(p) = line.strip_prefix("  /").and_then(|l| l.strip_suffix(':')) {
            path = format!("/{p}");
        } else if let Some(m) = line.strip_prefix("    ").and_then(|l| l.strip_suffix(':')) {
            if ["get", "post", "put", "delete", "patch", "head"].contains(&m) {
                routes.push((m.to_owned(), path.clone()));
            }
        }
    }
    routes.sort();
    routes
}

#[test]
fn the_document_lists_exactly_the_routes_served() {
    let mut served: Vec<(String, String)> = ROUTES.iter().map(|(m, p)| ((*m).to_owned(), (*p).to_owned())).collect();
    served.sort();
    assert_eq!(spec_routes(&spec()), served);
}

#[test]
fn the_document_lists_exactly_the_problem_codes() {
    let text = spec();
    let line = text.lines().skip_while(|l| !l.contains("enum: [secret_refused")).take(4).collect::<Vec<_>>().join(" ");
    let list = line.split_once('[').and_then(|(_, rest)| rest.split_once(']')).map(|(l, _)| l).expect("the code enum");
    let codes: Vec<&str> = list.split(',').map(str::trim).collect();
    let known: Vec<&str> = xcd_wire::ProblemCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(codes, known);
}

#[tokio::test]
async fn every_listed_route_is_served_and_others_are_not() {
    let app = router(AppState::new(Config::default(), Vec::new()));
    let hex = "ab".repeat(32);
    for (method, path) in ROUTES {
        let uri = path.replace("{id}", &hex).replace("{hash}", &hex);
        let request =
            Request::builder().method(method.to_uppercase().as_str()).uri(&uri).body(Body::empty()).expect("request");
        let response = app.clone().oneshot(request).await.expect("answer");
        assert_ne!(response.status(), StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
        let body = axum::body::to_bytes(response.into_body(), 1 << 20).await.expect("body");
        assert!(!String::from_utf8_lossy(&body).contains("\"not_found\""), "{method} {path} is not routed");
    }
    let request = Request::builder().uri("/v2/nothing").body(Body::empty()).expect("request");
    let response = app.clone().oneshot(request).await.expect("answer");
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let request = Request::builder().method("DELETE").uri("/v1/version").body(Body::empty()).expect("request");
    assert_eq!(app.oneshot(request).await.expect("answer").status(), StatusCode::METHOD_NOT_ALLOWED);
}
