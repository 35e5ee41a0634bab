//! What servers offer beyond tools: prompts, resources, resource templates
//! and completions, gathered into one [`Catalog`] under model-facing names
//! (what the host's request path routes prompt gets, reads and
//! completions through).
//!
//! - **Prompts** are named like tools, `mcp__ALIAS__PROMPT`, by the same
//!   rules ([`ToolTable`]: the same sanitising, the same hash suffix when
//!   two names meet); descriptions are cleaned and marked `[from ALIAS]`.
//! - **Resources and templates** keep their URIs, unless two servers claim
//!   the same ones: then each claimant's URI is wrapped as
//!   `switchboard-mount://ALIAS/ORIGINAL` ([`mount_uri`]). A resource claims
//!   its URI; a template claims every URI that starts with its literal
//!   prefix (the text before its first `{`). Two claims of different servers
//!   collide when one starts with the other (equal, for two resources). A
//!   URI whose claim overlaps the reserved `switchboard` prefix (the
//!   gateway's own resources, and the wrapped form) is always wrapped.
//!   Wrapping is decided by the catalog, and reading maps back through it:
//!   the host never guesses a server from a URI.
//!
//! The catalog is rebuilt whenever a server's offer changes, so a URI may
//! become wrapped when a colliding server appears (the gateway tells its
//! clients with `notifications/resources/list_changed`).

use std::collections::{BTreeMap, HashMap};

use switchboard_wire::{JsonObject, Prompt, PromptArgument, Resource, ResourceTemplate, Tool};

use crate::sanitize;
use crate::table::{ServerTools, ToolTable};

/// The scheme of a wrapped URI: `switchboard-mount://ALIAS/ORIGINAL`.
pub(crate) const MOUNT_SCHEME: &str = "switchboard-mount";

/// Claims that overlap this prefix are always wrapped: the gateway's own
/// resources (`switchboard://…`) and wrapped URIs live under it.
const RESERVED: &str = "switchboard";

/// The wrapped form of `uri` of the server `alias`. Reversible with
/// [`unmount_uri`]: an alias never contains `/`.
pub(crate) fn mount_uri(alias: &str, uri: &str) -> String {
    format!("{MOUNT_SCHEME}://{alias}/{uri}")
}

/// The alias and original URI of a wrapped URI; `None` for any other URI.
pub(crate) fn unmount_uri(uri: &str) -> Option<(&str, &str)> {
    let rest = uri.strip_prefix(MOUNT_SCHEME)?.strip_prefix("://")?;
    let (alias, original) = rest.split_once('/')?;
    (!alias.is_empty()).then_some((alias, original))
}

/// What one server offers beyond tools, as last listed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerOffer {
    /// Its prompts.
    pub prompts: Vec<Prompt>,
    /// Its fixed resources.
    pub resources: Vec<Resource>,
    /// Its resource templates.
    pub templates: Vec<ResourceTemplate>,
    /// Whether it declares `completions`.
    pub completions: bool,
}

/// A prompt as the catalog serves it.
#[derive(Clone, Debug, PartialEq)]
pub struct OfferedPrompt {
    /// The server's alias.
    pub alias: String,
    /// The prompt's name on the server.
    pub original_name: String,
    /// What clients see: the namespaced name, the cleaned description
    /// marked with its server, cleaned title and argument descriptions.
    pub prompt: Prompt,
}

/// A fixed resource as the catalog serves it.
#[derive(Clone, Debug, PartialEq)]
pub struct OfferedResource {
    /// The server's alias.
    pub alias: String,
    /// The URI on the server.
    pub original_uri: String,
    /// What clients see: the (possibly wrapped) URI, cleaned texts.
    pub resource: Resource,
}

impl OfferedResource {
    /// Whether the URI is wrapped (`mount_uri`).
    pub fn is_wrapped(&self) -> bool {
        self.resource.uri != self.original_uri
    }
}

/// A resource template as the catalog serves it.
#[derive(Clone, Debug, PartialEq)]
pub struct OfferedTemplate {
    /// The server's alias.
    pub alias: String,
    /// The template on the server.
    pub original_template: String,
    /// What clients see: the (possibly wrapped) `uriTemplate`, cleaned
    /// texts.
    pub template: ResourceTemplate,
}

impl OfferedTemplate {
    /// Whether the template is wrapped (`mount_uri`).
    pub fn is_wrapped(&self) -> bool {
        self.template.uri_template != self.original_template
    }

