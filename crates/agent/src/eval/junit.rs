//! The report as JUnit XML, so CI systems show each case.
//!
//! One `<testsuite>` per category (`eval.happy`, `eval.edge`,
//! `eval.trap`) with the pass rate and threshold as properties, one
//! `<testcase>` per run (named `ID` or, with `--repeat`, `ID (run K/N)`),
//! classname the case file. A run the model got wrong has a `<failure>`
//! with what was expected and what the model did; a run the provider
//! failed has an `<error>`. Text is escaped and characters XML 1.0 does not
//! allow are dropped.

use std::fmt::Write as _;

use super::report::Report;

/// The JUnit XML document of `report`.
pub fn render(report: &Report) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let runs: usize = report.categories.iter().map(|c| c.runs).sum();
    let errors: usize = report.categories.iter().map(|c| c.errors).sum();
    let failures = report.failures.len() - errors;
    let secs = report.duration.as_secs_f64();
    let _ = writeln!(
        out,
        "<testsuites name=\"switchboard eval\" tests=\"{runs}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"{secs:.3}\">"
    );
    for category in &report.categories {
        let of: Vec<_> = report
            .cases
            .iter()
            .filter(|c| c.category == category.category)
            .collect();
        let time: f64 = of
            .iter()
            .flat_map(|c| &c.outcomes)
            .map(|o| o.duration.as_secs_f64())
            .sum();
        let _ = writeln!(
            out,
            "  <testsuite name=\"eval.{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\" time=\"{time:.3}\">",
            category.category,
            category.runs,
            category.runs - category.passed - category.errors,
            category.errors
        );
        out.push_str("    <properties>\n");
        let rate = category
            .rate
            .map_or_else(|| "none".to_owned(), |r| format!("{r:.4}"));
        for (name, value) in [
            ("model", report.model.clone()),
            ("passRate", rate),
            ("min", format!("{}", category.min)),
            ("weight", format!("{}", category.weight)),
            ("ok", category.ok.to_string()),
        ] {
            let _ = writeln!(
                out,
                "      <property name=\"{name}\" value=\"{}\"/>",
                escape(&value)
            );
        }
        out.push_str("    </properties>\n");
        for case in of {
            for (i, run) in case.outcomes.iter().enumerate() {
                let name = if case.runs > 1 {
                    format!("{} (run {}/{})", case.id, i + 1, case.runs)
                } else {
                    case.id.clone()
                };
                let _ = write!(
                    out,
                    "    <testcase name=\"{}\" classname=\"{}\" time=\"{:.3}\"",
                    escape(&name),
                    escape(&case.file),
                    run.duration.as_secs_f64()
                );
                if run.verdict.pass {
                    out.push_str("/>\n");
                    continue;
                }
                out.push_str(">\n");
                let why = run.verdict.why.clone().unwrap_or_default();
                let (element, kind) = if run.verdict.error {
                    ("error", "provider")
                } else {
                    ("failure", "selection")
                };
                let _ = writeln!(
                    out,
                    "      <{element} message=\"{}\" type=\"{kind}\">expected: {}\ngot: {}</{element}>",
                    escape(&why),
                    escape(&case.expected),
                    escape(&run.got)
                );
                out.push_str("    </testcase>\n");
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

/// Text made safe for an XML attribute or element.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Newlines in attributes would be normalised away by readers.
            '\n' => out.push_str("&#10;"),
            '\t' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || matches!(c, '\u{FFFE}' | '\u{FFFF}') => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::eval::case::Category;
    use crate::eval::report::tests::results;
    use crate::eval::report::{Policy, Report};

    /// A structural check against the JUnit schema's rules: the elements
    /// and attributes it requires, and counts that agree with each other.
    pub(crate) fn check_junit(xml: &str) -> roxmltree::Document<'_> {
        let doc = roxmltree::Document::parse(xml).expect("well-formed XML");
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "testsuites");
        let attr = |n: roxmltree::Node<'_, '_>, a: &str| -> usize {
            n.attribute(a)
                .unwrap_or_else(|| panic!("{} lacks {a}", n.tag_name().name()))
                .parse()
                .unwrap()
        };
        let (mut tests, mut failures, mut errors) = (0, 0, 0);
        for suite in root.children().filter(|n| n.is_element()) {
            assert_eq!(suite.tag_name().name(), "testsuite");
            assert!(suite.attribute("name").is_some());
            let time: f64 = suite.attribute("time").unwrap().parse().unwrap();
            assert!(time >= 0.0);
            let cases: Vec<_> = suite
                .children()
                .filter(|n| n.has_tag_name("testcase"))
                .collect();
            for other in suite.children().filter(|n| n.is_element()) {
                assert!(
                    ["properties", "testcase"].contains(&other.tag_name().name()),
                    "{other:?}"
                );
            }
            let count = |tag: &str| {
                cases
                    .iter()
                    .filter(|c| c.children().any(|n| n.has_tag_name(tag)))
                    .count()
            };
            assert_eq!(attr(suite, "tests"), cases.len());
            assert_eq!(attr(suite, "failures"), count("failure"));
            assert_eq!(attr(suite, "errors"), count("error"));
            for case in &cases {
                assert!(case.attribute("name").is_some_and(|n| !n.is_empty()));
                assert!(case.attribute("classname").is_some());
                let _: f64 = case.attribute("time").unwrap().parse().unwrap();
                for f in case.children().filter(|n| n.is_element()) {
                    assert!(["failure", "error"].contains(&f.tag_name().name()));
                    assert!(f.attribute("message").is_some());
                    assert!(f.attribute("type").is_some());
                }
            }
            tests += cases.len();
            failures += count("failure");
            errors += count("error");
        }
        assert_eq!(attr(root, "tests"), tests);
        assert_eq!(attr(root, "failures"), failures);
        assert_eq!(attr(root, "errors"), errors);
        doc
    }

    #[test]
    fn junit_is_structurally_valid_with_consistent_counts() {
        let mut r = results(&[
            ("h1", Category::Happy, "PF"),
            ("h<2> & \"x\"", Category::Happy, "PP"),
            ("e1", Category::Edge, "EE"),
            ("t1", Category::Trap, "FP"),
        ]);
        r[0].runs[1].got = "mcp__x__y {\"q\":\"a\u{1}<b>\"}".into();
        let report = Report::build(
            "openai:gpt",
            &r,
            &Policy::default(),
            Duration::from_millis(1500),
        );
        let xml = render(&report);
        let doc = check_junit(&xml);
        let root = doc.root_element();
        assert_eq!(root.attribute("tests"), Some("8"));
        assert_eq!(root.attribute("failures"), Some("2"));
        assert_eq!(root.attribute("errors"), Some("2"));
        assert_eq!(root.attribute("time"), Some("1.500"));
        let names: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("testcase"))
            .map(|n| n.attribute("name").unwrap().to_owned())
            .collect();
        assert!(
            names.contains(&"h<2> & \"x\" (run 1/2)".to_owned()),
            "{names:?}"
        );
        let failure = doc
            .descendants()
            .find(|n| n.has_tag_name("failure"))
            .unwrap();
        assert!(
            failure
                .text()
                .unwrap()
                .contains("got: mcp__x__y {\"q\":\"a<b>\"}")
        );
        assert_eq!(failure.attribute("type"), Some("selection"));
        let happy = root
            .children()
            .find(|n| n.has_tag_name("testsuite"))
            .unwrap();
        let rate = happy
            .descendants()
            .find(|n| n.attribute("name") == Some("passRate"))
            .unwrap();
        assert_eq!(rate.attribute("value"), Some("0.7500"));
    }
}
