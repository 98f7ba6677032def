//! Figures: percentiles of one round, medians over rounds, targets, and the two ways of
//! printing them (a block per workload as it finishes; one Markdown table at the end).

use std::fmt::Write as _;
use std::time::Duration;

use crate::workloads::Target;

/// What one side (null server, mcp-manifest, or the comparison) measured in one round.
#[derive(Debug, Default, Clone)]
pub struct Round {
    pub cold: Option<Duration>,
    pub seq: Option<[Duration; 3]>,
    /// How many sequential samples `seq` comes from.
    pub samples: usize,
    pub rate: Option<f64>,
    pub rss: Option<u64>,
    /// Something wrong the round saw on the way (a contract the server broke).
    pub remarks: Vec<String>,
}

/// The median over rounds of each figure of one side.
#[derive(Debug, Default, Clone)]
pub struct Figures {
    pub label: String,
    pub cold: Option<Duration>,
    pub seq: Option<[Duration; 3]>,
    /// Sequential samples per round (p90 and p99 are shown from 10 on).
    pub samples: usize,
    pub rate: Option<f64>,
    pub rss: Option<u64>,
    /// Why there are no figures ("not served").
    pub note: Option<String>,
}

impl Figures {
    pub fn from_rounds(label: &str, rounds: &[Round]) -> Figures {
        let seq = |k: usize| median_dur(rounds.iter().filter_map(|r| r.seq.map(|s| s[k])));
        Figures {
            label: label.to_owned(),
            cold: median_dur(rounds.iter().filter_map(|r| r.cold)),
            seq: match (seq(0), seq(1), seq(2)) {
                (Some(a), Some(b), Some(c)) => Some([a, b, c]),
                _ => None,
            },
            samples: rounds.iter().map(|r| r.samples).min().unwrap_or(0),
            rate: median_f64(rounds.iter().filter_map(|r| r.rate)),
            rss: median_f64(rounds.iter().filter_map(|r| r.rss.map(|b| b as f64)))
                .map(|b| b as u64),
            note: None,
        }
    }

    pub fn noted(label: &str, note: &str) -> Figures {
        Figures {
            label: label.to_owned(),
            note: Some(note.to_owned()),
            ..Figures::default()
        }
    }

    fn p50(&self) -> Option<Duration> {
        self.seq.map(|s| s[0])
    }

    /// `p50 (p90 …, p99 …)`, or the median alone when there are few samples.
    fn seq_text(&self) -> Option<String> {
        let [a, b, c] = self.seq?;
        Some(if self.samples >= 10 {
            format!("{} (p90 {}, p99 {})", dur(a), dur(b), dur(c))
        } else {
            dur(a)
        })
    }
}

/// A round's sequential samples: p50, p90 and p99 (nearest rank), and how many.
pub fn sequential(round: &mut Round, samples: Vec<Duration>) {
    round.samples = samples.len();
    round.seq = percentiles(samples);
}

fn percentiles(mut samples: Vec<Duration>) -> Option<[Duration; 3]> {
    if samples.is_empty() {
        return None;
    }
    samples.sort_unstable();
    let at = |q: f64| {
        let rank = (q * samples.len() as f64).ceil() as usize;
        samples[rank.clamp(1, samples.len()) - 1]
    };
    Some([at(0.50), at(0.90), at(0.99)])
}

pub fn median_dur(xs: impl Iterator<Item = Duration>) -> Option<Duration> {
    median_f64(xs.map(|d| d.as_secs_f64())).map(Duration::from_secs_f64)
}

