//! The activity log's vocabulary: what kind of thing happened ([`Kind`]), how it ended
//! ([`Verdict`]), how the request came ([`Transport`]) and who did it ([`Actor`]).
//!
//! The gateway writes these, the bus and the webhooks read them, `/v1` and the event stream send
//! them and the console (in the browser too) filters and shows them: one type each, so a new
//! kind or verdict is a compile error wherever it is not handled. Each is stored and sent as the
//! snake_case string [`Kind::as_str`] (and its siblings) returns, and read back with a closed
//! parse: a string outside the set is `None`, never a default.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Declares a closed string enum: the variants, their strings, `ALL`, `as_str` and `parse`.
/// serde uses the same strings (a test checks that each variant serializes as `as_str`).
macro_rules! closed {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal,)+ }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($(#[$vm])* $v,)+ }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$v,)+];

            /// The stored and sent form.
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$v => $s,)+ }
            }

            /// The value `s` names, or `None` for any other string.
            pub fn parse(s: &str) -> Option<$name> {
                match s { $($s => Some($name::$v),)+ _ => None }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

closed! {
    /// What kind of thing happened.
    Kind {
        /// A governed action ran.
        Action = "action",
        /// A governed action was refused or unavailable.
        Refusal = "refusal",
        /// A governed action was parked for approval.
        Park = "park",
        /// A hold ended (posted, voided, expired) outside the call that made it.
        Hold = "hold",
        /// An approval was approved, denied or expired.
        Approval = "approval",
        /// A new AccountKit version was saved.
        KitEdit = "kit_edit",
        /// An agent key or a company key was issued, rotated or revoked.
        Key = "key",
        /// An agent profile was revoked, with its descendants.
        Revoke = "revoke",
        /// An agent wrote proposals back to the brain.
        Writeback = "writeback",
        /// A proposal was accepted, rejected or parked.
        Proposal = "proposal",
        /// An agent profile changed state (its team runtime stopped it).
        Profile = "profile",
        /// A console sign-in or sign-out, a user added or their roles changed.
        Console = "console",
        /// A tenant's connectors, connected apps, runtimes, webhooks, log streams or outbox changed.
        Connector = "connector",
        /// A secret was stored in or deleted from a tenant's vault (never its value).
        Vault = "vault",
        /// The tenant's time zone or its own rate limit changed.
        Settings = "settings",
        /// A kit's shadow draft decided a governed call differently from the live kit.
        Shadow = "shadow",
    }
}

closed! {
    /// How an entry ended: the decision for a governed call, what happened for everything else.
    Verdict {
        /// A governed call or a writeback was allowed.
        Allow = "allow",
        /// A governed call or a proposal was refused by the rules.
        Deny = "deny",
        /// A governed call or an accept was parked for a human.
        Park = "park",
        /// A governed call could not be carried out (the connector or its egress failed).
        Unavailable = "unavailable",
        /// An approval was approved.
        Approved = "approved",
        /// An approval was denied.
        Denied = "denied",
        /// An approved call was refused when it ran again at approval.
        Refused = "refused",
        /// An approval or a hold expired.
        Expired = "expired",
        /// An approver approved a call that needs more approvals still.
        Voted = "voted",
        /// A parked call waited past its rule's escalation: approvers were notified again.
        Escalated = "escalated",
        /// A proposal was accepted into the brain.
        Accepted = "accepted",
        /// A proposal was rejected.
        Rejected = "rejected",
        /// A call lost in a crash was settled from its connector's answer.
        Recovered = "recovered",
        /// A key or a profile was revoked.
        Revoked = "revoked",
        /// A kit version was saved.
        Saved = "saved",
        /// A key was issued.
        Issued = "issued",
        /// A key was rotated.
        Rotated = "rotated",
        /// A console user signed in.
        SignedIn = "signed_in",
        /// A console user signed out.
        SignedOut = "signed_out",
        /// A sign-in as a console user was refused (a wrong password, or a password where the
        /// tenant requires single sign-on).
        SignInFailed = "sign_in_failed",
        /// A team runtime stopped an agent.
        RuntimeStopped = "runtime_stopped",
        /// A team runtime was registered.
        RuntimeRegistered = "runtime_registered",
        /// A team runtime was removed.
        RuntimeRemoved = "runtime_removed",
        /// A console user was added.
        UserAdded = "user_added",
        /// A console user's roles changed.
        RolesChanged = "roles_changed",
        /// An app token was created.
        TokenCreated = "token_created",
        /// An app token was revoked.
        TokenRevoked = "token_revoked",
        /// A webhook endpoint was registered.
        WebhookRegistered = "webhook_registered",
        /// A webhook endpoint was removed.
        WebhookRemoved = "webhook_removed",
        /// A log stream was added.
        StreamAdded = "stream_added",
        /// A log stream was removed.
        StreamRemoved = "stream_removed",
        /// A tenant's Slack app was set.
        SlackConnected = "slack_connected",
        /// A tenant's Slack app was removed.
        SlackRemoved = "slack_removed",
        /// A person linked their Slack user to their console user.
        SlackLinked = "slack_linked",
        /// A Slack user's link to a console user was removed.
        SlackUnlinked = "slack_unlinked",
        /// A connector target now uses the sandbox.
        Sandbox = "sandbox",
        /// A connector target now calls an HTTP service.
        Http = "http",
        /// A connected MCP app was stored.
        Mcp = "mcp",
        /// A connected app was removed.
        Removed = "removed",
        /// A vault secret was stored for the first time.
        Created = "created",
        /// A vault secret's value was replaced.
        Replaced = "replaced",
        /// A tenant setting was changed (a time zone change names when it takes effect).
        Changed = "changed",
        /// A vault secret was deleted.
        Deleted = "deleted",
        /// A team runtime refused a command for good.
        CommandRejected = "command_rejected",
        /// An outbox message ran out of attempts and was kept as a dead letter.
        DeadLetter = "dead_letter",
        /// An admin queued a dead letter again.
        DeadLetterRetried = "dead_letter_retried",
        /// An admin purged an endpoint's backlog.
        BacklogPurged = "backlog_purged",
    }
}

closed! {
    /// How the request that caused an entry reached the gateway.
    Transport {
        /// `/v1`.
        Http = "http",
        /// `/mcp`.
        Mcp = "mcp",
        /// The console's pages and forms.
        Console = "console",
        /// A button or form in a Slack message (the interactivity endpoint).
        Slack = "slack",
    }
}

impl Default for Transport {
    /// A caller that does not say came by `/v1`.
    fn default() -> Transport {
        Transport::Http
    }
}

/// Who did what an entry records.
///
/// Stored as one string: the three reserved names, an agent's profile id (`prf_…`), or a
/// console username. Usernames may not take a reserved name or the profile prefix
/// ([`Actor::is_reserved`]), so every stored string reads back as what wrote it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Actor {
    /// The gateway itself: the sweeper, recovery, upgrades, the command line.
    System,
    /// The tenant's company key, over `/v1`.
    CompanyKey,
    /// The demo agent minting and revoking its keys inside the server.
    DemoAgent,
    /// An agent, by its profile id.
    Agent(String),
    /// A console user, by username.
    User(String),
}

