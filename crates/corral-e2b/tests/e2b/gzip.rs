//! gzip on `/files`, both ways.

use std::io::{Read, Write};

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use serde_json::json;

use crate::harness::{Answer, Served, sandbox_headers, serve};

/// A download of `/tmp/z.txt` that sends `Accept-Encoding: accept`.
async fn download_accepting(s: &Served, id: &str, token: &str, accept: &str) -> Answer {
    let headers = sandbox_headers(id, token, &[("accept-encoding", accept)]);
    s.send("GET", "/files?path=/tmp/z.txt", &headers, Vec::new())
        .await
}

/// `bytes`, gzipped.
pub fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// Concatenated gzip members of 1 MiB of zeros each: `mib` MiB inflated
/// from a few kilobytes.
pub fn bomb(mib: usize) -> Vec<u8> {
    let member = gz(&vec![0u8; 1024 * 1024]);
    member.repeat(mib)
}

#[tokio::test]
async fn a_gzip_upload_is_inflated_and_a_download_is_compressed_when_asked() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    let text = b"compressible ".repeat(1000);
    let gzipped = [
        ("content-type", "application/octet-stream"),
        ("content-encoding", "gzip"),
    ];
    let headers = sandbox_headers(&id, &token, &gzipped);
    let up = s
        .send("POST", "/files?path=/tmp/z.txt", &headers, gz(&text))
        .await;
    assert_eq!(up.status, 200, "{}", String::from_utf8_lossy(&up.body));
    let plain = s.get_file(&id, &token, "/tmp/z.txt").await;
    assert!(!plain.headers.contains_key("content-encoding"));
    assert_eq!(plain.body, text);
    let squeezed = download_accepting(&s, &id, &token, "gzip").await;
    assert_eq!(squeezed.headers["content-encoding"], "gzip");
    assert!(squeezed.body.len() < text.len());
    let mut inflated = Vec::new();
    GzDecoder::new(squeezed.body.as_slice())
        .read_to_end(&mut inflated)
        .unwrap();
    assert_eq!(inflated, text);
    let refused = download_accepting(&s, &id, &token, "gzip;q=0, identity").await;
    assert!(!refused.headers.contains_key("content-encoding"));
    assert_eq!(refused.body, text);
}
