//! `GET /sandboxes/{id}`, and `GET /sandboxes` and `/v2/sandboxes`,
//! filtering by metadata and state, paging with `X-Next-Token`.

use std::collections::BTreeMap;
use std::sync::Arc;

use corral_backend::SandboxStatus;
use hyper::header::HeaderValue;
use hyper::{Request, StatusCode};
use serde_json::Value;

use super::create::{E2B_LABEL, metadata_labels};
use super::{detail_json, live_record, state_name};
use crate::Inner;
use crate::body::{Reply, json_reply};
use crate::error::{E2bError, E2bResult};

/// The header naming the next page.
pub const NEXT_TOKEN_HEADER: &str = "x-next-token";

/// The largest page (and E2B's default).
pub const MAX_LIMIT: usize = 100;

/// Answers with one sandbox's `SandboxDetail`.
pub async fn get(inner: &Arc<Inner>, id: &str) -> E2bResult<Reply> {
    let (record, status) = live_record(inner, id).await?;
    Ok(json_reply(
        StatusCode::OK,
        &detail_json(inner, &record, status, false),
    ))
}

/// What a list asks for.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ListQuery {
    /// Every pair a sandbox's metadata must hold.
    pub metadata: BTreeMap<String, String>,
    /// The states wanted (empty: running and paused).
    pub states: Vec<&'static str>,
    /// The page size.
    pub limit: usize,
    /// List after the sandbox this names.
    pub next_token: Option<u64>,
}

/// `%XX` and `+` decoded (form encoding); `None` for a broken escape or
/// bytes that are not UTF-8.
pub fn form_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = text.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// `k=v` pairs of a form-encoded string.
pub fn form_pairs(text: &str) -> Option<Vec<(String, String)>> {
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            Some((form_decode(k)?, form_decode(v)?))
        })
        .collect()
}

/// Parses a list's query string.
pub fn parse_query(query: &str) -> E2bResult<ListQuery> {
    let pairs =
        form_pairs(query).ok_or_else(|| E2bError::invalid("query", "is not form-encoded"))?;
    let mut parsed = ListQuery {
        limit: MAX_LIMIT,
        ..ListQuery::default()
    };
    for (k, v) in pairs {
        match k.as_str() {
            "metadata" => {
                let inner = form_pairs(&v).ok_or_else(|| {
                    E2bError::invalid("metadata", "is not form-encoded k=v pairs")
                })?;
                parsed.metadata.extend(inner);
            }
            "state" => {
                for s in v.split(',').filter(|s| !s.is_empty()) {
                    parsed.states.push(match s {
                        "running" => "running",
                        "paused" => "paused",
                        other => {
                            return Err(E2bError::invalid(
                                "state",
                                format!("{other:?} is not running or paused"),
                            ));
                        }
                    });
                }
            }
            "limit" => {
                parsed.limit = v
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=MAX_LIMIT).contains(n))
                    .ok_or_else(|| {
                        E2bError::invalid(
                            "limit",
                            format!("{v:?} is not a number from 1 to {MAX_LIMIT}"),
                        )
                    })?;
            }
            "nextToken" => {
                parsed.next_token = Some(v.parse().map_err(|_| {
                    E2bError::invalid(
                        "nextToken",
                        format!("{v:?} is not a token this server gave"),
                    )
                })?);
            }
            _ => {}
        }
    }
    Ok(parsed)
}

/// Lists this server's sandboxes. `/v2/sandboxes` pages and filters by
/// state; `/sandboxes` answers the running ones, all at once.
pub async fn list<B>(inner: &Arc<Inner>, req: &Request<B>, v2: bool) -> E2bResult<Reply> {
    let mut query = parse_query(req.uri().query().unwrap_or(""))?;
    if !v2 {
        query.states = vec!["running"];
        query.limit = usize::MAX;
        query.next_token = None;
    }
    let mut labels = metadata_labels(&query.metadata)?;
    labels
        .insert(E2B_LABEL, crate::BASE_TEMPLATE)
        .expect("the e2b label is a label");
    let present: BTreeMap<String, SandboxStatus> = inner
        .backend
        .list(&labels)
        .await?
        .into_iter()
        .filter(|info| info.status != SandboxStatus::Dead)
        .map(|info| (info.id, info.status))
        .collect();
    let mut page: Vec<Value> = Vec::new();
    let mut next = None;
    let mut last_seq = None;
    for record in inner.sandboxes.all() {
        let Some(status) = present.get(&record.id) else {
            continue;
        };
        if query.next_token.is_some_and(|after| record.seq <= after) {
            continue;
        }
        if !query.states.is_empty() && !query.states.contains(&state_name(*status)) {
            continue;
        }
        if page.len() == query.limit {
            next = last_seq.map(|s: u64| s.to_string());
            break;
        }
        last_seq = Some(record.seq);
        page.push(detail_json(inner, &record, *status, true));
    }
    let mut reply = json_reply(StatusCode::OK, &Value::Array(page));
    if let Some(token) = next.and_then(|t| HeaderValue::from_str(&t).ok()) {
        reply.headers_mut().insert(NEXT_TOKEN_HEADER, token);
    }
    Ok(reply)
}
