//! Period limits and rate limits as the editor shows them: one per line, in words.
//!
//! - A period limit: `month hard 1000 soft 900`, `week from sunday hard 300`, `day soft 40`
//!   (`limits.budget.periods[i]`).
//! - A rate limit: `600 per minute`, `10 per second on cards.*` (`limits.rate[i]`; the action
//!   pattern is `*` unless given).
//! - An approval rule: `above 500 approvers 2 role finance window 4h escalate 1h group treasury`
//!   (`limits.approve.rules[i]`): its conditions (`above N`, `action P`, `destructive`,
//!   `soft_cap`), then who approves and within what window; a role or group after `escalate`
//!   is the escalation's.
//!
//! Each line reads back to the limit it was written from; a line that does not read is a
//! problem at its limit's JSON path, saying what to write instead.

use policy::{
    ApprovalRule, Escalation, KitError, Money, Period, PeriodLimit, RateLimit, RateUnit, Weekday, Window,
};

/// The lines of `periods`.
pub fn periods_text(periods: &[PeriodLimit]) -> String {
    let line = |p: &PeriodLimit| {
        let mut s = p.every.as_str().to_string();
        if let Some(d) = p.week_starts {
            s.push_str(&format!(" from {}", d.as_str()));
        }
        if let Some(m) = p.hard_cap {
            s.push_str(&format!(" hard {}", m.to_decimal_string()));
        }
        if let Some(m) = p.soft_cap {
            s.push_str(&format!(" soft {}", m.to_decimal_string()));
        }
        s
    };
    periods.iter().map(line).collect::<Vec<_>>().join("\n")
}

/// The lines of `rates`.
pub fn rates_text(rates: &[RateLimit]) -> String {
    let line = |r: &RateLimit| {
        let on = if r.action == "*" { String::new() } else { format!(" on {}", r.action) };
        format!("{} per {}{on}", r.calls, r.per.as_str())
    };
    rates.iter().map(line).collect::<Vec<_>>().join("\n")
}

/// The lines of `rules`.
pub fn approval_rules_text(rules: &[ApprovalRule]) -> String {
    rules.iter().map(approval_line).collect::<Vec<_>>().join("\n")
}

fn approval_line(r: &ApprovalRule) -> String {
    let mut w: Vec<String> = Vec::new();
    let mut pair = |k: &str, v: &dyn std::fmt::Display| w.push(format!("{k} {v}"));
    if let Some(m) = r.above {
        pair("above", &m.to_decimal_string());
    }
    if let Some(a) = &r.action {
        pair("action", a);
    }
    let flags = [(r.destructive, "destructive"), (r.soft_cap, "soft_cap")];
    let flags = flags.iter().filter(|(on, _)| *on).map(|(_, f)| f.to_string());
    let mut w: Vec<String> = w.into_iter().chain(flags).collect();
    w.push(format!("approvers {}", r.approvers));
    who_words(&r.role, &r.group, &mut w);
    if let Some(win) = r.window {
        w.push(format!("window {win}"));
    }
    if let Some(e) = &r.escalate {
        w.push(format!("escalate {}", e.after));
        who_words(&e.role, &e.group, &mut w);
    }
    w.join(" ")
}

fn who_words(role: &Option<String>, group: &Option<String>, w: &mut Vec<String>) {
    if let Some(r) = role {
        w.push(format!("role {r}"));
    }
    if let Some(g) = group {
        w.push(format!("group {g}"));
    }
}

fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty())
}

const PERIOD_HELP: &str =
    "write a period, then its caps: `month hard 1000 soft 900`, `week from sunday hard 300`, `day soft 40`";
const APPROVAL_HELP: &str = "write conditions, then who approves: `above 500 approvers 2 role finance window 4h`, `action email.* window 30m escalate 10m group oncall`";
const RATE_HELP: &str = "write calls per unit: `600 per minute`, or `10 per second on cards.*`";

/// The period limits the lines say, pushing a problem for each line that does not read.
pub fn parse_periods(text: &str, errs: &mut Vec<KitError>) -> Vec<PeriodLimit> {
    parse_lines(text, "limits.budget.periods", PERIOD_HELP, period, errs)
}

/// Each non-empty line of `text` read by `parse`; a line that does not read is a problem at
/// `list[i]`, with what to write instead.
fn parse_lines<T>(
    text: &str,
    list: &str,
    help: &str,
    parse: impl Fn(&str) -> Result<T, String>,
    errs: &mut Vec<KitError>,
) -> Vec<T> {
    let mut out = Vec::new();
    for (i, l) in lines(text).enumerate() {
        match parse(l) {
            Ok(v) => out.push(v),
            Err(m) => {
                errs.push(KitError { path: format!("{list}[{i}]"), message: format!("\"{l}\": {m}; {help}") })
            }
        }
    }
    out
}

