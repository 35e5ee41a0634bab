//! Tab completion at the chat prompt (see [`crate::line_editor`]):
//!
//! - `@` then part of an alias: the servers that offer resources
//!   (`@ti` → `@tickets:`);
//! - `@ALIAS:` then part of a URI: that server's listed resources, and
//!   its resource templates: the literal text of a template first, then
//!   the value of its variable from the server's `completion/complete`
//!   (`ref/resource`, the variables before it as context) when the server
//!   declares `completions`;
//! - `/` at the start of the line: `/resources`, `/prompts` and every
//!   prompt as `/ALIAS:PROMPT`.
//!
//! The lists are the host's catalog, listed when the servers mounted and
//! again on their `list_changed`: Tab lists nothing anew. Values a server
//! suggested are kept for the line being typed (pressing Tab again asks
//! nothing), and asked anew on the next line or once the catalog changed
//! (they may be live data, such as ticket ids). A candidate holding a
//! control character or a space (which a word cannot hold, and which
//! could drive the terminal) is left out.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchboard_host::OfferedTemplate;
use switchboard_host::{CallOptions, Catalog, CompletionRef, Host};
use switchboard_wire::JsonObject;
use switchboard_wire::shared::lock;
use tokio::runtime::Handle;

use crate::line_editor::{Candidate, Completer, Completion};

/// How long Tab waits for a server's suggestions.
const SUGGESTIONS_WAIT: Duration = Duration::from_secs(5);

/// At most this many suggested values are offered for one Tab.
const MOST_VALUES: usize = 100;

/// The chat's completer: the host's catalog and its servers' suggestions.
pub(crate) struct ChatCompleter {
    host: Host,
    runtime: Handle,
    cache: Mutex<Suggested>,
}

/// The values servers suggested for the line being typed, under the
/// catalog they were asked under.
#[derive(Default)]
struct Suggested {
    catalog: Option<Arc<Catalog>>,
    /// (served template, variable, value so far, context) → values.
    values: HashMap<(String, String, String, String), Vec<String>>,
}

impl ChatCompleter {
    /// Completes from `host`'s catalog; call inside the runtime (its
    /// requests are sent on it from the reader thread).
    pub(crate) fn new(host: Host) -> ChatCompleter {
        ChatCompleter {
            host,
            runtime: Handle::current(),
            cache: Mutex::new(Suggested::default()),
        }
    }

    /// What the template's server suggests for `variable` (its value so
    /// far: `value`), remembered until the catalog changes.
    fn suggest(
        &self,
        catalog: &Arc<Catalog>,
        template: &OfferedTemplate,
        variable: &str,
        value: &str,
        context: &JsonObject,
    ) -> Vec<String> {
        if !catalog.completes(&template.alias) {
            return Vec::new();
        }
        let served = &template.template.uri_template;
        let key = (
            served.clone(),
            variable.to_owned(),
            value.to_owned(),
            serde_json::to_string(context).unwrap_or_default(),
        );
        {
            let mut cache = lock(&self.cache);
            if !cache
                .catalog
                .as_ref()
                .is_some_and(|c| Arc::ptr_eq(c, catalog))
            {
                cache.catalog = Some(catalog.clone());
                cache.values.clear();
            }
            if let Some(values) = cache.values.get(&key) {
                return values.clone();
            }
        }
        let context = (!context.is_empty()).then(|| context.clone());
        let request = self.host.complete(
            CompletionRef::Template(served),
            (variable, value),
            context,
            CallOptions::default(),
        );
        // The timer is made on the runtime, inside the block.
        let asked = self
            .runtime
            .block_on(async { tokio::time::timeout(SUGGESTIONS_WAIT, request).await });
        let Ok(Ok(result)) = asked else {
            // Not remembered: the next Tab asks again.
            return Vec::new();
        };
        let mut values = result.completion.values;
        values.truncate(MOST_VALUES);
        lock(&self.cache).values.insert(key, values.clone());
        values
    }
}

impl Completer for ChatCompleter {
    fn complete(&self, line: &str, cursor: usize) -> Completion {
        let catalog = self.host.catalog();
        candidates(
            &catalog,
            line,
            cursor,
            &mut |template, variable, value, context| {
                self.suggest(&catalog, template, variable, value, context)
            },
        )
    }

    fn line_begins(&self) {
        lock(&self.cache).values.clear();
    }
}

/// Asks a template's server for a variable's values: (template, variable,
/// value so far, the variables before it).
type Suggest<'a> = dyn FnMut(&OfferedTemplate, &str, &str, &JsonObject) -> Vec<String> + 'a;

