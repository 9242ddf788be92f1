//! Metrics in Prometheus' text format (0.0.4), for node_exporter's textfile collector: a cron
//! run writes one file of gauges at its end, and alerting reads it on the next scrape.
//!
//! Written by hand: the Prometheus client crates model live registries scraped over HTTP; a
//! textfile is a few gauges printed once, and the last-success times must be read back from
//! the previous file (a table that failed this run keeps the time it last succeeded), which
//! they do not do. Labels are bounded by design: the command, database and table, never a
//! partition.

use std::fmt::Write as _;
use std::path::Path;

/// One file's gauges, grouped into families in the order they were first added.
#[derive(Debug, Default)]
pub struct Textfile {
    families: Vec<Family>,
}

#[derive(Debug)]
struct Family {
    name: String,
    help: String,
    samples: Vec<Sample>,
}

#[derive(Debug, Clone, PartialEq)]
struct Sample {
    labels: Vec<(String, String)>,
    value: f64,
}

impl Textfile {
    /// Sets `name{labels}` to `value`, making the family (with its HELP text) on first use;
    /// setting a label set again replaces its value.
    pub fn gauge(&mut self, name: &str, help: &str, labels: &[(&str, &str)], value: f64) {
        let labels: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.set(name, help, labels, value);
    }

    fn set(&mut self, name: &str, help: &str, labels: Vec<(String, String)>, value: f64) {
        let family = match self.families.iter().position(|f| f.name == name) {
            Some(i) => &mut self.families[i],
            None => {
                self.families.push(Family {
                    name: name.to_string(),
                    help: help.to_string(),
                    samples: vec![],
                });
                self.families.last_mut().expect("just pushed")
            }
        };
        match family.samples.iter_mut().find(|s| s.labels == labels) {
            Some(s) => s.value = value,
            None => family.samples.push(Sample { labels, value }),
        }
    }

    /// The value of `name{labels}`, if set.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let family = self.families.iter().find(|f| f.name == name)?;
        family
            .samples
            .iter()
            .find(|s| {
                s.labels.len() == labels.len()
                    && s.labels
                        .iter()
                        .zip(labels)
                        .all(|(a, b)| a.0 == b.0 && a.1 == b.1)
            })
            .map(|s| s.value)
    }

    /// Takes into `name` the samples an earlier file of ours held for it whose label sets this
    /// one lacks: how a time that must outlive a failed run (the last success) survives the
    /// file being rewritten. Lines that do not parse are ignored: the earlier file may be
    /// anyone's.
    pub fn carry_over(&mut self, earlier: &str, name: &str, help: &str) {
        for line in earlier.lines() {
            let Some((sample_name, Sample { labels, value })) = parse_sample(line) else {
                continue;
            };
            if sample_name != name {
                continue;
            }
            let known = self
                .families
                .iter()
                .find(|f| f.name == name)
                .is_some_and(|f| f.samples.iter().any(|s| s.labels == labels));
            if !known {
                self.set(name, help, labels, value);
            }
        }
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        for f in &self.families {
            let _ = writeln!(out, "# HELP {} {}", f.name, escape(&f.help, false));
            let _ = writeln!(out, "# TYPE {} gauge", f.name);
            for s in &f.samples {
                out.push_str(&f.name);
                if !s.labels.is_empty() {
                    let labels: Vec<String> = s
                        .labels
                        .iter()
                        .map(|(k, v)| format!("{k}=\"{}\"", escape(v, true)))
                        .collect();
                    let _ = write!(out, "{{{}}}", labels.join(","));
                }
                let _ = writeln!(out, " {}", number(s.value));
            }
        }
        out
    }

    /// Writes the file atomically: the previous one stays whole until the new one replaces it.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        crate::local::write_atomically(path, self.render().as_bytes())
    }
}

/// The format's escapes: backslash and newline everywhere, the double quote in label values.
fn escape(s: &str, quote: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '"' if quote => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out
}

fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        v.to_string()
    }
}

/// One sample line as [`Textfile::render`] writes it: `name{k="v",...} value`.
fn parse_sample(line: &str) -> Option<(String, Sample)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line.find(['{', ' '])?;
    let name = line[..name_end].to_string();
    let mut rest = &line[name_end..];
    let mut labels = vec![];
    if let Some(inner) = rest.strip_prefix('{') {
        let mut chars = inner.char_indices();
        loop {
            let (start, c) = chars.next()?;
            if c == '}' {
                rest = &inner[start + 1..];
                break;
            }
            if c == ',' {
                continue;
            }
            let eq = start + inner[start..].find('=')?;
            let key = inner[start..eq].to_string();
            while chars.next()?.0 < eq {}
            if chars.next()?.1 != '"' {
                return None;
            }
            let mut value = String::new();
            loop {
                match chars.next()?.1 {
                    '"' => break,
                    '\\' => match chars.next()?.1 {
                        'n' => value.push('\n'),
                        c => value.push(c),
                    },
                    c => value.push(c),
                }
            }
            labels.push((key, value));
        }
    }
    let value = match rest.split_whitespace().next()? {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some((name, Sample { labels, value }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_help_type_and_escaped_labels() {
        let mut t = Textfile::default();
        t.gauge("a_files", "Files.", &[("table", "t\"1\\")], 3.0);
        t.gauge("a_files", "Files.", &[("table", "u")], 1.5);
        t.gauge("a_files", "Files.", &[("table", "u")], 2.0);
        t.gauge("b_code", "Exit code\nof the run.", &[], 0.0);
        assert_eq!(
            t.render(),
            "# HELP a_files Files.\n# TYPE a_files gauge\na_files{table=\"t\\\"1\\\\\"} 3\n\
             a_files{table=\"u\"} 2\n# HELP b_code Exit code\\nof the run.\n# TYPE b_code gauge\n\
             b_code 0\n"
        );
        assert_eq!(t.value("a_files", &[("table", "u")]), Some(2.0));
        assert_eq!(t.value("a_files", &[("table", "v")]), None);
    }

    #[test]
    fn carries_over_what_this_file_lacks() {
        let mut earlier = Textfile::default();
        let last = "x_last_success";
        earlier.gauge(last, "h", &[("table", "a,\"b\"\n")], 100.0);
        earlier.gauge(last, "h", &[("table", "c")], 200.0);
        earlier.gauge("x_other", "h", &[("table", "c")], 5.0);
        let mut now = Textfile::default();
        now.gauge(last, "h", &[("table", "c")], 300.0);
        now.carry_over(&earlier.render(), last, "h");
        now.carry_over("garbage\nx_last_success{table=\"unclosed", last, "h");
        assert_eq!(now.value(last, &[("table", "c")]), Some(300.0));
        assert_eq!(now.value(last, &[("table", "a,\"b\"\n")]), Some(100.0));
        assert_eq!(now.value("x_other", &[("table", "c")]), None);
        let labels = vec![("a".into(), "1".into()), ("b".into(), "2".into())];
        assert_eq!(
            parse_sample("m{a=\"1\",b=\"2\"} +Inf"),
            Some((
                "m".into(),
                Sample {
                    labels,
                    value: f64::INFINITY
                }
            ))
        );
        let bare = Sample {
            labels: vec![],
            value: 1000.0,
        };
        assert_eq!(parse_sample("m 1e3"), Some(("m".into(), bare)));
    }
}