fn period(line: &str) -> Result<PeriodLimit, String> {
    let mut words = line.split_whitespace();
    let every = match words.next() {
        Some("day" | "daily") => Period::Day,
        Some("week" | "weekly") => Period::Week,
        Some("month" | "monthly") => Period::Month,
        Some(w) => return Err(format!("`{w}` is not day, week or month")),
        None => return Err("empty".into()),
    };
    let mut p = PeriodLimit { every, week_starts: None, hard_cap: None, soft_cap: None };
    while let Some(w) = words.next() {
        let value = words.next().ok_or_else(|| format!("`{w}` needs a value after it"))?;
        match w {
            "from" => {
                let d = Weekday::ALL.into_iter().find(|d| d.as_str() == value);
                p.week_starts =
                    Some(d.ok_or_else(|| format!("`{value}` is not a weekday (monday … sunday)"))?);
            }
            "hard" | "soft" => {
                let m = Money::parse(value).map_err(|e| format!("`{value}` is not an amount: {e}"))?;
                *(if w == "hard" { &mut p.hard_cap } else { &mut p.soft_cap }) = Some(m);
            }
            _ => return Err(format!("`{w}` is not from, hard or soft")),
        }
    }
    Ok(p)
}

/// The approval rules the lines say, pushing a problem for each line that does not read.
pub fn parse_approval_rules(text: &str, errs: &mut Vec<KitError>) -> Vec<ApprovalRule> {
    parse_lines(text, "limits.approve.rules", APPROVAL_HELP, approval_rule, errs)
}

fn approval_rule(line: &str) -> Result<ApprovalRule, String> {
    let mut r = ApprovalRule {
        above: None,
        action: None,
        destructive: false,
        soft_cap: false,
        approvers: 1,
        role: None,
        group: None,
        window: None,
        escalate: None,
    };
    let mut words = line.split_whitespace();
    while let Some(w) = words.next() {
        if let Some(flag) = match w {
            "destructive" => Some(&mut r.destructive),
            "soft_cap" => Some(&mut r.soft_cap),
            _ => None,
        } {
            *flag = true;
            continue;
        }
        let v = words.next().ok_or_else(|| format!("`{w}` needs a value after it"))?;
        let who = match &mut r.escalate {
            Some(e) => (&mut e.role, &mut e.group),
            None => (&mut r.role, &mut r.group),
        };
        match w {
            "above" => r.above = Some(Money::parse(v).map_err(|e| format!("`{v}` is not an amount: {e}"))?),
            "action" => r.action = Some(v.to_string()),
            "approvers" => {
                r.approvers = v.parse().map_err(|_| format!("`{v}` is not a number of approvers"))?
            }
            "role" => *who.0 = Some(v.to_string()),
            "group" => *who.1 = Some(v.to_string()),
            "window" => r.window = Some(Window::parse(v)?),
            "escalate" => r.escalate = Some(Escalation { after: Window::parse(v)?, role: None, group: None }),
            _ => {
                return Err(format!(
                    "`{w}` is not above, action, destructive, soft_cap, approvers, role, group, window or escalate"
                ));
            }
        }
    }
    Ok(r)
}

/// The rate limits the lines say, pushing a problem for each line that does not read.
pub fn parse_rates(text: &str, errs: &mut Vec<KitError>) -> Vec<RateLimit> {
    parse_lines(text, "limits.rate", RATE_HELP, rate, errs)
}

fn rate(line: &str) -> Result<RateLimit, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let (calls, per, action) = match words[..] {
        [calls, "per", unit] => (calls, unit, "*"),
        [calls, "per", unit, "on", action] => (calls, unit, action),
        _ => return Err("not in the form `N per unit`".into()),
    };
    let calls = calls.parse::<u32>().map_err(|_| format!("`{calls}` is not a number of calls"))?;
    let per = match per {
        "second" | "s" => RateUnit::Second,
        "minute" | "min" => RateUnit::Minute,
        "hour" | "h" => RateUnit::Hour,
        u => return Err(format!("`{u}` is not second, minute or hour")),
    };
    Ok(RateLimit { action: action.to_string(), calls, per })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_back_to_the_limits_they_were_written_from() {
        let mut errs = Vec::new();
        let p =
            parse_periods("month hard 1000 soft 900\nweek from sunday hard 300\n\nday soft 40", &mut errs);
        let r = parse_rates("600 per minute\n10 per second on cards.*", &mut errs);
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(p.len(), 3);
        assert_eq!(p[1].week_starts, Some(Weekday::Sunday));
        assert_eq!(parse_periods(&periods_text(&p), &mut errs), p);
        assert_eq!(parse_rates(&rates_text(&r), &mut errs), r);
        assert_eq!(rates_text(&r), "600 per minute\n10 per second on cards.*");
        let lines = "above 500.00 approvers 2 role finance window 4h escalate 1h group treasury\naction email.* soft_cap approvers 1";
        let a = parse_approval_rules(lines, &mut errs);
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(a[0].escalate.as_ref().and_then(|e| e.group.as_deref()), Some("treasury"));
        assert_eq!((a[0].role.as_deref(), a[0].group.as_deref()), (Some("finance"), None));
        assert_eq!(approval_rules_text(&a), lines);
    }

    #[test]
    fn a_line_that_does_not_read_names_its_limit_and_what_to_write() {
        let mut errs = Vec::new();
        parse_periods("month hard 10\nfortnight hard 5", &mut errs);
        parse_rates("many per minute", &mut errs);
        let paths: Vec<&str> = errs.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["limits.budget.periods[1]", "limits.rate[0]"]);
        assert!(errs[0].message.contains("not day, week or month"), "{}", errs[0].message);
    }
}
