//! Brain governance as operations: an agent's writeback becomes pending proposals, and a
//! proposal is decided (a reject at once, a human's accept canonizes it into a belief, an
//! agent's accept parks it for a human). Brain tools are governed by the kit like any other
//! (`gate`). The proposals, beliefs and writebacks tables are written by
//! [`crate::domain::brain`] alone.

use chrono::Duration;
use policy::Envelope;
use serde_json::{Value, json};

use crate::Gateway;
use crate::audit::activity::{self, Kind, NewEntry, Verdict};
use crate::domain::approvals;
use crate::domain::brain::{
    self, DECIDE_TOOL, Decider, Decision, Proposal, ProposalDecided, ProposalStatus, WritebackAccepted,
    WritebackInput, because, proposer,
};
use crate::domain::calls::{ActionResponse, Answer, Disposition};
use crate::domain::principal::{ByAgent, REVIEWERS, Subject};
use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId};

impl Gateway {
    /// Accepts a writeback envelope: each claim becomes a pending proposal. Governed by the
    /// kit like any brain tool; a refusal comes back as the envelope.
    pub async fn submit_writeback(&self, subject: &Subject, input: WritebackInput) -> Result<ActionResponse> {
        let (run_id, source) = brain::check_writeback(&input)?;
        let spec = self.brain_tool("brain.writeback")?;
        let (s, id) = (subject.clone(), format!("wbk_{}", uuid::Uuid::now_v7().simple()));
        let args = json!({ "run_id": run_id });
        // Decided, counted and recorded in one job: a writeback over a rate limit leaves nothing.
        let recorded = self
            .governed_in_job(subject, (spec, args), true, move |c, inputs| {
                let ids = brain::record_writeback(c, &s, &id, &input, &run_id, &source)?;
                activity::append(
                    c,
                    NewEntry::new(&s.tenant, s.profile.as_str(), Kind::Writeback)
                        .by(&s)
                        .profile(&s.profile)
                        .action("brain.writeback")
                        .verdict(Verdict::Allow)
                        .detail(json!({ "writeback_id": id, "run_id": run_id, "proposals": ids }))
                        .inputs(Some(inputs)),
                )?;
                Ok(id.clone())
            })
            .await?;
        let wid = match recorded {
            Ok(wid) => wid,
            Err(refused) => return Ok(refused),
        };
        let wb = self.writeback(&subject.tenant, &wid).await?;
        Ok(ActionResponse {
            disposition: Disposition::Executed,
            body: Answer::Writeback(Box::new(WritebackAccepted { ok: true, writeback: wb })),
            replayed: false,
        })
    }

    /// Decides whether `subject` may use `tool` right now, as every governed call is decided
    /// (its kit, budgets, periods and rate windows, counted in them), reserving nothing: brain
    /// tools have no price. `None` means go ahead; otherwise the refusal to return.
    pub async fn gate(&self, subject: &Subject, tool: &str, args: &Value) -> Result<Option<ActionResponse>> {
        let spec = self.brain_tool(tool)?;
        Ok(self.governed_in_job(subject, (spec, args.clone()), false, |_, _| Ok(())).await?.err())
    }

    fn brain_tool(&self, tool: &str) -> Result<policy::ToolSpec> {
        self.catalog.get(tool).cloned().ok_or(Error::NotFound { what: "tool" })
    }

    /// Decides a proposal. Reject applies at once; a human's accept canonizes; an agent's
    /// accept parks for a human and answers with the approval to poll.
    pub async fn decide_proposal(
        &self,
        tenant: &TenantId,
        id: &str,
        by: &Decider,
        decision: Decision,
        because_text: &str,
    ) -> Result<ActionResponse> {
        if let Decider::Human(h) = by {
            h.require(REVIEWERS)?;
        }
        let because = because(because_text)?;
        let p = self.proposal(tenant, id).await?;
        let pid = p.id.clone();
        let proposer =
            self.write(move |c| proposer(c, &pid)).await?.ok_or(Error::NotFound { what: "proposal" })?;
        match by {
            Decider::Agent(s) => {
                if &s.tenant != tenant {
                    return Err(Error::NotFound { what: "proposal" });
                }
                if let Some(refused) =
                    self.gate(s, DECIDE_TOOL, &json!({ "proposal_id": id, "decision": decision })).await?
                {
                    return Ok(refused);
                }
                self.ensure_proposer_or_above(s, &proposer).await?;
            }
            Decider::Human(h) => {
                let h = h.clone();
                self.write(move |c| crate::domain::profiles::ensure_not_owner(c, &proposer, &h)).await?;
            }
        }
        if !matches!(p.status, ProposalStatus::Pending | ProposalStatus::Parked) {
            return Err(Error::Conflict {
                code: "proposal_already_decided",
                message: format!("this proposal is already {}", p.status.as_str()),
            });
        }
        let (credential, via) = (by.credential(), by.via());
        match (decision, by) {
            (Decision::Reject, _) => self.reject(tenant, &p.id, by, &because).await,
            (Decision::Accept, Decider::Human(h)) => {
                self.canonize(tenant, &p.id, &h.username, &because, credential.as_deref(), via).await
            }
            (Decision::Accept, Decider::Agent(s)) => self.park_accept(s, &p, &because).await,
        }
    }