impl Actor {
    pub const SYSTEM: &'static str = "system";
    pub const COMPANY_KEY: &'static str = "company-key";
    pub const DEMO_AGENT: &'static str = "demo-agent";
    /// The prefix of every agent profile id.
    pub const AGENT_PREFIX: &'static str = "prf_";

    /// The stored and sent form.
    pub fn as_str(&self) -> &str {
        match self {
            Actor::System => Self::SYSTEM,
            Actor::CompanyKey => Self::COMPANY_KEY,
            Actor::DemoAgent => Self::DEMO_AGENT,
            Actor::Agent(s) | Actor::User(s) => s,
        }
    }

    /// The actor a stored string names; `None` for the empty string.
    pub fn parse(s: &str) -> Option<Actor> {
        Some(match s {
            "" => return None,
            Self::SYSTEM => Actor::System,
            Self::COMPANY_KEY => Actor::CompanyKey,
            Self::DEMO_AGENT => Actor::DemoAgent,
            _ if s.starts_with(Self::AGENT_PREFIX) => Actor::Agent(s.to_string()),
            _ => Actor::User(s.to_string()),
        })
    }

    /// Whether a would-be username would read back as someone else.
    pub fn is_reserved(name: &str) -> bool {
        !matches!(Actor::parse(name), Some(Actor::User(_)))
    }

