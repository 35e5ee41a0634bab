//! The skills of the mounted servers, served as the gateway's own (the
//! Skills extension): declared when any mounted server declares it (with
//! `directoryRead` when any declares that), listed under the gateway's
//! URIs, and every `skills/get`, skill-file `resources/read` and
//! `resources/directory/read` routed to the owning server through the
//! host's governed path (the caller's limits and `principals` rules, one
//! audit line naming the caller).
//!
//! A skill of server `ALIAS` at `skill://PATH/SKILL.md` is served at
//! `skill://ALIAS/PATH/SKILL.md` (another scheme `S://REST` at
//! `skill://ALIAS/~S/REST`): per alias, so the same URI on two servers is
//! two skills here too, and reversible ([`origin`]). The skill's path
//! still ends in its name, and the alias is a valid authority. Entries
//! keep their frontmatter and every digest and size as the server sent
//! them, only the URIs are mapped; the bytes of a read pass unchanged (a
//! host acting on a skill verifies them against the entry: SK-VER-8 says a
//! digest through an intermediary proves nothing more).

use std::sync::Arc;

use switchboard_host::{CallOptions, Host, SkillRef};
use switchboard_server::{BoxFuture, HandlerError, Principal, SkillsRelay};
use switchboard_wire::skills::DIRECTORY_MIME_TYPE;
use switchboard_wire::{
    ReadDirectoryResult, ReadResourceResult, Resource, Skill, SkillResources,
    types::{CacheHints, ResultHeader},
};

use crate::catalog::handler_error;

/// The relay the gateway's server is built with.
#[derive(Debug)]
pub(crate) struct ServedSkills {
    host: Host,
}

impl ServedSkills {
    /// The relay, and whether to offer directory reads; `None` when no
    /// mounted server declares the extension.
    pub(crate) fn of(host: &Host) -> Option<(Arc<dyn SkillsRelay>, bool)> {
        let directory_read = host.skills_declared()?;
        let relay: Arc<dyn SkillsRelay> = Arc::new(ServedSkills { host: host.clone() });
        Some((relay, directory_read))
    }
}

/// The gateway's URI of `uri` on server `alias`.
pub(crate) fn served(alias: &str, uri: &str) -> String {
    match uri.split_once("://") {
        Some(("skill", rest)) => format!("skill://{alias}/{rest}"),
        Some((scheme, rest)) => format!("skill://{alias}/~{scheme}/{rest}"),
        None => format!("skill://{alias}/~/{uri}"),
    }
}

/// The server and its URI behind a URI [`served`] made; `None` for any
/// other URI.
pub(crate) fn origin(uri: &str) -> Option<(&str, String)> {
    let rest = uri.strip_prefix("skill://")?;
    let (alias, path) = match rest.split_once('/') {
        Some((alias, path)) => (alias, path),
        None => (rest, ""),
    };
    if !switchboard_wire::is_valid_alias(alias) {
        return None;
    }
    let origin = match path.strip_prefix('~') {
        Some(scoped) => match scoped.split_once('/') {
            Some(("", rest)) => rest.to_owned(),
            Some((scheme, rest)) => format!("{scheme}://{rest}"),
            None => return None,
        },
        None => format!("skill://{path}"),
    };
    Some((alias, origin))
}

/// An entry with its URIs mapped to the gateway's; everything else as the
/// server sent it.
fn served_entry(alias: &str, mut skill: Skill) -> Skill {
    skill.uri = served(alias, &skill.uri);
    if let SkillResources::Files(files) = &mut skill.resources {
        for f in files {
            f.uri = served(alias, &f.uri);
        }
    }
    skill
}

fn options(principal: Option<&Principal>) -> CallOptions {
    let mut options = CallOptions::default();
    options.principal = principal.map(|p| p.subject.clone());
    options.caller_token = crate::tools::caller_token(principal);
    options
}

/// What a caller reads for a URI that names no server's skills here.
fn not_served(uri: &str) -> HandlerError {
    HandlerError::invalid_params(format!(
        "No skill is served at {uri}; skills/list names the skills this gateway serves"
    ))
}