    /// Rejects a proposal at once, and denies an agent's accept of it still waiting on a human.
    async fn reject(
        &self,
        tenant: &TenantId,
        id: &str,
        by: &Decider,
        because: &str,
    ) -> Result<ActionResponse> {
        let (t, pid, a, b, cred, via) =
            (tenant.clone(), id.to_string(), by.actor(), because.to_string(), by.credential(), by.via());
        // Keyed by tenant: a parked accept it denies ends a hold, under the tenant's lock first.
        self.write_for(tenant, move |c| {
            brain::mark_rejected(c, &pid, &a, &b, cred.as_deref())?;
            // A parked accept waiting on a human is moot now.
            approvals::deny_accept_of(c, &pid, &a, "proposal rejected")?;
            activity::append(
                c,
                NewEntry::new(&t, &a, Kind::Proposal)
                    .via(via)
                    .action(DECIDE_TOOL)
                    .verdict(Verdict::Rejected)
                    .detail(json!({ "proposal_id": pid, "because": b })),
            )
        })
        .await?;
        Ok(ActionResponse {
            disposition: Disposition::Executed,
            body: decided(self.proposal(tenant, id).await?, None),
            replayed: false,
        })
    }

    /// An agent decides only proposals it made itself or a sub-agent of its made.
    async fn ensure_proposer_or_above(&self, s: &Subject, proposer: &ProfileId) -> Result<()> {
        let chain = self.links(&s.tenant, proposer).await?;
        if chain.iter().any(|l| l.profile == s.profile) {
            return Ok(());
        }
        Err(Error::Forbidden {
            code: "not_the_proposer",
            message: "an agent decides only the proposals it (or one of its sub-agents) made; a human reviewer decides the others".into(),
        })
    }

    async fn park_accept(&self, s: &Subject, p: &Proposal, because: &str) -> Result<ActionResponse> {
        if p.status == ProposalStatus::Parked {
            return Err(Error::Conflict {
                code: "proposal_already_parked",
                message: "an accept for this proposal already waits for a human; poll its approval".into(),
            });
        }
        let links = self.links(&s.tenant, &s.profile).await?;
        let (ttl, now) = (Duration::seconds(self.config.approval_ttl_secs), self.now());
        let (s2, pid, b, kit) = (s.clone(), p.id.clone(), because.to_string(), links[0].kit.clone());
        let (env, _) = self
            .write(move |c| {
                {
                    let args = json!({ "proposal_id": pid, "decision": "accept", "because": b });
                    let opened = approvals::open(
                        c,
                        &approvals::Request {
                            tenant: &s2.tenant,
                            profile: &s2.profile,
                            hold: None,
                            action: DECIDE_TOOL,
                            args: &args,
                            args_digest: &crate::domain::calls::digest(&args),
                            amount: policy::Money::ZERO,
                            kit: &kit,
                            reason: "agent_accept_requires_human",
                            actor: s2.profile.as_str(),
                            note: &b,
                            ttl,
                            quorum: approvals::Quorum::single(),
                            justification: None,
                            traceparent: None,
                            now,
                        },
                    )?;
                    let approval = opened.id.clone();
                    brain::mark_parked(c, &pid, &approval, s2.profile.as_str(), &b)?;
                    let env = Envelope::park_for(
                        DECIDE_TOOL,
                        "agent_accept_requires_human",
                        "Accepting a proposal canonizes it into the company's beliefs, so a human reviewer must decide".into(),
                        opened.handle(),
                    );
                    let e = activity::append(
                        c,
                        NewEntry::new(&s2.tenant, s2.profile.as_str(), Kind::Park)
                            .by(&s2)
                            .profile(&s2.profile)
                            .action(DECIDE_TOOL)
                            .verdict(Verdict::Park)
                            .kit_version(kit.version.0)
                            .detail(json!({ "approval_id": approval, "proposal_id": pid })),
                    )?;
                    Ok((env, vec![e]))
                }
            })
            .await?;
        Ok(ActionResponse {
            disposition: Disposition::Parked,
            body: Answer::Verdict(Box::new(env)),
            replayed: false,
        })
    }

    /// Turns a proposal into a belief, once.
    pub(crate) async fn canonize(
        &self,
        tenant: &TenantId,
        proposal: &str,
        actor: &str,
        because: &str,
        credential: Option<&str>,
        via: crate::audit::activity::Transport,
    ) -> Result<ActionResponse> {
        let (t, pid, a, b) = (tenant.clone(), proposal.to_string(), actor.to_string(), because.to_string());
        let cred = credential.map(str::to_string);
        let (belief, _) = self
            .write_for(tenant, move |c| {
                {
                    let belief = brain::accept(c, &t, &pid)?;
                    // An agent's accept still waiting on a human is settled by this decision.
                    approvals::deny_accept_of(
                        c,
                        &pid,
                        &a,
                        "the proposal was decided directly by a reviewer",
                    )?;
                    brain::step(c, &pid, &a, "accepted", &b, cred.as_deref())?;
                    let e = activity::append(
                        c,
                        NewEntry::new(&t, &a, Kind::Proposal)
                            .via(via)
                            .action(DECIDE_TOOL)
                            .verdict(Verdict::Accepted)
                            .detail(json!({ "proposal_id": pid, "belief_id": belief, "because": b })),
                    )?;
                    Ok((belief, vec![e]))
                }
            })
            .await?;
        Ok(ActionResponse {
            disposition: Disposition::Executed,
            body: decided(self.proposal(tenant, proposal).await?, Some(belief)),
            replayed: false,
        })
    }
}

fn decided(proposal: Proposal, belief_id: Option<String>) -> Answer {
    Answer::Proposal(Box::new(ProposalDecided { ok: true, proposal, belief_id }))
}
