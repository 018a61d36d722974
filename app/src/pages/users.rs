//! Console users (`/users`, admins only): who may sign in and with which roles, and the groups
//! approval rules name ("one of the approvers from treasury"). Adding a user, changing roles
//! and managing groups are plain form posts; a tenant always keeps at least one admin, and a
//! group a kit names stays until the kit changes. Single sign-on has its own section
//! ([`crate::pages::sso`]).

use leptos::prelude::*;

use crate::api::users::{GroupRow, list_groups, list_users};
use crate::components::common::{
    CARD, FormOutcome, INPUT, Loading, PageHeader, TABLE, TD, TH, THEAD, TR, Time, show,
};

const ROLES: [(&str, &str); 4] = [
    ("admin", "kits, profiles, keys, revoke, users"),
    ("approver", "parked actions"),
    ("reviewer", "brain proposals"),
    ("finance", "spend and caps; read-only elsewhere"),
];

#[component]
pub fn UsersPage() -> impl IntoView {
    let data = Resource::new(|| (), |_| list_users());
    // Made here, once, and shown inside the list's Suspense (only when the list loads, so a
    // user the page refuses sees one refusal): a resource made inside a Suspend is made again
    // when the Suspend renders once more, and a second read of a secret shown once finds nothing.
    let sso = crate::pages::sso::sso_data();
    let clients = crate::pages::connect::client_settings_data();
    view! {
        <PageHeader title="Console users" subtitle="Who may sign in to the console, and what each may do. Every decision is recorded with the deciding user." />
        <FormOutcome />
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                show(data.await, |users| view! {
                    <div class=CARD tabindex="0">
                        <table class=TABLE data-testid="users-table">
                            <thead class=THEAD>
                                <tr>
                                    <th class=TH>"User"</th>
                                    <th class=TH>"Roles"</th>
                                    <th class=TH>"Added"</th>
                                </tr>
                            </thead>
                            <tbody>
                                {users.into_iter().map(|u| {
                                    let name = u.username.clone();
                                    view! {
                                    <tr class=TR data-user=name>
                                        <td class=TD><span class="font-medium">{u.username}</span></td>
                                        <td class=TD>
                                            <form method="post" action="/api/set_roles" class="flex flex-wrap items-center gap-3">
                                                <input type="hidden" name="user_id" value=u.id />
                                                {ROLES.iter().map(|(role, _)| {
                                                    let on = u.roles.iter().any(|r| r == role);
                                                    view! {
                                                        <label class="flex items-center gap-1 text-sm">
                                                            <input type="checkbox" name=*role checked=on />{*role}
                                                        </label>
                                                    }
                                                }).collect_view()}
                                                <button type="submit" data-testid="save-roles" class="rounded border border-zinc-300 px-2 py-0.5 text-xs dark:border-zinc-700">"Save"</button>
                                            </form>
                                        </td>
                                        <td class=TD><Time rfc3339=u.created_at /></td>
                                    </tr>
                                }}).collect_view()}
                            </tbody>
                        </table>
                    </div>
                    <Groups />
                    <crate::pages::sso::SingleSignOn data=sso />
                    <crate::pages::connect::ClientSettingsSection data=clients />
                })
            })}
        </Suspense>
        <AddUser />
    }
}

/// The form that adds a console user with a password and roles.
#[component]
fn AddUser() -> impl IntoView {
    view! {
    <form method="post" action="/api/add_user" class="mt-6 max-w-xl space-y-3 rounded-lg border border-zinc-200 bg-white p-4 dark:border-zinc-800 dark:bg-zinc-900" data-testid="add-user">
        <h2 class="text-sm font-semibold">"Add a console user"</h2>
        <div class="flex flex-wrap gap-3">
            <label class="flex flex-col text-sm">
                <span class="text-zinc-600 dark:text-zinc-300">"Username"</span>
                <input name="username" required pattern="[a-z0-9._@-]{1,64}" title="lowercase letters, digits or . _ - @" class=INPUT />
            </label>
            <label class="flex flex-col text-sm">
                <span class="text-zinc-600 dark:text-zinc-300">"Password"</span>
                <input name="password" type="password" required minlength="8" autocomplete="new-password" class=INPUT />
            </label>
        </div>
        <fieldset class="space-y-1">
            <legend class="text-sm text-zinc-600 dark:text-zinc-300">"Roles"</legend>
            {ROLES.iter().map(|(role, what)| view! {
                <label class="flex items-center gap-2 text-sm">
                    <input type="checkbox" name=*role />
                    <span class="font-medium">{*role}</span>
                    <span class="text-zinc-500 dark:text-zinc-400">{*what}</span>
                </label>
            }).collect_view()}
        </fieldset>
        <button type="submit" class="rounded bg-zinc-900 px-3 py-1.5 text-sm font-medium text-white dark:bg-zinc-100 dark:text-zinc-900">"Add user"</button>
    </form>
    }
}