    /// The server's URI for a URI this (served) template matched.
    pub fn original_uri<'a>(&self, uri: &'a str) -> &'a str {
        if self.is_wrapped() {
            unmount_uri(uri).map_or(uri, |(_, original)| original)
        } else {
            uri
        }
    }
}

/// What changed in the catalog, for whoever serves it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OfferChange {
    /// The prompt list changed.
    Prompts,
    /// The resource or template list changed (URIs may have been wrapped).
    Resources,
    /// A resource changed (`notifications/resources/updated`); the URI as
    /// the catalog serves it.
    ResourceUpdated(String),
}

/// Every server's offer under model-facing names.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    prompts: Vec<OfferedPrompt>,
    prompt_index: HashMap<String, usize>,
    resources: Vec<OfferedResource>,
    templates: Vec<OfferedTemplate>,
    completions: Vec<String>,
}

/// One URI claim: whose, what text, and whether it is a prefix claim.
struct Claim<'a> {
    alias: &'a str,
    text: &'a str,
    prefix: bool,
}

impl Claim<'_> {
    fn overlaps(&self, other: &Claim<'_>) -> bool {
        match (self.prefix, other.prefix) {
            (false, false) => self.text == other.text,
            (true, false) => other.text.starts_with(self.text),
            (false, true) => self.text.starts_with(other.text),
            (true, true) => self.text.starts_with(other.text) || other.text.starts_with(self.text),
        }
    }

    fn reserved(&self) -> bool {
        let lower = self.text.to_ascii_lowercase();
        lower.starts_with(RESERVED) || (self.prefix && RESERVED.starts_with(&lower))
    }
}

/// The literal text of a template before its first variable.
fn literal_prefix(template: &str) -> &str {
    template.split('{').next().unwrap_or_default()
}

