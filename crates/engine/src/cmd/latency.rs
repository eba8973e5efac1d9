//! LATENCY: the latency monitor's events (LATEST, HISTORY, GRAPH, DOCTOR, RESET) and the
//! per-command latency histograms (HISTOGRAM). The figures live in [`crate::latency`].

use super::base::BASE;
use super::server::help_reply;
use crate::command::Flags;
use crate::ctx::{Command, Ctx};
use bytes::Bytes;
use resp::Frame;
use std::sync::atomic::Ordering;

const ADMIN: Flags = Flags::ADMIN.or(Flags::NOSCRIPT).or(Flags::LOADING).or(Flags::STALE);

/// The LATENCY container.
pub static COMMANDS: &[Command] =
    &[Command { name: "latency", arity: -2, group: crate::command::Group::Server, subcommands: SUBCOMMANDS, ..BASE }];

const fn sub(name: &'static str, arity: i32, handler: crate::ctx::Handler) -> Command {
    Command { name, arity, flags: ADMIN, group: crate::command::Group::Server, handler, ..BASE }
}

static SUBCOMMANDS: &[Command] = &[
    sub("latency|doctor", 2, doctor),
    sub("latency|graph", 3, graph),
    Command { ..sub("latency|histogram", -2, histogram) },
    sub("latency|history", 3, history),
    sub("latency|latest", 2, latest),
    sub("latency|reset", -2, reset),
    Command { flags: Flags::LOADING.or(Flags::STALE), ..sub("latency|help", 2, help) },
];

/// The event a client named, as the monitor spells it (events are matched exactly, as Redis's
/// dictionary of events does).
fn event_named<'a>(
    events: &'a std::collections::BTreeMap<&'static str, crate::latency::EventHistory>,
    name: &[u8],
) -> Option<(&'static str, &'a crate::latency::EventHistory)> {
    events.iter().find(|(k, _)| k.as_bytes() == name).map(|(k, v)| (*k, v))
}

fn history(ctx: &mut Ctx<'_, '_>) -> Frame {
    let events = ctx.srv.latency_monitor.snapshot();
    let samples = event_named(&events, ctx.arg(2)).map(|(_, h)| h.samples.clone()).unwrap_or_default();
    Frame::Array(
        samples.iter().map(|&(t, ms)| Frame::Array(vec![Frame::Integer(t), Frame::Integer(ms as i64)])).collect(),
    )
}

fn latest(ctx: &mut Ctx<'_, '_>) -> Frame {
    let events = ctx.srv.latency_monitor.snapshot();
    Frame::Array(
        events
            .iter()
            .filter_map(|(name, h)| {
                let &(t, ms) = h.samples.back()?;
                Some(Frame::Array(vec![
                    Frame::bulk(*name),
                    Frame::Integer(t),
                    Frame::Integer(ms as i64),
                    Frame::Integer(h.max as i64),
                ]))
            })
            .collect(),
    )
}

fn reset(ctx: &mut Ctx<'_, '_>) -> Frame {
    let names: Vec<&[u8]> = ctx.args[2..].iter().map(|a| &a[..]).collect();
    Frame::Integer(ctx.srv.latency_monitor.reset(&names) as i64)
}