const SMALL: &str = "rounded border border-zinc-300 px-2 py-0.5 text-xs dark:border-zinc-700";

/// The tenant's groups: their members, adding and removing one, a new group, deleting one.
#[component]
fn Groups() -> impl IntoView {
    let data = Resource::new(
        || (),
        |_| async { Ok::<_, ServerFnError>((list_groups().await?, list_users().await?)) },
    );
    view! {
        <section class="mt-8" data-testid="groups">
            <h2 class="mb-1 text-base font-semibold">"Groups"</h2>
            <p class="mb-3 text-sm text-zinc-500 dark:text-zinc-400">"An approval rule may ask that one of its approvers be in a group (for example treasury for large wires); a group's members may then decide those calls even without the approver role."</p>
            <Suspense fallback=Loading>
                {move || Suspend::new(async move {
                    show(data.await, |(groups, users)| {
                        let names: Vec<String> = users.into_iter().map(|u| u.username).collect();
                        view! {
                            <div class="space-y-3">
                                {groups.into_iter().map(|g| view! { <GroupCard g names=names.clone() /> }).collect_view()}
                            </div>
                        }
                    })
                })}
            </Suspense>
            <form method="post" action="/api/create_group" class="mt-3 flex items-end gap-2" data-testid="create-group">
                <label class="flex flex-col text-sm">
                    <span class="text-zinc-600 dark:text-zinc-300">"New group"</span>
                    <input name="name" required pattern="[a-z0-9_\\-]{1,64}" title="lowercase letters, digits, - and _" placeholder="treasury" class=INPUT />
                </label>
                <button type="submit" class="rounded bg-zinc-900 px-3 py-1.5 text-sm font-medium text-white dark:bg-zinc-100 dark:text-zinc-900">"Add group"</button>
            </form>
        </section>
    }
}

#[component]
fn GroupCard(g: GroupRow, names: Vec<String>) -> impl IntoView {
    let others: Vec<String> = names.into_iter().filter(|n| !g.members.contains(n)).collect();
    let group = g.name.clone();
    let (label, key, delete, add) = (g.name.clone(), g.name.clone(), g.name.clone(), g.name.clone());
    view! {
        <div class="rounded-lg border border-zinc-200 bg-white p-3 text-sm dark:border-zinc-800 dark:bg-zinc-900" data-group=key>
            <div class="flex items-center justify-between">
                <span class="font-medium">{label}</span>
                <form method="post" action="/api/delete_group">
                    <input type="hidden" name="name" value=delete />
                    <button type="submit" class=SMALL data-testid="delete-group">"Delete group"</button>
                </form>
            </div>
            <ul class="mt-2 flex flex-wrap gap-2">
                {g.members.into_iter().map(|m| {
                    let group = group.clone();
                    let (key, label) = (m.clone(), m.clone());
                    view! {
                        <li class="flex items-center gap-1 rounded bg-zinc-100 px-2 py-0.5 dark:bg-zinc-800" data-member=key>
                            {label}
                            <form method="post" action="/api/group_member">
                                <input type="hidden" name="group" value=group />
                                <input type="hidden" name="username" value=m />
                                <input type="hidden" name="change" value="remove" />
                                <button type="submit" aria-label="Remove from the group" class="text-zinc-500">"×"</button>
                            </form>
                        </li>
                    }
                }).collect_view()}
            </ul>
            <form method="post" action="/api/group_member" class="mt-2 flex gap-2">
                <input type="hidden" name="group" value=add />
                <input type="hidden" name="change" value="add" />
                <select name="username" aria-label="User to add" class=INPUT>
                    {others.into_iter().map(|n| { let v = n.clone(); view! { <option value=v>{n}</option> } }).collect_view()}
                </select>
                <button type="submit" class=SMALL data-testid="add-member">"Add to group"</button>
            </form>
        </div>
    }
}
