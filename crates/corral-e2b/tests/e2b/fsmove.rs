//! `Move` of files and directory trees, and relative paths in the files
//! plane.

use serde_json::json;

use crate::harness::{Answer, Served, serve};

/// A `Move` of `source` to `destination`, as answered.
async fn mv(s: &Served, id: &str, token: &str, source: &str, destination: &str) -> Answer {
    let body = json!({"source": source, "destination": destination});
    s.filesystem(id, token, "Move", body).await
}

#[tokio::test]
async fn a_directory_tree_moves_whole_and_the_source_is_gone() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    s.put(&id, &token, "/tmp/src/a.txt", b"a").await;
    s.put(&id, &token, "/tmp/src/deep/er/b.txt", b"bee").await;
    let made = s
        .filesystem(&id, &token, "MakeDir", json!({"path": "/tmp/src/empty"}))
        .await;
    assert_eq!(made.status, 200);
    let moved = mv(&s, &id, &token, "/tmp/src", "/tmp/dst").await;
    assert_eq!(
        moved.status,
        200,
        "{}",
        String::from_utf8_lossy(&moved.body)
    );
    assert_eq!(moved.json()["entry"]["type"], "FILE_TYPE_DIRECTORY");
    assert_eq!(moved.json()["entry"]["path"], "/tmp/dst");
    let down = s.get_file(&id, &token, "/tmp/dst/deep/er/b.txt").await;
    assert_eq!(down.body, b"bee");
    let empty = s
        .filesystem(&id, &token, "Stat", json!({"path": "/tmp/dst/empty"}))
        .await;
    assert_eq!(empty.json()["entry"]["type"], "FILE_TYPE_DIRECTORY");
    let gone = s
        .filesystem(&id, &token, "Stat", json!({"path": "/tmp/src"}))
        .await;
    assert_eq!(gone.json()["code"], "not_found");
}

#[tokio::test]
async fn a_directory_does_not_move_onto_an_existing_entry() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    s.put(&id, &token, "/tmp/one/a.txt", b"a").await;
    s.put(&id, &token, "/tmp/two/b.txt", b"b").await;
    let a = mv(&s, &id, &token, "/tmp/one", "/tmp/two").await;
    assert_eq!(a.json()["code"], "already_exists", "{}", a.json());
    let kept = s.get_file(&id, &token, "/tmp/one/a.txt").await;
    assert_eq!(kept.body, b"a");
}

#[tokio::test]
async fn relative_paths_resolve_under_the_home_everywhere() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    s.put(&id, &token, "rel/x.txt", b"x").await;
    let stat = s
        .filesystem(&id, &token, "Stat", json!({"path": "rel/x.txt"}))
        .await;
    assert_eq!(stat.json()["entry"]["path"], "/home/user/rel/x.txt");
    let listed = s
        .filesystem(&id, &token, "ListDir", json!({"path": "rel"}))
        .await;
    assert_eq!(listed.json()["entries"][0]["path"], "/home/user/rel/x.txt");
    let made = s
        .filesystem(&id, &token, "MakeDir", json!({"path": "~/made"}))
        .await;
    assert_eq!(made.json()["entry"]["path"], "/home/user/made");
    let moved = mv(&s, &id, &token, "rel", "made/rel").await;
    assert_eq!(moved.json()["entry"]["path"], "/home/user/made/rel");
    let down = s.get_file(&id, &token, "made/rel/x.txt").await;
    assert_eq!(down.body, b"x");
    let removed = s
        .filesystem(&id, &token, "Remove", json!({"path": "made"}))
        .await;
    assert_eq!(removed.status, 200);
    let gone = s
        .filesystem(&id, &token, "Stat", json!({"path": "/home/user/made"}))
        .await;
    assert_eq!(gone.json()["code"], "not_found");
}
