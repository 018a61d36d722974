//! `GET /v1/events`: the activity stream as Server-Sent Events (docs/architecture.md#the-activity-log).
//!
//! Each event's `id` is its activity-log sequence number. A client that reconnects with
//! `Last-Event-ID` first gets what it missed, read back from the log, then the live stream;
//! nothing is lost while the gap is in the log. The subscription is taken before the backfill
//! is read and events already sent are skipped, so the hand-over drops and repeats nothing.
//! A comment heartbeat keeps idle connections open. Subscribers are bounded; a subscriber too
//! slow for the bus gets one `lagged` event and is closed, so it never holds up writers.
//! The company key sees its tenant's events; an agent sees its own profile's. A stream lives
//! only as long as its credential: revoking the key, the profile (or an ancestor), the company
//! key or ending the console session closes it.

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
use gateway::audit::activity::{Entry, LogQuery, MAX_PAGE};
use gateway::audit::bus::{BusItem, Subscription};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::http::auth::Caller;
use crate::http::problem::Problem;
use crate::state::AppState;

/// The most concurrent event-stream subscribers one server holds.
pub const MAX_SUBSCRIBERS: usize = 4_096;
/// How often an idle stream gets a heartbeat comment.
const HEARTBEAT_SECS: u64 = 15;
/// How often a quiet stream checks its credential anyway (a rotated key's grace period ends
/// without anyone revoking anything).
const RECHECK_SECS: u64 = 15;

/// The subscriber bound, shared by every request.
pub fn subscriber_limit() -> Arc<Semaphore> {
    Arc::new(Semaphore::new(MAX_SUBSCRIBERS))
}

struct Feed {
    gateway: gateway::Gateway,
    tenant: gateway::TenantId,
    /// `None` while catching up from the log; the live subscription once caught up.
    sub: Option<Subscription>,
    profile: Option<ProfileId>,
    /// At most one page of the log, read when the previous one has been sent.
    backlog: VecDeque<Entry>,
    last_sent: i64,
    done: bool,
    render: Render,
    stopping: tokio::sync::watch::Receiver<bool>,
    /// The credential the stream was opened with, checked again whenever one may have
    /// stopped being valid, so a revoke closes the stream.
    holder: Holder,
    changes: tokio::sync::watch::Receiver<u64>,
    _permit: OwnedSemaphorePermit,
}

fn event_of(e: &Entry) -> Event {
    Event::default()
        .id(e.seq.to_string())
        .event(e.kind.as_str())
        .json_data(e)
        .unwrap_or_else(|_| Event::default().comment("unserializable entry"))
}

/// Whose stream this is.
pub enum Holder {
    Credential(gateway::Credential),
    /// A console session, by its cookie's token.
    Session(String),
}

impl Holder {
    async fn still_valid(&self, gw: &gateway::Gateway) -> bool {
        match self {
            Holder::Credential(c) => gw.still_valid(c).await.unwrap_or(false),
            Holder::Session(token) => matches!(gw.session_user(token).await, Ok(Some(_))),
        }
    }
}

#[utoipa::path(get, path = "/v1/events", tag = "activity",
    params(("Last-Event-ID" = Option<i64>, Header, description = "Resume after this event id.")),
    responses((status = 200, description = "Server-Sent Events of the activity log: each event's id is its sequence number, its name the entry's kind, its data the entry.", content_type = "text/event-stream", body = crate::v1::dto::SseFrame),
        (status = 403, description = "The agent's profile is revoked.", body = policy::Envelope, content_type = "application/json")))]
pub async fn stream(
    State(state): State<AppState>,
    caller: Caller,
    axum::Extension(resolved): axum::Extension<crate::http::auth::Resolved>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    let profile = match &caller {
        Caller::Agent(s) => Some(s.profile.clone()),
        Caller::Company(_) => None,
    };
    let holder = Holder::Credential(resolved.credential().ok_or_else(|| {
        Problem::new(
            StatusCode::FORBIDDEN,
            "company_key_required",
            "the event stream takes an agent's key or the company key",
        )
    })?);
    open(&state, caller.tenant().clone(), profile, holder, &headers, Render::Entry).await
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
                Some(json) => Event::default().id(e.seq.to_string()).event(e.kind.as_str()).data(json),
                None => event_of(e),
            },
            Render::Console(names) => {
                let known = |id: &ProfileId| names.profiles.iter().any(|p| &p.id == id);
                if e.profile_id.as_ref().is_some_and(|id| !known(id))
                    && let Ok(fresh) = names.gateway.profiles(&names.tenant).await
                {
                    names.profiles = fresh;
                }
                let row = app::api::activity::activity_row(e.clone(), &names.profiles);
                Event::default()
                    .id(e.seq.to_string())
                    .json_data(&row)
                    .unwrap_or_else(|_| Event::default().comment("unserializable entry"))
            }
        }
    }
}

