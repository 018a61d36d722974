//! Who acts: an agent calling with a scoped key ([`Subject`]) or a human deciding with a
//! console session or a personal token ([`Human`]), and which roles may decide what. Every
//! operation that takes a decider checks its roles here, so `/v1`, MCP and the console cannot
//! differ.

use serde::{Deserialize, Serialize};

use crate::audit::activity::Transport;
use crate::domain::users::{ConsoleUser, Role};
use crate::error::{Error, Result};
use crate::ids::{ConnectionId, KeyId, ProfileId, TenantId, UserId};

/// Who is calling: resolved from a scoped key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    pub tenant: TenantId,
    pub profile: ProfileId,
    pub key: KeyId,
    /// The transport this request came by, which the entries it causes record.
    #[serde(default)]
    pub via: Transport,
    /// The OAuth connection whose access token this is ([`crate::domain::oauth`]): such a
    /// token is good at `/mcp` only, and the entries its calls leave name the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<Connected>,
}

/// An entry an agent's call leaves: its transport and, through an OAuth connection, the
/// connection and its client (`NewEntry::connected`).
pub(crate) trait ByAgent {
    fn by(self, s: &Subject) -> Self;
}

impl ByAgent for crate::audit::activity::NewEntry {
    fn by(self, s: &Subject) -> Self {
        let connected = s.connection.as_ref().map(|c| (c.id.to_string(), c.client.clone()));
        self.via(s.via).connected(connected)
    }
}

/// The OAuth connection a call came through: its id and its client's name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connected {
    pub id: ConnectionId,
    pub client: String,
}

impl Subject {
    /// An agent calling with `key` over HTTP, not through an OAuth connection.
    pub fn of(tenant: &TenantId, profile: &ProfileId, key: KeyId) -> Subject {
        Subject {
            tenant: tenant.clone(),
            profile: profile.clone(),
            key,
            via: Transport::Http,
            connection: None,
        }
    }
}

/// A human deciding: a console user, and the credential they decided with (the console
/// session, or one of their personal API tokens), which the trail records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Human {
    /// The console user's id.
    pub user_id: UserId,
    pub username: String,
    /// How the decision arrived: `console session` or `token tok_…`.
    pub credential: String,
    /// The transport it came by.
    pub via: Transport,
    /// The roles the credential carries: a personal token's are at most its owner's.
    pub roles: Vec<Role>,
    /// Whether the credential acts for the user's approval groups: a console session does, a
    /// personal token only when it was given them.
    pub groups: bool,
}

/// Who may decide a parked call.
pub const APPROVERS: &[Role] = &[Role::Approver, Role::Admin];
/// Who may decide a brain proposal.
pub const REVIEWERS: &[Role] = &[Role::Reviewer, Role::Admin];

impl Human {
    /// A console user deciding in the console, signed in with a session.
    pub fn in_console(user: &ConsoleUser) -> Human {
        Human {
            user_id: user.id.clone(),
            username: user.username.clone(),
            credential: "console session".into(),
            via: Transport::Console,
            roles: user.roles.clone(),
            groups: true,
        }
    }

    /// A console user deciding by a button in Slack, as the Slack user linked to them
    /// (`@alice (U0ALICE)`) in `channel`: their roles and groups, as in the console.
    pub fn in_slack(user: &ConsoleUser, slack_user: &str, channel: &str) -> Human {
        Human {
            user_id: user.id.clone(),
            username: user.username.clone(),
            credential: format!("Slack {slack_user} in {channel}"),
            via: Transport::Slack,
            roles: user.roles.clone(),
            groups: true,
        }
    }

    /// Refuses with `role_required` unless the credential carries one of `roles`.
    pub fn require(&self, roles: &[Role]) -> Result<()> {
        if self.roles.iter().any(|r| roles.contains(r)) {
            return Ok(());
        }
        let names: Vec<&str> = roles.iter().map(|r| r.as_str()).collect();
        Err(Error::Forbidden {
            code: "role_required",
            message: format!(
                "{} ({}) needs one of these roles: {}",
                self.username,
                self.credential,
                names.join(", ")
            ),
        })
    }
}
