//! envd's HTTP: `GET /files` (a file's bytes), `POST /files` (raw or
//! multipart uploads, either gzip-encoded) and `GET /health`.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::header::{CONTENT_ENCODING, CONTENT_TYPE, HeaderValue, VARY};
use hyper::{Request, StatusCode};
use serde_json::json;

use super::gzip::{self, BodyEncoding};
use super::multipart::{boundary, parts};
use super::query_param;
use super::{EnvdUser, authorized, resolve, sandbox_id};
use crate::Inner;
use crate::body::{Reply, api_error, bytes_reply, empty_reply, json_reply, read_body};
use crate::error::{E2bError, E2bResult};

/// `GET /health`: 204 while the sandbox is known (by name, or by the
/// access token of a request naming none).
pub fn health<B>(inner: &Inner, req: &Request<B>) -> Reply {
    let known = match sandbox_id(req) {
        Some(id) => inner.sandboxes.get(&id),
        None => req
            .headers()
            .get(super::ACCESS_TOKEN_HEADER)
            .and_then(|t| inner.sandboxes.by_token(t.as_bytes())),
    };
    match known {
        Some(_) => empty_reply(StatusCode::NO_CONTENT),
        None => api_error(&E2bError::Unrouted),
    }
}

fn user_of<B>(req: &Request<B>) -> E2bResult<EnvdUser> {
    match query_param(req, "username")? {
        Some(name) => EnvdUser::from_name(&name),
        None => EnvdUser::of(req),
    }
}

/// `GET /files?path=`: the file's bytes, gzip-compressed when the
/// request's `Accept-Encoding` takes gzip.
pub async fn download(inner: &Arc<Inner>, req: Request<Incoming>) -> Reply {
    let squeeze = gzip::accepts_gzip(&req);
    let answer = async {
        let record = authorized(inner, &req)?;
        user_of(&req)?;
        let path =
            query_param(&req, "path")?.ok_or_else(|| E2bError::invalid("path", "is required"))?;
        let path = resolve("path", &path)?;
        Ok::<_, E2bError>(inner.backend.files().read(&record.id, &path).await?)
    };
    match answer.await {
        Ok(bytes) if squeeze => {
            let mut reply = bytes_reply(
                StatusCode::OK,
                "application/octet-stream",
                gzip::compress(bytes).await,
            );
            let headers = reply.headers_mut();
            headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            headers.insert(VARY, HeaderValue::from_static("Accept-Encoding"));
            reply
        }
        Ok(bytes) => bytes_reply(StatusCode::OK, "application/octet-stream", bytes),
        Err(e) => api_error(&e),
    }
}

/// `POST /files`: writes each uploaded file, answering their `EntryInfo`s.
pub async fn upload(inner: &Arc<Inner>, req: Request<Incoming>) -> Reply {
    match write(inner, req).await {
        Ok(written) => json_reply(StatusCode::OK, &json!(written)),
        Err(e) => api_error(&e),
    }
}

async fn write(inner: &Arc<Inner>, req: Request<Incoming>) -> E2bResult<Vec<serde_json::Value>> {
    let record = authorized(inner, &req)?;
    let user = user_of(&req)?;
    let path = query_param(&req, "path")?;
    let content_type = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/octet-stream")
        .to_string();
    let encoding = BodyEncoding::of(&req)?;
    let limit = inner.config.max_file_bytes;
    let body = gzip::decode(read_body(req, limit).await?, encoding, limit).await?;
    let files: Vec<(String, Vec<u8>)> = match boundary(&content_type) {
        Some(b) => parts(&body, &b)?
            .into_iter()
            .map(|p| {
                let target = path
                    .clone()
                    .or(p.filename)
                    .ok_or_else(|| E2bError::invalid("path", "is required"))?;
                Ok((target, p.data))
            })
            .collect::<E2bResult<_>>()?,
        None => vec![(
            path.ok_or_else(|| E2bError::invalid("path", "is required"))?,
            body.to_vec(),
        )],
    };
    let writes = super::owned::WritesFor::of(inner, user);
    let mut written = Vec::new();
    for (target, data) in files {
        let target = resolve("path", &target)?;
        if let Some(parent) = target.parent()
            && !parent.is_root()
        {
            writes.mkdir(&record.id, &parent).await?;
        }
        writes.write(&record.id, &target, &data).await?;
        written.push(
            json!({ "name": super::entry::base_name(target.as_str()), "type": "file", "path": target.as_str() }),
        );
    }
    Ok(written)
}