    /// The transport an administrator's change came by, from who made it: the company key
    /// exists only on `/v1` and a console user only in the console; the gateway's own work and
    /// the demo agent came by none.
    pub fn transport(&self) -> Option<Transport> {
        match self {
            Actor::CompanyKey => Some(Transport::Http),
            Actor::User(_) => Some(Transport::Console),
            Actor::System | Actor::DemoAgent | Actor::Agent(_) => None,
        }
    }
}

impl From<&str> for Actor {
    /// A name from the gateway's own code; the empty string (never written) reads as a user.
    fn from(s: &str) -> Actor {
        Actor::parse(s).unwrap_or_else(|| Actor::User(String::new()))
    }
}

impl From<&String> for Actor {
    fn from(s: &String) -> Actor {
        Actor::from(s.as_str())
    }
}

impl From<String> for Actor {
    fn from(s: String) -> Actor {
        Actor::from(s.as_str())
    }
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Actor {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Actor {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Actor, D::Error> {
        let s = String::deserialize(d)?;
        Actor::parse(&s).ok_or_else(|| serde::de::Error::custom("an actor is a non-empty string"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trips<T: Serialize + for<'de> Deserialize<'de> + PartialEq + fmt::Debug>(v: T, s: &str) {
        assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{s}\""));
        assert_eq!(serde_json::from_str::<T>(&format!("\"{s}\"")).unwrap(), v);
    }

    #[test]
    fn serde_and_the_stored_strings_agree() {
        for k in Kind::ALL {
            round_trips(*k, k.as_str());
            assert_eq!(Kind::parse(k.as_str()), Some(*k));
        }
        for v in Verdict::ALL {
            round_trips(*v, v.as_str());
            assert_eq!(Verdict::parse(v.as_str()), Some(*v));
        }
        for t in Transport::ALL {
            round_trips(*t, t.as_str());
            assert_eq!(Transport::parse(t.as_str()), Some(*t));
        }
    }

    #[test]
    fn the_parse_is_closed() {
        assert_eq!(Kind::parse("Action"), None);
        assert_eq!(Verdict::parse("allowed"), None);
        assert_eq!(Transport::parse(""), None);
        assert!(serde_json::from_str::<Kind>("\"kit-edit\"").is_err());
        assert!(serde_json::from_str::<Actor>("\"\"").is_err());
    }

    #[test]
    fn actors_read_back_as_what_wrote_them() {
        for a in [
            Actor::System,
            Actor::CompanyKey,
            Actor::DemoAgent,
            Actor::Agent("prf_0190".into()),
            Actor::User("ada@example.com".into()),
        ] {
            assert_eq!(Actor::parse(a.as_str()), Some(a.clone()));
            round_trips(a.clone(), a.as_str());
        }
        for name in ["system", "company-key", "demo-agent", "prf_x"] {
            assert!(Actor::is_reserved(name), "{name}");
        }
        assert!(!Actor::is_reserved("prf"));
        assert_eq!(Actor::CompanyKey.transport(), Some(Transport::Http));
        assert_eq!(Actor::User("ada".into()).transport(), Some(Transport::Console));
        assert_eq!(Actor::System.transport(), None);
    }
}
