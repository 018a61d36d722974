//! Kits: each AccountKit's current version, its primitives and limits, and its history with
//! what every edit widened and narrowed.

use leptos::prelude::*;
use policy::{Direction, Primitive};

use crate::api::console::{KitSummary, list_kits};
use crate::components::common::{CARD, EmptyState, Loading, MoneyCell, PageHeader, Time, show};

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
                <h2 class="text-base font-semibold">{kit.name.clone()} <span class="ml-1 text-sm font-normal text-zinc-500">{kit.version.to_string()}</span></h2>
                <span class="text-xs text-zinc-500">
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
                        "rounded bg-zinc-100 px-1.5 py-0.5 text-xs text-zinc-400 line-through dark:bg-zinc-800"
                    };
                    view! { <span class=class title=if on { "enabled" } else { "disabled" }>{p.as_str()}</span> }
                }).collect_view()}
            </div>
            <dl class="mt-3 grid grid-cols-2 gap-x-6 gap-y-1 text-sm sm:grid-cols-4">
                <div><dt class="text-xs text-zinc-500">"Hard cap"</dt><dd><MoneyCell amount=limits.budget.hard_cap /></dd></div>
                <div><dt class="text-xs text-zinc-500">"Soft cap"</dt><dd><MoneyCell amount=limits.budget.soft_cap /></dd></div>
                <div><dt class="text-xs text-zinc-500">"Approve at or above"</dt><dd><MoneyCell amount=limits.approve.above /></dd></div>
                <div><dt class="text-xs text-zinc-500">"Can rules"</dt><dd class="tabular-nums">{kit.can.len()}</dd></div>
            </dl>
            <details class="mt-3 text-sm">
                <summary class="cursor-pointer text-zinc-600 dark:text-zinc-300">{format!("History ({} versions)", summary.history.len())}</summary>
                <ol class="mt-2 space-y-2">
                    {summary.history.into_iter().map(|v| view! {
                        <li class="border-l-2 border-zinc-200 pl-3 dark:border-zinc-700">
                            <div class="text-xs text-zinc-500">
                                {format!("{} by {} · ", v.kit.version, v.author)}<Time rfc3339=v.created_at />
                            </div>
                            {if v.diff.is_empty() {
                                view! { <p class="text-xs text-zinc-400">"first version"</p> }.into_any()
                            } else {
                                view! {
                                    <ul class="text-xs">
                                        {v.diff.changes.into_iter().map(|c| {
                                            let (mark, class) = match c.direction {
                                                Direction::Widens => ("▲ widens", "text-amber-700 dark:text-amber-400"),
                                                Direction::Narrows => ("▼ narrows", "text-emerald-700 dark:text-emerald-400"),
                                                Direction::Neutral => ("• ", "text-zinc-500"),
                                            };
                                            view! { <li><span class=format!("mr-1 {class}")>{mark}</span>{c.text}</li> }
                                        }).collect_view()}
                                    </ul>
                                }.into_any()
                            }}
                        </li>
                    }).collect_view()}
                </ol>
            </details>
        </section>
    }
}