/// The candidates for the word before `cursor` of `line` (see the module
/// docs).
fn candidates(
    catalog: &Catalog,
    line: &str,
    cursor: usize,
    suggest: &mut Suggest<'_>,
) -> Completion {
    let before = line.get(..cursor).unwrap_or(line);
    let start = before
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())
        .map_or(0, |(i, c)| i + c.len_utf8());
    let word = &before[start..];
    let mut candidates = if let Some(rest) = word.strip_prefix('@') {
        resources(catalog, rest, suggest)
    } else if word.starts_with('/') && before[..start].trim().is_empty() {
        commands(catalog, word)
    } else {
        Vec::new()
    };
    candidates.retain(|c| {
        !c.text
            .chars()
            .any(|ch| ch.is_control() || ch.is_whitespace())
    });
    Completion { start, candidates }
}

/// `@` + `rest`: aliases, then the URIs of one alias.
fn resources(catalog: &Catalog, rest: &str, suggest: &mut Suggest<'_>) -> Vec<Candidate> {
    let Some((alias, typed)) = rest.split_once(':') else {
        let mut aliases: Vec<&str> = catalog
            .resources()
            .iter()
            .map(|r| r.alias.as_str())
            .chain(catalog.templates().iter().map(|t| t.alias.as_str()))
            .filter(|a| a.starts_with(rest))
            .collect();
        aliases.sort_unstable();
        aliases.dedup();
        return aliases
            .into_iter()
            .map(|a| Candidate {
                text: format!("@{a}:"),
                done: false,
            })
            .collect();
    };
    let mut out: Vec<Candidate> = catalog
        .resources()
        .iter()
        .filter(|r| r.alias == alias && r.original_uri.starts_with(typed))
        .map(|r| Candidate {
            text: format!("@{alias}:{}", r.original_uri),
            done: true,
        })
        .collect();
    for template in catalog.templates().iter().filter(|t| t.alias == alias) {
        out.extend(
            in_template(template, typed, suggest)
                .into_iter()
                .map(|(uri, done)| Candidate {
                    text: format!("@{alias}:{uri}"),
                    done,
                }),
        );
    }
    out
}

/// A piece of a URI template.
#[derive(Debug, PartialEq)]
enum Piece<'a> {
    Literal(&'a str),
    Variable(&'a str),
}

/// The pieces of `template` (`{name}` and `{+name}` variables).
fn pieces(template: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            out.push(Piece::Literal(&rest[..open]));
        }
        let Some(close) = rest[open..].find('}') else {
            out.push(Piece::Literal(&rest[open..]));
            return out;
        };
        let name = &rest[open + 1..open + close];
        out.push(Piece::Variable(name.strip_prefix('+').unwrap_or(name)));
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        out.push(Piece::Literal(rest));
    }
    out
}

/// Ways to go on from `typed` through `template` (the server's form):
/// the rest of the literal the text stops in, or the values suggested for
/// the variable it stops in (with the literal after it); each with
/// whether the URI is then whole.
fn in_template(
    template: &OfferedTemplate,
    typed: &str,
    suggest: &mut Suggest<'_>,
) -> Vec<(String, bool)> {
    let pieces = pieces(&template.original_template);
    let mut at = 0;
    let mut context = JsonObject::new();
    for (i, piece) in pieces.iter().enumerate() {
        let rest = &typed[at..];
        match piece {
            Piece::Literal(literal) => {
                if rest.starts_with(literal) {
                    at += literal.len();
                } else if literal.starts_with(rest) {
                    let done = i + 1 == pieces.len();
                    return vec![(format!("{}{literal}", &typed[..at]), done)];
                } else {
                    return Vec::new();
                }
            }
            Piece::Variable(name) => {
                let next = match pieces.get(i + 1) {
                    Some(Piece::Literal(l)) => Some(*l),
                    _ => None,
                };
                // The value ends where the next literal begins.
                if let Some(end) = next.and_then(|l| rest.find(l)).filter(|e| *e > 0) {
                    context.insert((*name).to_owned(), rest[..end].into());
                    at += end;
                    continue;
                }
                let (after, done) = match next {
                    Some(l) => (l, i + 2 == pieces.len()),
                    None => ("", true),
                };
                return suggest(template, name, rest, &context)
                    .into_iter()
                    .map(|value| (format!("{}{value}{after}", &typed[..at]), done))
                    .collect();
            }
        }
    }
    Vec::new()
}

