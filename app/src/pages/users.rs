//! Console users (`/users`, admins only): who may sign in and with which roles. Adding a user
//! and changing roles are plain form posts; a tenant always keeps at least one admin.

use leptos::prelude::*;

use crate::api::users::list_users;
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
                })
            })}
        </Suspense>
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
