//! The HTTP client a connected-app session runs on: the guarded egress client, watched. The
//! SDK reports a failed request to its caller as "transport closed" and keeps why to itself;
//! this wrapper keeps the last failure of its session (an answer past the byte bound, an
//! address egress refused) so the gateway can say which, and otherwise does exactly what the
//! SDK's own reqwest client does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

type Failed = StreamableHttpError<reqwest::Error>;
type Headers = HashMap<HeaderName, HeaderValue>;

/// The SDK's reqwest client, keeping the last failure of the session it serves.
#[derive(Clone)]
pub(crate) struct Watched {
    inner: reqwest::Client,
    last: Arc<Mutex<Option<String>>>,
}

impl Watched {
    pub(crate) fn new(inner: reqwest::Client) -> Watched {
        Watched { inner, last: Arc::default() }
    }

    /// The last failure's text and its causes', lowercase.
    pub(crate) fn last_failure(&self) -> Option<String> {
        self.last.lock().expect("not poisoned").clone()
    }

    fn note<T>(&self, r: Result<T, Failed>) -> Result<T, Failed> {
        if let Err(e) = &r {
            *self.last.lock().expect("not poisoned") = Some(chain_text(e));
        }
        r
    }

    /// A response's event stream, keeping the failure it ends in (a bound passed mid-stream).
    fn watch(&self, events: Events) -> Events {
        use futures_util::StreamExt as _;
        let last = self.last.clone();
        events
            .inspect(move |e| {
                if let Err(e) = e {
                    *last.lock().expect("not poisoned") = Some(chain_text(e));
                }
            })
            .boxed()
    }

    fn watch_post(
        &self,
        r: Result<StreamableHttpPostResponse, Failed>,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        match self.note(r)? {
            StreamableHttpPostResponse::Sse(events, session) => {
                Ok(StreamableHttpPostResponse::Sse(self.watch(events), session))
            }
            other => Ok(other),
        }
    }
}

type Events = BoxStream<'static, Result<Sse, SseError>>;

impl StreamableHttpClient for Watched {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        headers: Headers,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        self.watch_post(self.inner.post_message(uri, message, session_id, auth, headers).await)
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        let sent = self
            .inner
            .post_message_with_max_sse_event_size(uri, message, session_id, auth, headers, max_sse_event_size)
            .await;
        self.watch_post(sent)
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        headers: Headers,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        let sent = self
            .inner
            .post_message_with_response_limits(uri, message, session_id, auth, headers, limits)
            .await;
        self.watch_post(sent)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session: Arc<str>,
        auth: Option<String>,
        headers: Headers,
    ) -> Result<(), Failed> {
        self.note(self.inner.delete_session(uri, session, auth, headers).await)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth: Option<String>,
        headers: Headers,
    ) -> Result<Events, Failed> {
        let got = self.note(self.inner.get_stream(uri, session_id, last_event_id, auth, headers).await)?;
        Ok(self.watch(got))
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth: Option<String>,
        headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<Events, Failed> {
        let got = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth,
                headers,
                max_sse_event_size,
            )
            .await;
        Ok(self.watch(self.note(got)?))
    }
}

/// The text of an error and every error under it, lowercase, to recognise a bound's failure
/// through the SDK's wrapping.
pub(crate) fn chain_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cur = e.source();
    while let Some(err) = cur {
        text.push_str(": ");
        text.push_str(&err.to_string());
        cur = err.source();
    }
    text.to_lowercase()
}