impl ServedSkills {
    /// The server and URI behind `uri`, when that server is mounted.
    fn route<'u>(&self, uri: &'u str) -> Option<(&'u str, String)> {
        let (alias, origin) = origin(uri)?;
        self.host
            .servers()
            .iter()
            .any(|s| s.alias == alias)
            .then_some((alias, origin))
    }

    /// The alias level of the namespace (`skill://ALIAS`): a directory of
    /// the first segments of that server's skill paths.
    fn alias_directory(&self, alias: &str, principal: Option<&Principal>) -> ReadDirectoryResult {
        let mut children: Vec<String> = self
            .host
            .skill_entries(principal.map(|p| p.subject.as_str()))
            .into_iter()
            .filter(|(a, _)| a == alias)
            .filter_map(|(_, s)| {
                let first = served(alias, &s.uri)
                    .strip_prefix(&format!("skill://{alias}/"))?
                    .split('/')
                    .next()?
                    .to_owned();
                Some(first)
            })
            .collect();
        children.sort();
        children.dedup();
        ReadDirectoryResult {
            resources: children
                .into_iter()
                .map(|name| Resource {
                    uri: format!("skill://{alias}/{name}"),
                    name,
                    title: None,
                    description: None,
                    mime_type: Some(DIRECTORY_MIME_TYPE.into()),
                    extra: Default::default(),
                })
                .collect(),
            next_cursor: None,
            cache: CacheHints::default(),
            header: ResultHeader::complete(),
        }
    }
}

impl SkillsRelay for ServedSkills {
    fn list<'a>(
        &'a self,
        principal: Option<&'a Principal>,
    ) -> BoxFuture<'a, Result<Vec<Skill>, HandlerError>> {
        Box::pin(async move {
            Ok(self
                .host
                .skill_entries(principal.map(|p| p.subject.as_str()))
                .into_iter()
                .map(|(alias, skill)| served_entry(&alias, skill))
                .collect())
        })
    }

    fn get<'a>(
        &'a self,
        uri: &'a str,
        principal: Option<&'a Principal>,
    ) -> BoxFuture<'a, Result<Skill, HandlerError>> {
        Box::pin(async move {
            let (alias, origin) = self.route(uri).ok_or_else(|| not_served(uri))?;
            let at = SkillRef {
                server: alias,
                uri: &origin,
            };
            match self.host.get_served_skill(at, options(principal)).await {
                Ok(skill) => Ok(served_entry(alias, skill)),
                // What the caller may not reach is unknown to it.
                Err(switchboard_host::OfferError::Refused { .. }) => Err(not_served(uri)),
                Err(e) => Err(handler_error(e)),
            }
        })
    }

    fn read<'a>(
        &'a self,
        uri: &'a str,
        principal: Option<&'a Principal>,
    ) -> Option<BoxFuture<'a, Result<ReadResourceResult, HandlerError>>> {
        let (alias, origin) = self.route(uri)?;
        Some(Box::pin(async move {
            let at = SkillRef {
                server: alias,
                uri: &origin,
            };
            let mut result = self
                .host
                .read_skill_resource(at, options(principal))
                .await
                .map_err(|e| match e {
                    switchboard_host::OfferError::Refused { .. } => not_served(uri),
                    e => handler_error(e),
                })?;
            for c in &mut result.contents {
                c.uri = served(alias, &c.uri);
            }
            result.cache = CacheHints::default();
            result.header = ResultHeader::complete();
            Ok(result)
        }))
    }

    fn read_directory<'a>(
        &'a self,
        uri: &'a str,
        cursor: Option<&'a str>,
        principal: Option<&'a Principal>,
    ) -> BoxFuture<'a, Result<ReadDirectoryResult, HandlerError>> {
        Box::pin(async move {
            let (alias, origin) = self.route(uri).ok_or_else(|| {
                HandlerError::invalid_params(format!(
                    "{uri} is not a directory this gateway serves"
                ))
            })?;
            if origin == "skill://" {
                return Ok(self.alias_directory(alias, principal));
            }
            let at = SkillRef {
                server: alias,
                uri: &origin,
            };
            let mut result = self
                .host
                .read_skill_directory(at, cursor, options(principal))
                .await
                .map_err(handler_error)?;
            for r in &mut result.resources {
                r.uri = served(alias, &r.uri);
            }
            result.cache = CacheHints::default();
            result.header = ResultHeader::complete();
            Ok(result)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The gateway's skill URIs are per alias and reversible.
    #[test]
    fn served_uris_name_the_server_and_map_back() {
        for (alias, uri, want) in [
            (
                "notes",
                "skill://meeting-notes/SKILL.md",
                "skill://notes/meeting-notes/SKILL.md",
            ),
            (
                "a",
                "skill://acme/billing/refunds/x.md",
                "skill://a/acme/billing/refunds/x.md",
            ),
            (
                "gh",
                "github://o/r/refunds/SKILL.md",
                "skill://gh/~github/o/r/refunds/SKILL.md",
            ),
        ] {
            let s = served(alias, uri);
            assert_eq!(s, want);
            assert_eq!(origin(&s), Some((alias, uri.to_owned())));
        }
        assert_ne!(
            served("a", "skill://x/SKILL.md"),
            served("b", "skill://x/SKILL.md")
        );
        assert_eq!(
            origin("skill://notes"),
            Some(("notes", "skill://".to_owned()))
        );
        assert_eq!(origin("mock://a"), None);
        assert_eq!(origin("skill://bad alias/x"), None);
    }
}