impl Catalog {
    /// Builds the catalog of these servers' offers, `(alias, offer)` each.
    pub fn build(servers: &[(String, ServerOffer)]) -> Catalog {
        let mut catalog = Catalog::default();

        // Prompts: named exactly as tools would be.
        let as_tools: Vec<(&str, Vec<Tool>)> = servers
            .iter()
            .map(|(alias, offer)| {
                let tools = offer
                    .prompts
                    .iter()
                    .map(|p| Tool {
                        name: p.name.clone(),
                        title: None,
                        description: None,
                        input_schema: JsonObject::new(),
                        output_schema: None,
                        annotations: None,
                        icons: None,
                        meta: None,
                        extra: JsonObject::new(),
                    })
                    .collect();
                (alias.as_str(), tools)
            })
            .collect();
        let inputs: Vec<ServerTools<'_>> = as_tools
            .iter()
            .map(|(alias, tools)| ServerTools {
                alias,
                tools,
                dropped: &[],
            })
            .collect();
        let (names, _) = ToolTable::build(&inputs);
        let by_server: BTreeMap<&str, &ServerOffer> =
            servers.iter().map(|(a, o)| (a.as_str(), o)).collect();
        for entry in names.entries() {
            let Some(prompt) = by_server
                .get(entry.alias.as_str())
                .and_then(|o| o.prompts.iter().find(|p| p.name == entry.tool.name))
            else {
                continue;
            };
            catalog
                .prompt_index
                .insert(entry.local_name.clone(), catalog.prompts.len());
            catalog.prompts.push(OfferedPrompt {
                alias: entry.alias.clone(),
                original_name: prompt.name.clone(),
                prompt: model_prompt(&entry.alias, &entry.local_name, prompt),
            });
        }

        // Resources and templates: wrapped where claims collide.
        let mut claims: Vec<Claim<'_>> = Vec::new();
        for (alias, offer) in servers {
            for r in &offer.resources {
                claims.push(Claim {
                    alias,
                    text: &r.uri,
                    prefix: false,
                });
            }
            for t in &offer.templates {
                claims.push(Claim {
                    alias,
                    text: literal_prefix(&t.uri_template),
                    prefix: true,
                });
            }
        }
        let contested = |claim: &Claim<'_>| {
            claim.reserved()
                || claims
                    .iter()
                    .any(|other| other.alias != claim.alias && claim.overlaps(other))
        };
        for (alias, offer) in servers {
            for r in &offer.resources {
                let wrap = contested(&Claim {
                    alias,
                    text: &r.uri,
                    prefix: false,
                });
                let mut resource = r.clone();
                if wrap {
                    resource.uri = mount_uri(alias, &r.uri);
                }
                clean_texts(
                    alias,
                    &mut resource.title,
                    &mut resource.description,
                    &mut resource.name,
                );
                catalog.resources.push(OfferedResource {
                    alias: alias.clone(),
                    original_uri: r.uri.clone(),
                    resource,
                });
            }
            for t in &offer.templates {
                let wrap = contested(&Claim {
                    alias,
                    text: literal_prefix(&t.uri_template),
                    prefix: true,
                });
                let mut template = t.clone();
                if wrap {
                    template.uri_template = mount_uri(alias, &t.uri_template);
                }
                clean_texts(
                    alias,
                    &mut template.title,
                    &mut template.description,
                    &mut template.name,
                );
                catalog.templates.push(OfferedTemplate {
                    alias: alias.clone(),
                    original_template: t.uri_template.clone(),
                    template,
                });
            }
            if offer.completions {
                catalog.completions.push(alias.clone());
            }
        }
        // One server listing a URI twice keeps its first.
        let mut seen = std::collections::HashSet::new();
        catalog
            .resources
            .retain(|r| seen.insert(r.resource.uri.clone()));
        let mut seen = std::collections::HashSet::new();
        catalog
            .templates
            .retain(|t| seen.insert(t.template.uri_template.clone()));
        catalog
    }

    /// The prompts, in name order.
    pub fn prompts(&self) -> &[OfferedPrompt] {
        &self.prompts
    }

    /// The prompt served as `name`.
    pub fn prompt(&self, name: &str) -> Option<&OfferedPrompt> {
        self.prompt_index.get(name).map(|i| &self.prompts[*i])
    }

    /// The fixed resources.
    pub fn resources(&self) -> &[OfferedResource] {
        &self.resources
    }

    /// The resource served at `uri`.
    pub fn resource(&self, uri: &str) -> Option<&OfferedResource> {
        self.resources.iter().find(|r| r.resource.uri == uri)
    }

    /// The resource templates.
    pub fn templates(&self) -> &[OfferedTemplate] {
        &self.templates
    }

    /// The template served as `uri_template`.
    pub fn template(&self, uri_template: &str) -> Option<&OfferedTemplate> {
        self.templates
            .iter()
            .find(|t| t.template.uri_template == uri_template)
    }

    /// Whether the server `alias` declares `completions`.
    pub fn completes(&self, alias: &str) -> bool {
        self.completions.iter().any(|a| a == alias)
    }

    /// The URI the catalog serves for `uri` of the server `alias`: its
    /// resource's, or wrapped when a wrapped template of that server claims
    /// it, else `uri` itself.
    pub fn served_uri(&self, alias: &str, uri: &str) -> String {
        if let Some(r) = self
            .resources
            .iter()
            .find(|r| r.alias == alias && r.original_uri == uri)
        {
            return r.resource.uri.clone();
        }
        let wrapped = self.templates.iter().any(|t| {
            t.alias == alias
                && t.is_wrapped()
                && uri.starts_with(literal_prefix(&t.original_template))
        });
        if wrapped {
            mount_uri(alias, uri)
        } else {
            uri.to_owned()
        }
    }
}

/// The prompt clients see: `name`, cleaned texts marked with the server.
fn model_prompt(alias: &str, name: &str, prompt: &Prompt) -> Prompt {
    Prompt {
        name: name.to_owned(),
        title: prompt.title.as_deref().map(sanitize::clean_description),
        description: Some(sanitize::model_description(
            alias,
            prompt.description.as_deref(),
        )),
        arguments: prompt.arguments.as_ref().map(|args| {
            args.iter()
                .map(|a| PromptArgument {
                    name: a.name.clone(),
                    description: a.description.as_deref().map(sanitize::clean_description),
                    required: a.required,
                    extra: JsonObject::new(),
                })
                .collect()
        }),
        extra: JsonObject::new(),
    }
}

