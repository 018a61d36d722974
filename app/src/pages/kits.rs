//! Kits: each AccountKit's current version, its primitives and limits, and its history with
//! what every edit widened and narrowed; and `/kits/:name`, the editor with its simulator.

use leptos::prelude::*;
use leptos_router::hooks::use_params_map;
use policy::Primitive;

use crate::api::kits::kit_editor;
use crate::api::kits::{KitSummary, KitVersionRow, list_kits};
use crate::api::replay::kit_shadow;
use crate::api::session::encode_query_value;
use crate::components::common::{CARD, EmptyState, FormOutcome, Loading, MoneyCell, PageHeader, Time, show};
use crate::components::kit_editor::{DiffList, KitEditor};
use crate::pages::replay::ShadowPanel;

#[component]
pub fn KitsPage() -> impl IntoView {
    let data = Resource::new(|| (), |_| list_kits());
    view! {
        <PageHeader title="Kits" subtitle="The AccountKits that decide what each agent may do. Every edit is a new version." />
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                show(data.await, |kits| {
                    if kits.is_empty() {
                        return view! { <EmptyState title="No kits" detail="Every tenant starts with the permissive Default kit." /> }.into_any();
                    }
                    kits.into_iter().map(|k| view! { <KitCard summary=k /> }).collect_view().into_any()
                })
            })}
        </Suspense>
    }
}

#[component]
fn KitCard(summary: KitSummary) -> impl IntoView {
    let kit = summary.current.kit.clone();
    let limits = kit.limits.clone();
    view! {
        <section class=format!("{CARD} mb-4 p-4") data-testid="kit-card">
            <div class="flex flex-wrap items-baseline justify-between gap-2">
                <h2 class="text-base font-semibold">
                    <a class="underline decoration-zinc-300 hover:decoration-zinc-600" href=format!("/kits/{}", encode_query_value(&kit.name)) data-testid="edit-kit">{kit.name.clone()}</a>
                    <span class="ml-1 text-sm font-normal text-zinc-500 dark:text-zinc-400">{kit.version.to_string()}</span>
                </h2>
                <span class="text-xs text-zinc-500 dark:text-zinc-400">
                    {format!("{} profiles · saved by {} · ", summary.profiles, summary.current.author)}
                    <Time rfc3339=summary.current.created_at.clone() />
                </span>
            </div>
            <div class="mt-3 flex flex-wrap gap-1">
                {Primitive::ALL.into_iter().map(|p| {
                    let on = kit.primitives.contains(p);
                    let class = if on {
                        "rounded bg-emerald-100 px-1.5 py-0.5 text-xs text-emerald-800 dark:bg-emerald-900/50 dark:text-emerald-300"
                    } else {
                        "rounded bg-zinc-100 px-1.5 py-0.5 text-xs text-zinc-600 line-through dark:bg-zinc-800 dark:text-zinc-400"
                    };
                    view! { <span class=class title=if on { "enabled" } else { "disabled" }>{p.as_str()}</span> }
                }).collect_view()}
            </div>
            <dl class="mt-3 grid grid-cols-2 gap-x-6 gap-y-1 text-sm sm:grid-cols-4">
                <div><dt class="text-xs text-zinc-500 dark:text-zinc-400">"Hard cap"</dt><dd><MoneyCell amount=limits.budget.hard_cap /></dd></div>
                <div><dt class="text-xs text-zinc-500 dark:text-zinc-400">"Soft cap"</dt><dd><MoneyCell amount=limits.budget.soft_cap /></dd></div>
                <div><dt class="text-xs text-zinc-500 dark:text-zinc-400">"Approve at or above"</dt><dd><MoneyCell amount=limits.approve.above /></dd></div>
                <div><dt class="text-xs text-zinc-500 dark:text-zinc-400">"Can rules"</dt><dd class="tabular-nums">{kit.can.len()}</dd></div>
            </dl>
            <details class="mt-3 text-sm">
                <summary class="cursor-pointer text-zinc-600 dark:text-zinc-300">{format!("History ({} versions)", summary.history.len())}</summary>
                <KitHistory versions=summary.history />
            </details>
        </section>
    }
}

/// Every version of a kit with its author and what it changed.
#[component]
fn KitHistory(versions: Vec<KitVersionRow>) -> impl IntoView {
    view! {
        <ol class="mt-2 space-y-2" data-testid="kit-history">
            {versions.into_iter().map(|v| view! {
                <li class="border-l-2 border-zinc-200 pl-3 dark:border-zinc-700">
                    <div class="text-xs text-zinc-500 dark:text-zinc-400">
                        {format!("{} by {} · ", v.kit.version, v.author)}<Time rfc3339=v.created_at />
                    </div>
                    {if v.diff.is_empty() {
                        view! { <p class="text-xs text-zinc-500 dark:text-zinc-400">"first version"</p> }.into_any()
                    } else {
                        view! { <div class="text-xs"><DiffList diff=v.diff /></div> }.into_any()
                    }}
                </li>
            }).collect_view()}
        </ol>
    }
}

#[component]
pub fn KitEditPage() -> impl IntoView {
    let params = use_params_map();
    let data = Resource::new(move || params.read().get("name").unwrap_or_default(), kit_editor);
    let shadow = Resource::new(move || params.read().get("name").unwrap_or_default(), kit_shadow);
    view! {
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                let shadow = shadow.await;
                show(data.await, |d| {
                    let kit = d.current.kit.clone();
                    view! {
                        <PageHeader title="Edit kit" subtitle=format!("{} {} · saved by {}", kit.name, kit.version, d.current.author) />
                        <p class="mb-4"><a href="/kits" class="text-sm text-zinc-500 underline dark:text-zinc-400">"← all kits"</a></p>
                        <FormOutcome />
                        <KitEditor current=kit.clone() profiles=d.profiles credit=d.credit can_edit=d.can_edit />
                        {match shadow {
                            Ok(s) => view! { <ShadowPanel name=kit.name.clone() shadow=s /> }.into_any(),
                            Err(e) => view! { <p class="mt-8 text-sm text-red-700 dark:text-red-400" role="alert">{format!("The shadow could not be read: {e}")}</p> }.into_any(),
                        }}
                        <section class="mt-8">
                            <h2 class="text-sm font-semibold">"Version history"</h2>
                            <KitHistory versions=d.history />
                        </section>
                    }
                })
            })}
        </Suspense>
    }
}