/// Redis's labels for how long ago a sample is: `12s`, `3m`, `2h`, `1d`.
fn ago(secs: i64) -> String {
    match secs.max(0) {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// LATENCY GRAPH: Redis's header line, then one column per sample (newest right), four rows high,
/// scaled between the lowest and highest sample, with each column's age below it.
fn graph(ctx: &mut Ctx<'_, '_>) -> Frame {
    let events = ctx.srv.latency_monitor.snapshot();
    let Some((name, h)) = event_named(&events, ctx.arg(2)) else {
        return Frame::error(format!("ERR No samples available for event '{}'", String::from_utf8_lossy(ctx.arg(2))));
    };
    let now = ctx.unix_ms() / 1000;
    let min = h.samples.iter().map(|s| s.1).min().unwrap_or(0);
    let max = h.samples.iter().map(|s| s.1).max().unwrap_or(0);
    let mut out = format!("{name} - high {max} ms, low {min} ms (all time high {} ms)\n", h.max);
    out.push_str(&"-".repeat(80));
    out.push('\n');
    let cols: Vec<_> = h.samples.iter().rev().take(80).rev().collect();
    const ROWS: u64 = 4;
    for row in (1..=ROWS).rev() {
        let line: String = cols
            .iter()
            .map(|s| {
                let level = if max == min { ROWS } else { 1 + (s.1 - min) * (ROWS - 1) / (max - min) };
                if level >= row { '#' } else { ' ' }
            })
            .collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let labels: Vec<String> = cols.iter().map(|s| ago(now - s.0)).collect();
    let depth = labels.iter().map(String::len).max().unwrap_or(0);
    for i in 0..depth {
        let line: String = labels.iter().map(|l| l.as_bytes().get(i).map_or(' ', |&b| b as char)).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    Frame::Verbatim { format: *b"txt", text: Bytes::from(out) }
}

/// LATENCY DOCTOR: Redis's report, for the events Latch records.
fn doctor(ctx: &mut Ctx<'_, '_>) -> Frame {
    let events = ctx.srv.latency_monitor.snapshot();
    let threshold = ctx.srv.config.latency_monitor_threshold.load(Ordering::Relaxed);
    let mut out = String::new();
    if events.is_empty() && threshold == 0 {
        out.push_str("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Latch instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it.\n");
    } else if events.is_empty() {
        out.push_str("Dave, no latency spike was observed during the lifetime of this Latch instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n");
    } else {
        out.push_str("Dave, I have observed latency spikes in this Latch instance. You don't mind talking about it, do you Dave?\n\n");
        let now = ctx.unix_ms() / 1000;
        let (mut commands, mut fast) = (false, false);
        for (n, (name, h)) in events.iter().enumerate() {
            let k = h.samples.len().max(1) as u64;
            let avg = h.samples.iter().map(|s| s.1).sum::<u64>() / k;
            let mad = h.samples.iter().map(|s| s.1.abs_diff(avg)).sum::<u64>() / k;
            let period = h.samples.front().map_or(0, |s| now - s.0) as f64 / k as f64;
            out.push_str(&format!(
                "{}. {name}: {} latency spikes (average {avg}ms, mean deviation {mad}ms, period {period:.2} sec). Worst all time event {}ms.\n",
                n + 1,
                h.samples.len(),
                h.max
            ));
            commands |= *name == "command";
            fast |= *name == "fast-command";
        }
        out.push_str("\nI have a few advices for you:\n\n");
        if commands {
            let slower = ctx.srv.config.slowlog_log_slower_than.load(Ordering::Relaxed);
            if slower < 0 {
                out.push_str("- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Latch feature using the command 'CONFIG SET slowlog-log-slower-than 10000' in order to log commands taking more than 10 milliseconds.\n");
            } else if slower / 1000 > threshold {
                out.push_str(&format!("- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than {}'.\n", threshold * 1000));
            }
            out.push_str("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n");
            out.push_str("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n");
        }
        if fast {
            out.push_str("- The system is slow to execute Latch code paths not containing system calls. This usually means the system does not provide Latch CPU time to run for long periods. You should try to:\n  1) Lower the system load.\n  2) Use a computer / VM just for Latch if you are running other software in the same system.\n  3) Check if you have a \"noisy neighbour\" problem.\n  4) Check with 'latch-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n");
        }
        if !commands && !fast {
            out.push_str(
                "- No easy fix is known for these events: compare them with LATENCY HISTORY and the slow log.\n",
            );
        }
    }
    Frame::Verbatim { format: *b"txt", text: Bytes::from(out) }
}

/// `calls` and the cumulative `histogram_usec` buckets of one command.
fn command_cdf(counts: &[u64]) -> Frame {
    let total: u64 = counts.iter().sum();
    let buckets = crate::latency::cumulative_buckets(counts)
        .into_iter()
        .map(|(us, n)| (Frame::Integer(us as i64), Frame::Integer(n as i64)))
        .collect();
    Frame::Map(vec![
        (Frame::bulk("calls"), Frame::Integer(total as i64)),
        (Frame::bulk("histogram_usec"), Frame::Map(buckets)),
    ])
}

/// LATENCY HISTOGRAM [command ...]: every command (and subcommand) with a histogram, or those
/// named (a container stands for its subcommands; unknown names are skipped).
fn histogram(ctx: &mut Ctx<'_, '_>) -> Frame {
    let srv = ctx.srv;
    let mut out = Vec::new();
    let mut add = |cmd: &'static Command| {
        if let Some(counts) = srv.stats.latency(cmd) {
            out.push((Frame::bulk(cmd.name), command_cdf(&counts)));
        }
    };
    if ctx.argc() == 2 {
        for c in srv.table.all() {
            add(c);
            c.subcommands.iter().for_each(&mut add);
        }
    } else {
        for name in &ctx.args[2..] {
            let found = match name.iter().position(|&b| b == b'|') {
                Some(i) => srv.table.get(&name[..i]).and_then(|c| {
                    c.subcommands.iter().find(|s| s.name.as_bytes()[c.name.len()..].eq_ignore_ascii_case(&name[i..]))
                }),
                None => srv.table.get(name),
            };
            if let Some(c) = found {
                add(c);
                c.subcommands.iter().for_each(&mut add);
            }
        }
    }
    Frame::Map(out)
}

fn help(_: &mut Ctx<'_, '_>) -> Frame {
    help_reply(
        "LATENCY",
        &[
            "DOCTOR",
            "    Return a human readable latency analysis report.",
            "GRAPH <event>",
            "    Return an ASCII latency graph for the <event> class.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
            "HISTOGRAM [COMMAND ...]",
            "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
            "    If no commands are specified then all histograms are replied.",
        ],
    )
}

#[cfg(test)]
mod tests {
    use crate::testkit::TestServer;

    #[test]
    fn histograms_count_calls_per_command_and_subcommand() {
        let ts = TestServer::new();
        ts.transcript(
            r#"
            > CONFIG RESETSTAT
            +OK
            > SET a b
            +OK
            > SET c d
            +OK
            > CLIENT ID
            :1
            > LATENCY HISTOGRAM set client|id nosuch
            {"set": {"calls": :2, "histogram_usec": {:1: :2}}, "client|id": {"calls": :1, "histogram_usec": {:1: :1}}}
            > LATENCY HISTOGRAM client
            {"client|id": {"calls": :1, "histogram_usec": {:1: :1}}}
            > CONFIG SET latency-tracking no
            +OK
            > CONFIG RESETSTAT
            +OK
            > SET a b
            +OK
            > LATENCY HISTOGRAM set
            {}
            > LATENCY HELP xxx
            -ERR wrong number of arguments for 'latency|help' command
            "#,
        );
    }

    #[test]
    fn events_over_the_threshold_are_kept() {
        let ts = TestServer::new();
        ts.srv.latency_sample("command", 500);
        ts.transcript(
            r#"
            > LATENCY LATEST
            []
            > LATENCY HISTORY command
            []
            > CONFIG SET latency-monitor-threshold 100
            +OK
            "#,
        );
        ts.srv.latency_sample("command", 50);
        ts.srv.latency_sample("command", 500);
        let t = ts.srv.clock.unix_ms() / 1000;
        ts.transcript(&format!(
            r#"
            > LATENCY HISTORY command
            [[:{t}, :500]]
            > LATENCY LATEST
            [["command", :{t}, :500, :500]]
            > LATENCY RESET nosuch
            :0
            > LATENCY RESET
            :1
            > LATENCY LATEST
            []
            "#
        ));
    }
}