/// Cleans a resource's or template's texts; the description is marked with
/// the server like a tool's.
fn clean_texts(
    alias: &str,
    title: &mut Option<String>,
    description: &mut Option<String>,
    name: &mut String,
) {
    *name = sanitize::clean_description(name);
    *title = title.as_deref().map(sanitize::clean_description);
    *description = Some(sanitize::model_description(alias, description.as_deref()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(uri: &str) -> Resource {
        Resource {
            uri: uri.into(),
            name: uri.into(),
            title: None,
            description: None,
            mime_type: None,
            extra: JsonObject::new(),
        }
    }

    fn template(t: &str) -> ResourceTemplate {
        ResourceTemplate {
            uri_template: t.into(),
            name: t.into(),
            title: None,
            description: None,
            mime_type: None,
            extra: JsonObject::new(),
        }
    }

    fn prompt(name: &str) -> Prompt {
        Prompt {
            name: name.into(),
            title: None,
            description: Some("Summarise\u{200b} it".into()),
            arguments: None,
            extra: JsonObject::new(),
        }
    }

    fn offer(resources: &[&str], templates: &[&str]) -> ServerOffer {
        ServerOffer {
            resources: resources.iter().map(|u| resource(u)).collect(),
            templates: templates.iter().map(|t| template(t)).collect(),
            ..ServerOffer::default()
        }
    }

    fn uris(c: &Catalog) -> Vec<&str> {
        c.resources()
            .iter()
            .map(|r| r.resource.uri.as_str())
            .collect()
    }

    #[test]
    fn mount_uris_round_trip() {
        let wrapped = mount_uri("notes", "file:///a/b?c#d");
        assert_eq!(wrapped, "switchboard-mount://notes/file:///a/b?c#d");
        assert_eq!(unmount_uri(&wrapped), Some(("notes", "file:///a/b?c#d")));
        assert_eq!(unmount_uri("file:///x"), None);
        assert_eq!(unmount_uri("switchboard-mount:///x"), None);
    }

    #[test]
    fn unique_uris_pass_through_and_colliding_ones_are_wrapped_on_both_sides() {
        let c = Catalog::build(&[
            ("a".into(), offer(&["notes://one", "file:///same"], &[])),
            ("b".into(), offer(&["file:///same", "tickets://t"], &[])),
        ]);
        assert_eq!(
            uris(&c),
            [
                "notes://one",
                "switchboard-mount://a/file:///same",
                "switchboard-mount://b/file:///same",
                "tickets://t"
            ]
        );
        let r = c.resource("switchboard-mount://b/file:///same").unwrap();
        assert_eq!(
            (r.alias.as_str(), r.original_uri.as_str()),
            ("b", "file:///same")
        );
        assert_eq!(c.served_uri("a", "notes://one"), "notes://one");
        assert_eq!(
            c.served_uri("b", "file:///same"),
            "switchboard-mount://b/file:///same"
        );
    }

    #[test]
    fn templates_claim_their_prefix() {
        let c = Catalog::build(&[
            ("a".into(), offer(&["file:///etc/x"], &["notes://{id}"])),
            ("b".into(), offer(&[], &["file:///{+path}"])),
        ]);
        // a's resource falls under b's template: both are wrapped.
        assert_eq!(uris(&c), ["switchboard-mount://a/file:///etc/x"]);
        let t: Vec<&str> = c
            .templates()
            .iter()
            .map(|t| t.template.uri_template.as_str())
            .collect();
        assert_eq!(t, ["notes://{id}", "switchboard-mount://b/file:///{+path}"]);
        let b = c.template("switchboard-mount://b/file:///{+path}").unwrap();
        assert_eq!(
            b.original_uri("switchboard-mount://b/file:///x/y"),
            "file:///x/y"
        );
        assert_eq!(
            c.served_uri("b", "file:///x/y"),
            "switchboard-mount://b/file:///x/y"
        );
    }

    #[test]
    fn reserved_uris_are_always_wrapped() {
        let c = Catalog::build(&[("a".into(), offer(&["switchboard://status"], &["{+uri}"]))]);
        assert_eq!(uris(&c), ["switchboard-mount://a/switchboard://status"]);
        assert_eq!(
            c.templates()[0].template.uri_template,
            "switchboard-mount://a/{+uri}"
        );
    }

    #[test]
    fn prompts_are_named_and_described_like_tools() {
        let c = Catalog::build(&[
            (
                "notes".into(),
                ServerOffer {
                    prompts: vec![prompt("summarise"), prompt("a.b")],
                    ..ServerOffer::default()
                },
            ),
            (
                "tickets".into(),
                ServerOffer {
                    prompts: vec![prompt("summarise")],
                    completions: true,
                    ..ServerOffer::default()
                },
            ),
        ]);
        let names: Vec<&str> = c.prompts().iter().map(|p| p.prompt.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "mcp__notes__a_b",
                "mcp__notes__summarise",
                "mcp__tickets__summarise"
            ]
        );
        let p = c.prompt("mcp__notes__a_b").unwrap();
        assert_eq!(
            (p.alias.as_str(), p.original_name.as_str()),
            ("notes", "a.b")
        );
        let d = p.prompt.description.as_deref().unwrap();
        assert!(d.starts_with("[from notes]"), "{d}");
        assert!(!d.contains('\u{200b}'), "{d}");
        assert!(c.completes("tickets") && !c.completes("notes"));
    }
}
