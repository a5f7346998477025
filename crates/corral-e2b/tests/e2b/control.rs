//! The REST control plane.

use serde_json::json;

use crate::harness::serve;

#[tokio::test]
async fn create_get_list_timeout_kill() {
    let s = serve().await;
    let (a, _) = s
        .create(json!({"templateID": "base", "metadata": {"team": "red"}, "timeout": 30}))
        .await;
    let (b, _) = s
        .create(json!({"templateID": "base", "metadata": {"team": "blue"}}))
        .await;
    let got = s.api("GET", &format!("/sandboxes/{a}"), json!(null)).await;
    assert_eq!(got.status, 200);
    let v = got.json();
    assert_eq!(v["state"], "running");
    assert_eq!(v["metadata"]["team"], "red");
    assert!(v["startedAt"].as_str().unwrap().ends_with('Z'));

    let red = s
        .api("GET", "/v2/sandboxes?metadata=team%3Dred", json!(null))
        .await
        .json();
    assert_eq!(red.as_array().unwrap().len(), 1);
    assert_eq!(red[0]["sandboxID"], a.as_str());

    let first = s.api("GET", "/v2/sandboxes?limit=1", json!(null)).await;
    assert_eq!(first.json().as_array().unwrap().len(), 1);
    let token = first
        .headers
        .get("x-next-token")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let second = s
        .api(
            "GET",
            &format!("/v2/sandboxes?limit=1&nextToken={token}"),
            json!(null),
        )
        .await;
    assert_eq!(second.json()[0]["sandboxID"], b.as_str());
    assert!(second.headers.get("x-next-token").is_none());

    assert_eq!(
        s.api(
            "POST",
            &format!("/sandboxes/{a}/timeout"),
            json!({"timeout": 0})
        )
        .await
        .status,
        204
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        s.api("GET", &format!("/sandboxes/{a}"), json!(null))
            .await
            .status,
        404,
        "past its timeout it is gone"
    );

    assert_eq!(
        s.api("DELETE", &format!("/sandboxes/{b}"), json!(null))
            .await
            .status,
        204
    );
    assert_eq!(
        s.api("DELETE", &format!("/sandboxes/{b}"), json!(null))
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn the_api_key_is_required() {
    let s = serve().await;
    for headers in [vec![], vec![("X-API-KEY", "e2b_wrong".to_string())]] {
        let a = s.send("GET", "/v2/sandboxes", &headers, Vec::new()).await;
        assert_eq!(a.status, 401);
        assert_eq!(
            a.json(),
            json!({"code": 401, "message": "X-API-KEY is missing or wrong"})
        );
    }
}

/// "`templateID` names a corral image. `base` is the default image that
/// has bash, and an unknown template answers 404": each template → what
/// the create answers, on a backend holding one image (`python-3`) and on
/// one without images (local).
#[tokio::test]
async fn a_template_names_an_image_of_the_backend() {
    let memory = crate::harness::serve_backend(std::sync::Arc::new(
        corral_backend_memory::MemoryBackend::new().with_image("python-3"),
    ))
    .await;
    let (id, _) = memory.create(json!({"templateID": "python-3"})).await;
    let got = memory
        .api("GET", &format!("/sandboxes/{id}"), json!(null))
        .await
        .json();
    assert_eq!(got["templateID"], "python-3");
    let listed = memory.api("GET", "/v2/sandboxes", json!(null)).await.json();
    assert_eq!(listed[0]["templateID"], "python-3");

    let state = tempfile::tempdir().unwrap();
    let local = crate::harness::serve_backend(std::sync::Arc::new(
        corral_backend_local::LocalBackend::open(state.path()).unwrap(),
    ))
    .await;
    let refused: [(&crate::harness::Served, serde_json::Value, u16, &str); 6] = [
        (
            &memory,
            json!({"templateID": "python-4"}),
            404,
            "template \"python-4\" not found: image \"python-4\" is not on this host",
        ),
        (
            &memory,
            json!({"templateID": ""}),
            400,
            "templateID: a template is 1-256 bytes",
        ),
        (
            &memory,
            json!({"templateID": "a\u{1b}[2J"}),
            400,
            "templateID: a template is 1-256 bytes without control characters",
        ),
        (
            &memory,
            json!({"templateID": "x".repeat(257)}),
            400,
            "templateID",
        ),
        (
            &local,
            json!({"templateID": "python-3"}),
            404,
            "template \"python-3\" not found: ",
        ),
        (&local, json!({"templateID": "base"}), 201, "sandboxID"),
    ];
    for (served, body, status, shown) in refused {
        let a = served.api("POST", "/v2/sandboxes", body.clone()).await;
        let answer = a.json();
        assert_eq!(a.status, status, "{body}: {answer}");
        let text = answer["message"]
            .as_str()
            .map_or_else(|| answer.to_string(), String::from);
        assert!(text.contains(shown), "{body}: {text}");
        if status >= 400 {
            assert_eq!(answer["code"], status, "{answer}");
        }
    }
    let kept = memory.api("GET", "/v2/sandboxes", json!(null)).await.json();
    assert_eq!(
        kept.as_array().unwrap().len(),
        1,
        "a refused create left nothing"
    );
    for sandbox in local
        .api("GET", "/v2/sandboxes", json!(null))
        .await
        .json()
        .as_array()
        .unwrap()
    {
        let id = sandbox["sandboxID"].as_str().unwrap();
        assert_eq!(
            local
                .api("DELETE", &format!("/sandboxes/{id}"), json!(null))
                .await
                .status,
            204
        );
    }
}

/// The memory backend enforces no default size: each field is 0, "no
/// limit" (the SDKs' models require integers).
#[tokio::test]
async fn a_backend_without_a_default_size_reports_0() {
    let s = serve().await;
    let (id, _) = s.create(json!({"templateID": "base"})).await;
    let got = s
        .api("GET", &format!("/sandboxes/{id}"), json!(null))
        .await
        .json();
    let listed = s.api("GET", "/v2/sandboxes", json!(null)).await.json();
    for v in [&got, &listed[0]] {
        let size = json!([v["cpuCount"], v["memoryMB"], v["diskSizeMB"]]);
        assert_eq!(size, json!([0, 0, 0]), "{v}");
    }
}
