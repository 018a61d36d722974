//! `GET /v1/events`: the activity stream as Server-Sent Events (SPEC §11).
//!
//! Each event's `id` is its activity-log sequence number. A client that reconnects with
//! `Last-Event-ID` first gets what it missed, read back from the log, then the live stream;
//! nothing is lost while the gap is in the log. The subscription is taken before the backfill
//! is read and events already sent are skipped, so the hand-over drops and repeats nothing.
//! A comment heartbeat keeps idle connections open. Subscribers are bounded; a subscriber too
//! slow for the bus gets one `lagged` event and is closed, so it never holds up writers.
//! The company key sees its tenant's events; an agent sees its own profile's.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, Stream};
use gateway::ProfileId;
use gateway::activity::{Entry, LogQuery, MAX_PAGE};
use gateway::events::{BusItem, Subscription};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::auth::Caller;
use crate::problem::Problem;
use crate::startup::AppState;

/// The most concurrent event-stream subscribers one server holds.
pub const MAX_SUBSCRIBERS: usize = 4_096;
/// How often an idle stream gets a heartbeat comment.
const HEARTBEAT_SECS: u64 = 15;

/// The subscriber bound, shared by every request.
pub fn subscriber_limit() -> Arc<Semaphore> {
    Arc::new(Semaphore::new(MAX_SUBSCRIBERS))
}

struct Feed {
    sub: Subscription,
    profile: Option<ProfileId>,
    backlog: VecDeque<Entry>,
    last_sent: i64,
    done: bool,
    render: Render,
    stopping: tokio::sync::watch::Receiver<bool>,
    _permit: OwnedSemaphorePermit,
}

fn event_of(e: &Entry) -> Event {
    Event::default()
        .id(e.seq.to_string())
        .event(e.kind.clone())
        .json_data(e)
        .unwrap_or_else(|_| Event::default().comment("unserializable entry"))
}

#[utoipa::path(get, path = "/v1/events", tag = "activity",
    params(("Last-Event-ID" = Option<i64>, Header, description = "Resume after this event id.")),
    responses((status = 200, description = "Server-Sent Events of the activity log: each event's id is its sequence number, its name the entry's kind, its data the entry.", content_type = "text/event-stream", body = crate::openapi::SseFrame),
        (status = 403, description = "The agent's profile is revoked.", body = policy::Envelope, content_type = "application/json")))]
pub async fn stream(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    let profile = match &caller {
        Caller::Agent(s) => {
            if let Some(env) = state.gateway.inactive_refusal(s, "events.stream").await? {
                return Ok((StatusCode::FORBIDDEN, axum::Json(env)).into_response());
            }
            Some(s.profile.clone())
        }
        Caller::Company(_) => None,
    };
    open(&state, caller.tenant().clone(), profile, &headers, Render::Entry).await
}

/// How a feed turns an entry into an event.
pub enum Render {
    /// The entry itself, named by its kind (`/v1/events`).
    Entry,
    /// The console's activity row, with agent names resolved, as an unnamed message.
    Console(Box<ConsoleNames>),
}

/// The tenant's profile names, reloaded when an event names one not seen yet.
pub struct ConsoleNames {
    gateway: gateway::Gateway,
    tenant: gateway::TenantId,
    profiles: Vec<gateway::Profile>,
}

impl ConsoleNames {
    pub async fn load(gateway: gateway::Gateway, tenant: gateway::TenantId) -> Result<ConsoleNames, Problem> {
        let profiles = gateway.profiles(&tenant).await?;
        Ok(ConsoleNames { gateway, tenant, profiles })
    }
}

impl Render {
    async fn event(&mut self, e: &Entry, json: Option<&str>) -> Event {
        match self {
            Render::Entry => match json {
                // The JSON was made once, at publish, for every subscriber.
                Some(json) => Event::default().id(e.seq.to_string()).event(e.kind.clone()).data(json),
                None => event_of(e),
            },
            Render::Console(names) => {
                let known = |id: &ProfileId| names.profiles.iter().any(|p| &p.id == id);
                if e.profile_id.as_ref().is_some_and(|id| !known(id))
                    && let Ok(fresh) = names.gateway.profiles(&names.tenant).await
                {
                    names.profiles = fresh;
                }
                let row = app::api::console::activity_row(e.clone(), &names.profiles);
                Event::default()
                    .id(e.seq.to_string())
                    .json_data(&row)
                    .unwrap_or_else(|_| Event::default().comment("unserializable entry"))
            }
        }
    }
}

/// Opens a feed of `tenant`'s activity (one profile's, when given), resuming after the
/// request's `Last-Event-ID`.
pub async fn open(
    state: &AppState,
    tenant: gateway::TenantId,
    profile: Option<ProfileId>,
    headers: &HeaderMap,
    render: Render,
) -> Result<Response, Problem> {
    let permit = state.subscribers.clone().try_acquire_owned().map_err(|_| {
        Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "too_many_subscribers",
            "the event stream is at capacity; retry in a minute",
        )
    })?;
    let last: Option<i64> =
        headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok());
    // Subscribe first, then read what was missed: the bus holds anything committed meanwhile.
    let sub = state.gateway.bus().subscribe(tenant.clone());
    let mut backlog = VecDeque::new();
    let mut last_sent = last.unwrap_or(0);
    if let Some(after) = last {
        let mut cursor = after;
        loop {
            let page = state
                .gateway
                .log(
                    &tenant,
                    &LogQuery {
                        profile: profile.clone(),
                        after: Some(cursor),
                        before: None,
                        limit: Some(MAX_PAGE),
                    },
                )
                .await?;
            let Some(tail) = page.last() else { break };
            cursor = tail.seq;
            let full = page.len() as i64 == MAX_PAGE;
            backlog.extend(page);
            if !full {
                break;
            }
        }
    } else {
        // A fresh subscriber starts from now: nothing before the latest entry is replayed.
        last_sent = state
            .gateway
            .log(&tenant, &LogQuery { limit: Some(1), ..Default::default() })
            .await?
            .first()
            .map_or(0, |e| e.seq);
    }
    let feed = Feed {
        sub,
        profile,
        backlog,
        last_sent,
        done: false,
        render,
        stopping: state.stopping.clone(),
        _permit: permit,
    };
    Ok(Sse::new(events(feed))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(HEARTBEAT_SECS)).text("heartbeat"))
        .into_response())
}

fn events(feed: Feed) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold(feed, |mut f| async move {
        if f.done {
            return None;
        }
        if let Some(e) = f.backlog.pop_front() {
            f.last_sent = e.seq;
            let ev = f.render.event(&e, None).await;
            return Some((Ok(ev), f));
        }
        loop {
            let next = tokio::select! {
                item = f.sub.next() => item,
                _ = f.stopping.wait_for(|stop| *stop) => None,
            };
            match next {
                Some(BusItem::Event(p)) => {
                    let e = &p.entry;
                    if e.seq <= f.last_sent
                        || f.profile.as_ref().is_some_and(|want| e.profile_id.as_ref() != Some(want))
                    {
                        continue;
                    }
                    f.last_sent = e.seq;
                    let ev = f.render.event(e, Some(p.json.as_str())).await;
                    return Some((Ok(ev), f));
                }
                Some(BusItem::Lagged { missed }) => {
                    f.done = true;
                    let ev = Event::default()
                        .event("lagged")
                        .data(format!("{{\"missed\":{missed},\"resume_after\":{}}}", f.last_sent));
                    return Some((Ok(ev), f));
                }
                None => return None,
            }
        }
    })
}