pub fn median_f64(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = xs.collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// A workload's figures, side by side.
pub struct Result {
    pub name: String,
    pub about: String,
    pub rounds: usize,
    pub null: Option<Figures>,
    pub server: Figures,
    pub beside: Option<Figures>,
    pub pipelined: usize,
    pub targets: Vec<(Target, &'static str)>,
    /// What the rounds remarked, once each.
    pub remarks: Vec<String>,
}

impl Result {
    /// A workload that could not run on this machine: "not available", and why as a remark.
    pub fn unavailable(name: &str, about: &str, why: &str) -> Result {
        Result {
            name: name.to_owned(),
            about: about.to_owned(),
            rounds: 0,
            null: None,
            server: Figures::noted("mcp-manifest", "not available"),
            beside: None,
            pipelined: 0,
            targets: Vec::new(),
            remarks: vec![why.to_owned()],
        }
    }

    /// The targets attached to one metric, with whether each is met.
    fn targets_for(&self, metric: Metric) -> Vec<(String, Option<bool>)> {
        let s = &self.server;
        let null_p50 = self.null.as_ref().and_then(Figures::p50);
        let beside_p50 = self.beside.as_ref().and_then(Figures::p50);
        self.targets
            .iter()
            .filter_map(|&(t, source)| {
                let (m, text, met) = match t {
                    Target::FloorPlus(d) => (
                        Metric::Seq,
                        format!("≤ floor + {}", dur(d)),
                        s.p50().zip(null_p50).map(|(v, f)| v <= f + d),
                    ),
                    Target::SeqAtMost(d) => (
                        Metric::Seq,
                        format!("≤ {}", dur(d)),
                        s.p50().map(|v| v <= d),
                    ),
                    Target::BesideRatio(k) => (
                        Metric::Seq,
                        format!("≤ {k}× {}", self.beside_label()),
                        s.p50()
                            .zip(beside_p50)
                            .map(|(v, b)| v.as_secs_f64() <= k * b.as_secs_f64()),
                    ),
                    Target::RateAtLeast(r) => (
                        Metric::Rate,
                        format!("≥ {}", rate(r)),
                        s.rate.map(|v| v >= r),
                    ),
                    Target::RssAtMost(b) => (
                        Metric::Rss,
                        format!("≤ {}", bytes(b)),
                        s.rss.map(|v| v <= b),
                    ),
                    Target::ColdAtMost(d) => (
                        Metric::Cold,
                        format!("≤ {}", dur(d)),
                        s.cold.map(|v| v <= d),
                    ),
                };
                (m == metric).then(|| (format!("{text} ({source})"), met))
            })
            .collect()
    }

    fn beside_label(&self) -> String {
        self.beside
            .as_ref()
            .map_or_else(|| "the comparison".into(), |b| format!("`{}`", b.label))
    }

    /// A block of text, printed when the workload is done.
    pub fn block(&self) -> String {
        let mut sides: Vec<&Figures> = Vec::new();
        sides.extend(self.null.as_ref());
        sides.push(&self.server);
        sides.extend(self.beside.as_ref());
        let mut out = String::new();
        if self.rounds == 0 {
            let note = self.server.note.as_deref().unwrap_or("not measured");
            let _ = writeln!(out, "\n== {} — {}: {note}", self.name, self.about);
            for r in &self.remarks {
                let _ = writeln!(out, "  remark: {r}");
            }
            return out;
        }
        let _ = writeln!(
            out,
            "\n== {} — {} (median of {} rounds)",
            self.name, self.about, self.rounds
        );
        let _ = write!(out, "  {:<18}", "");
        for s in &sides {
            let _ = write!(out, "{:>24}", s.label);
        }
        out.push('\n');
        let rows: [(&str, Cell); 6] = [
            ("cold start", |f: &Figures| f.cold.map_or(dash(f), dur)),
            ("sequential p50", |f: &Figures| {
                f.seq.map_or(dash(f), |s| dur(s[0]))
            }),
            ("           p90", |f: &Figures| {
                f.seq
                    .filter(|_| f.samples >= 10)
                    .map_or(dash(f), |s| dur(s[1]))
            }),
            ("           p99", |f: &Figures| {
                f.seq
                    .filter(|_| f.samples >= 10)
                    .map_or(dash(f), |s| dur(s[2]))
            }),
            ("pipelined", |f: &Figures| f.rate.map_or(dash(f), rate)),
            ("peak RSS", |f: &Figures| f.rss.map_or(dash(f), bytes)),
        ];
        for (label, cell) in rows {
            let cells: Vec<String> = sides.iter().map(|s| cell(s)).collect();
            if cells.iter().all(|c| c == "—") {
                continue;
            }
            let _ = write!(out, "  {label:<18}");
            for c in cells {
                let _ = write!(out, "{c:>24}");
            }
            out.push('\n');
        }
        for metric in [Metric::Cold, Metric::Seq, Metric::Rate, Metric::Rss] {
            for (text, met) in self.targets_for(metric) {
                let _ = writeln!(out, "  target: {} {text}: {}", metric.name(), verdict(met));
            }
        }
        for r in &self.remarks {
            let _ = writeln!(out, "  remark: {r}");
        }
        out
    }

    /// Rows of the Markdown table: workload | metric | floor | mcp-manifest | target.
    pub fn rows(&self) -> Vec<[String; 5]> {
        let mut out = Vec::new();
        let s = &self.server;
        let floor_of = |f: &Figures, cell: &dyn Fn(&Figures) -> Option<String>| {
            cell(f).map(|c| format!("{}: {c}", f.label))
        };
        let floors = |cell: &dyn Fn(&Figures) -> Option<String>| -> String {
            let parts: Vec<String> = [self.beside.as_ref(), self.null.as_ref()]
                .into_iter()
                .flatten()
                .filter_map(|f| floor_of(f, cell))
                .collect();
            if parts.is_empty() {
                "—".into()
            } else {
                parts.join("; ")
            }
        };
        let server = |cell: &dyn Fn(&Figures) -> Option<String>| -> String {
            match (&s.note, cell(s)) {
                (Some(note), _) => note.clone(),
                (None, Some(c)) => c,
                (None, None) => "—".into(),
            }
        };
        let target = |metric: Metric| -> String {
            let t: Vec<String> = self
                .targets_for(metric)
                .into_iter()
                .map(|(text, met)| format!("{text} {}", verdict(met)))
                .collect();
            if t.is_empty() {
                "—".into()
            } else {
                t.join("; ")
            }
        };
        let name = format!("`{}`", self.name);
        let seq = |f: &Figures| f.seq_text();
        let cold = |f: &Figures| f.cold.map(dur);
        let piped = |f: &Figures| f.rate.map(rate);
        let rss = |f: &Figures| f.rss.map(bytes);
        if s.cold.is_some() || !self.targets_for(Metric::Cold).is_empty() {
            out.push([
                name.clone(),
                "cold start".into(),
                floors(&cold),
                server(&cold),
                target(Metric::Cold),
            ]);
        }
        out.push([
            name.clone(),
            "sequential p50".into(),
            floors(&seq),
            server(&seq),
            target(Metric::Seq),
        ]);
        if self.pipelined > 0 {
            out.push([
                name.clone(),
                format!("pipelined, {}", count(self.pipelined)),
                floors(&piped),
                server(&piped),
                target(Metric::Rate),
            ]);
        }
        if s.rss.is_some() || s.note.is_some() {
            out.push([
                name,
                "peak RSS".into(),
                floors(&rss),
                server(&rss),
                target(Metric::Rss),
            ]);
        }
        out
    }
}

/// One cell of a workload's block.
type Cell = fn(&Figures) -> String;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Metric {
    Cold,
    Seq,
    Rate,
    Rss,
}

impl Metric {
    fn name(self) -> &'static str {
        match self {
            Metric::Cold => "cold start",
            Metric::Seq => "sequential p50",
            Metric::Rate => "pipelined",
            Metric::Rss => "peak RSS",
        }
    }
}

fn verdict(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "✓",
        Some(false) => "✗",
        None => "?",
    }
}

fn dash(f: &Figures) -> String {
    f.note.clone().unwrap_or_else(|| "—".into())
}

/// The Markdown table of every result.
pub fn table(results: &[Result]) -> String {
    let mut out = String::from(
        "| workload | metric | floor (same run) | mcp-manifest | target |\n| --- | --- | --- | --- | --- |\n",
    );
    for r in results {
        for row in r.rows() {
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
    }
    for r in results {
        for remark in &r.remarks {
            let _ = writeln!(out, "\n`{}`: {remark}.", r.name);
        }
    }
    out
}

pub fn dur(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1e-3 {
        format!("{:.0} µs", s * 1e6)
    } else if s < 1.0 {
        let ms = s * 1e3;
        if ms < 10.0 {
            format!("{ms:.2} ms")
        } else {
            format!("{ms:.1} ms")
        }
    } else {
        format!("{s:.2} s")
    }
}

pub fn rate(r: f64) -> String {
    if r >= 1e6 {
        format!("{:.1} M/s", r / 1e6)
    } else {
        format!("{}/s", count(r.round() as usize))
    }
}

/// 100000 → "100 000".
pub fn count(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

pub fn bytes(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0))
}
