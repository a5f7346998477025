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