/// Opens a feed of `tenant`'s activity (one profile's, when given), resuming after the
/// request's `Last-Event-ID`. A resuming feed catches up from the log a page at a time, and
/// subscribes to the live bus only once it has caught up (reading the log once more after
/// subscribing, so the hand-over drops and repeats nothing): its memory is one page, however
/// far back it resumes.
pub async fn open(
    state: &AppState,
    tenant: gateway::TenantId,
    profile: Option<ProfileId>,
    holder: Holder,
    headers: &HeaderMap,
    render: Render,
) -> Result<Response, Problem> {
    let permit = state.subscribers.clone().try_acquire_owned().map_err(|_| {
        let mut p = Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "too_many_subscribers",
            "the event stream is at capacity; retry in a minute",
        );
        p.retry_after_secs = Some(60);
        p
    })?;
    let last: Option<i64> = match headers.get("last-event-id") {
        None => None,
        Some(v) => Some(v.to_str().ok().and_then(|v| v.trim().parse().ok()).ok_or_else(|| {
            Problem::new(
                StatusCode::BAD_REQUEST,
                "invalid_last_event_id",
                "Last-Event-ID is the id of an event this stream sent (a whole number); leave it out to start from now",
            )
        })?),
    };
    let (sub, last_sent) = match last {
        Some(after) => (None, after),
        // A fresh subscriber starts from now: nothing before the latest entry is replayed.
        None => {
            let sub = state.gateway.bus().subscribe(tenant.clone());
            let latest =
                state.gateway.log(&tenant, &LogQuery { limit: Some(1), ..Default::default() }).await?;
            (Some(sub), latest.first().map_or(0, |e| e.seq))
        }
    };
    let feed = Feed {
        gateway: state.gateway.clone(),
        tenant,
        sub,
        profile,
        backlog: VecDeque::new(),
        last_sent,
        done: false,
        render,
        stopping: state.stopping.clone(),
        holder,
        changes: state.gateway.credential_changes(),
        _permit: permit,
    };
    Ok(Sse::new(events(feed))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(HEARTBEAT_SECS)).text("heartbeat"))
        .into_response())
}

impl Feed {
    /// The page of the log after what was sent.
    async fn page(&self) -> Result<Vec<Entry>, gateway::Error> {
        let q = LogQuery {
            profile: self.profile.clone(),
            after: Some(self.last_sent),
            before: None,
            limit: Some(MAX_PAGE),
        };
        self.gateway.log(&self.tenant, &q).await
    }

    /// Refills the backlog while catching up; subscribes once the log has no full page left.
    async fn catch_up(&mut self) -> Result<(), gateway::Error> {
        let page = self.page().await?;
        if page.len() as i64 == MAX_PAGE {
            self.backlog.extend(page);
            return Ok(());
        }
        // Subscribe first, then read what was committed meanwhile: the bus holds the rest.
        self.sub = Some(self.gateway.bus().subscribe(self.tenant.clone()));
        let page = self.page().await?;
        if page.len() as i64 == MAX_PAGE {
            self.sub = None;
        }
        self.backlog.extend(page);
        Ok(())
    }

    /// Whether the stream's credential still holds, checked when one may have changed.
    async fn credential_holds(&mut self) -> bool {
        if !self.changes.has_changed().unwrap_or(false) {
            return true;
        }
        self.changes.mark_unchanged();
        self.holder.still_valid(&self.gateway).await
    }
}

fn events(feed: Feed) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold(feed, |mut f| async move {
        loop {
            if f.done || *f.stopping.borrow() || !f.credential_holds().await {
                return None;
            }
            if let Some(e) = f.backlog.pop_front() {
                f.last_sent = e.seq;
                let ev = f.render.event(&e, None).await;
                return Some((Ok(ev), f));
            }
            if f.sub.is_none() {
                if f.catch_up().await.is_err() {
                    return None;
                }
                continue;
            }
            let sub = f.sub.as_mut().expect("subscribed once caught up");
            let woke = tokio::select! {
                item = sub.next() => Some(item),
                _ = f.stopping.wait_for(|stop| *stop) => Some(None),
                // A credential may have changed, or a quiet stream's is due a look.
                _ = f.changes.changed() => None,
                _ = tokio::time::sleep(Duration::from_secs(RECHECK_SECS)) => None,
            };
            let Some(next) = woke else {
                if f.holder.still_valid(&f.gateway).await {
                    continue;
                }
                return None;
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
                    let ev = f.render.event(e, Some(p.json())).await;
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
