//! Sending one batch of a stream: its entries as newline-delimited JSON, signed the Standard
//! Webhooks way, and what the receiver's answer means for the cursor.

use crate::audit::activity::Entry;
use crate::delivery::egress::Egress;
use crate::delivery::webhooks::deliver::{Signed, signed_post};

use super::StreamRow;

/// What became of a batch.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Sent {
    /// The receiver answered 2xx: the cursor may move past the batch.
    Acked,
    /// The receiver answered 413: the batch was too large for it.
    TooLarge,
    /// Anything else, as a stable code (`stream_http_503`, `stream_timeout`, …).
    Failed(String),
}

/// The batch's body: each entry as `/v1/logs` shows it, one per line, each line ending `\n`.
pub(crate) fn ndjson(entries: &[Entry]) -> Vec<u8> {
    let mut body = Vec::with_capacity(entries.len() * 512);
    for e in entries {
        serde_json::to_writer(&mut body, e).expect("an entry serializes");
        body.push(b'\n');
    }
    body
}

/// POSTs `entries` (in order, not empty) to the stream's receiver. The batch's message id is
/// `<stream>.<first seq>-<last seq>`, the same on every retry of the same batch, so a receiver
/// can drop a batch it already has.
pub(crate) async fn send(egress: &Egress, s: &StreamRow, secret: &str, entries: &[Entry]) -> Sent {
    let (first, last) = (entries[0].seq, entries[entries.len() - 1].seq);
    let id = format!("{}.{first}-{last}", s.id);
    let m = Signed {
        url: &s.url,
        secret,
        id: &id,
        content_type: "application/x-ndjson",
        headers: vec![("naive-stream", s.id.clone()), ("naive-batch", format!("{first}-{last}"))],
        prefix: "stream",
    };
    match signed_post(egress, m, ndjson(entries)).await {
        Ok(r) if r.status().is_success() => Sent::Acked,
        Ok(r) if r.status() == reqwest::StatusCode::PAYLOAD_TOO_LARGE => Sent::TooLarge,
        Ok(r) => Sent::Failed(format!("stream_http_{}", r.status().as_u16())),
        Err(code) => Sent::Failed(code),
    }
}