/// `/…` at the start of the line: the slash commands and the prompts.
fn commands(catalog: &Catalog, word: &str) -> Vec<Candidate> {
    ["/resources".to_owned(), "/prompts".to_owned()]
        .into_iter()
        .chain(
            catalog
                .prompts()
                .iter()
                .map(|p| format!("/{}:{}", p.alias, p.original_name)),
        )
        .filter(|name| name.starts_with(word))
        .map(|text| Candidate { text, done: true })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use switchboard_host::ServerOffer;

    fn catalog() -> Catalog {
        let offer = |value: serde_json::Value| -> ServerOffer {
            ServerOffer {
                prompts: serde_json::from_value(value["prompts"].clone()).unwrap(),
                resources: serde_json::from_value(value["resources"].clone()).unwrap(),
                templates: serde_json::from_value(value["templates"].clone()).unwrap(),
                completions: true,
            }
        };
        Catalog::build(&[
            (
                "notes".into(),
                offer(json!({
                    "prompts": [{"name": "recap"}],
                    "resources": [
                        {"uri": "notes://handbook", "name": "h"},
                        {"uri": "notes://hours", "name": "o"},
                        {"uri": "notes://bad\u{1b}[2J", "name": "x"},
                    ],
                    "templates": [{"uriTemplate": "notes://day/{date}/{+path}", "name": "d"}],
                })),
            ),
            (
                "tickets".into(),
                offer(json!({
                    "prompts": [{"name": "triage"}],
                    "resources": [],
                    "templates": [{"uriTemplate": "ticket://{id}", "name": "t"}],
                })),
            ),
            (
                "quiet".into(),
                offer(json!({"prompts": [], "resources": [], "templates": []})),
            ),
        ])
    }

    /// Completes the end of `line`; suggestions: `alpha`, `alps`, `beta`
    /// (those starting with the value), recorded in `asked`.
    fn complete(line: &str, asked: &mut Vec<String>) -> Vec<String> {
        let catalog = catalog();
        let completion = candidates(&catalog, line, line.len(), &mut |t, var, value, ctx| {
            asked.push(format!(
                "{} {var}={value} {}",
                t.original_template,
                json!(ctx)
            ));
            ["alpha", "alps", "beta"]
                .iter()
                .filter(|v| v.starts_with(value))
                .map(|v| (*v).to_owned())
                .collect()
        });
        assert!(line.is_char_boundary(completion.start));
        completion
            .candidates
            .into_iter()
            .map(|c| format!("{}{}", c.text, if c.done { " ." } else { "" }))
            .collect()
    }

    #[test]
    fn at_completes_aliases_with_resources_then_their_uris() {
        let mut asked = Vec::new();
        assert_eq!(complete("see @", &mut asked), ["@notes:", "@tickets:"]);
        assert_eq!(complete("see @ti", &mut asked), ["@tickets:"]);
        assert!(complete("@q", &mut asked).is_empty());
        assert_eq!(
            complete("see @notes:notes://h", &mut asked),
            ["@notes:notes://handbook .", "@notes:notes://hours ."]
        );
        // A URI that would drive the terminal is not offered.
        let all = complete("@notes:", &mut asked);
        assert_eq!(
            all,
            [
                "@notes:notes://handbook .",
                "@notes:notes://hours .",
                "@notes:notes://day/"
            ]
        );
        assert!(asked.is_empty(), "{asked:?}");
        assert!(complete("@nobody:x", &mut asked).is_empty());
    }

    #[test]
    fn a_template_variable_is_completed_by_its_server() {
        let mut asked = Vec::new();
        assert_eq!(
            complete("@notes:notes://d", &mut asked),
            ["@notes:notes://day/"]
        );
        assert_eq!(
            complete("@notes:notes://day/al", &mut asked),
            ["@notes:notes://day/alpha/", "@notes:notes://day/alps/"]
        );
        assert_eq!(
            complete("@notes:notes://day/alpha/b", &mut asked),
            ["@notes:notes://day/alpha/beta ."]
        );
        assert_eq!(
            asked,
            [
                "notes://day/{date}/{+path} date=al {}",
                "notes://day/{date}/{+path} path=b {\"date\":\"alpha\"}",
            ]
        );
        assert_eq!(
            complete("@tickets:ticket://", &mut asked),
            [
                "@tickets:ticket://alpha .",
                "@tickets:ticket://alps .",
                "@tickets:ticket://beta ."
            ]
        );
        assert!(complete("@tickets:other://", &mut asked).is_empty());
    }

    #[test]
    fn slash_completes_commands_and_prompts_at_the_start_only() {
        let mut asked = Vec::new();
        assert_eq!(
            complete("/", &mut asked),
            [
                "/resources .",
                "/prompts .",
                "/notes:recap .",
                "/tickets:triage ."
            ]
        );
        assert_eq!(complete("  /ti", &mut asked), ["/tickets:triage ."]);
        assert_eq!(complete("/re", &mut asked), ["/resources ."]);
        assert!(complete("say /re", &mut asked).is_empty());
        assert!(complete("plain", &mut asked).is_empty());
    }

    #[test]
    fn template_pieces() {
        assert_eq!(
            pieces("a://{x}/b{+y}"),
            [
                Piece::Literal("a://"),
                Piece::Variable("x"),
                Piece::Literal("/b"),
                Piece::Variable("y")
            ]
        );
    }
}
