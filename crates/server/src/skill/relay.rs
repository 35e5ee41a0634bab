//! Skills served on other servers' behalf ([`SkillsRelay`]): a gateway
//! declares the extension and hands `skills/list`, `skills/get`,
//! `resources/directory/read` and the `resources/read` of a relayed skill
//! file to the relay, with the caller's principal. The framework pages
//! the relay's entries with its own signed cursors, and writes
//! `resultType`, cache hints and `serverInfo` as on every result.

use std::sync::Arc;

use serde_json::Value;
use switchboard_wire::skills::{DIRECTORY_READ, SKILLS_GET};
use switchboard_wire::{ReadDirectoryResult, ReadResourceResult, Skill};

use crate::auth::{BoxFuture, Principal};
use crate::dispatch::{Listed, page_start, write_cache};
use crate::error::{Fault, HandlerError};
use crate::seal::{ListKind, generation};
use crate::server::Server;

/// Where a gateway's skills come from: the servers behind it. Every
/// method gets the caller's principal (`None` on stdio or without
/// authentication) and answers for it alone.
pub trait SkillsRelay: Send + Sync + 'static {
    /// Every skill entry the caller may see, under the URIs served here.
    fn list<'a>(
        &'a self,
        principal: Option<&'a Principal>,
    ) -> BoxFuture<'a, Result<Vec<Skill>, HandlerError>>;

    /// The entry of the skill whose `SKILL.md` is served at `uri`
    /// ([`HandlerError::invalid_params`] for one not served: SK-GET-3).
    fn get<'a>(
        &'a self,
        uri: &'a str,
        principal: Option<&'a Principal>,
    ) -> BoxFuture<'a, Result<Skill, HandlerError>>;

    /// A skill file served at `uri`; `None` when `uri` is no relayed skill
    /// file (the read goes on to templates, or is not found).
    fn read<'a>(
        &'a self,
        uri: &'a str,
        principal: Option<&'a Principal>,
    ) -> Option<BoxFuture<'a, Result<ReadResourceResult, HandlerError>>>;

    /// One page of the directory served at `uri` (`cursor` as the caller
    /// sent it).
    fn read_directory<'a>(
        &'a self,
        uri: &'a str,
        cursor: Option<&'a str>,
        principal: Option<&'a Principal>,
    ) -> BoxFuture<'a, Result<ReadDirectoryResult, HandlerError>>;
}

/// The relay a server was built with, and whether it offers directory
/// reads.
#[derive(Clone)]
pub(crate) struct Relay {
    pub(crate) relay: Arc<dyn SkillsRelay>,
    pub(crate) directory_read: bool,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("directory_read", &self.directory_read)
            .finish_non_exhaustive()
    }
}

impl Server {
    pub(crate) fn relay(&self) -> Option<&Relay> {
        self.inner.skills_relay.as_ref()
    }

    /// `skills/list` of a relay: its entries, paged here.
    pub(crate) async fn relay_list(
        &self,
        relay: &Relay,
        params: Option<Value>,
        principal: Option<&Principal>,
    ) -> Result<Vec<u8>, Fault> {
        let at = self.cursor_at(ListKind::Skills, params.as_ref())?;
        let skills = relay.relay.list(principal).await.map_err(fault)?;
        let generation = generation(skills.iter().map(|s| s.uri.as_str()));
        let offset = page_start(at, generation)?;
        let page = self.inner.options.page_size;
        let shown: Vec<&Skill> = skills.iter().skip(offset).take(page).collect();
        let mut out = b"{\"skills\":".to_vec();
        out.extend_from_slice(&serde_json::to_vec(&shown).unwrap_or_else(|_| b"[]".to_vec()));
        let listed = Listed {
            offset,
            len: skills.len(),
            generation,
        };
        self.write_next_cursor(&mut out, ListKind::Skills, listed, page);
        write_cache(&mut out, &self.inner.options.list_cache);
        out.extend_from_slice(b",\"resultType\":\"complete\"}");
        Ok(self.finish_result(out))
    }

    /// `skills/get` of a relay.
    pub(crate) async fn relay_get(
        &self,
        relay: &Relay,
        params: Option<Value>,
        principal: Option<&Principal>,
    ) -> Result<Vec<u8>, Fault> {
        let uri = uri_of(params.as_ref(), SKILLS_GET)?;
        let skill = relay.relay.get(&uri, principal).await.map_err(fault)?;
        let mut out = b"{\"skill\":".to_vec();
        out.extend_from_slice(&serde_json::to_vec(&skill).unwrap_or_default());
        write_cache(&mut out, &self.inner.options.list_cache);
        out.extend_from_slice(b",\"resultType\":\"complete\"}");
        Ok(self.finish_result(out))
    }

    /// `resources/directory/read` of a relay (when it offers it).
    pub(crate) async fn relay_directory(
        &self,
        relay: &Relay,
        params: Option<Value>,
        principal: Option<&Principal>,
    ) -> Result<Vec<u8>, Fault> {
        if !relay.directory_read {
            return Err(Fault::method_not_found(DIRECTORY_READ));
        }
        let uri = uri_of(params.as_ref(), DIRECTORY_READ)?;
        let cursor = params
            .as_ref()
            .and_then(|p| p.get("cursor"))
            .and_then(Value::as_str);
        let mut result = relay
            .relay
            .read_directory(&uri, cursor, principal)
            .await
            .map_err(fault)?;
        if result.cache.ttl_ms.is_none() || result.cache.cache_scope.is_none() {
            let hints = &self.inner.options.list_cache;
            result.cache.ttl_ms = result.cache.ttl_ms.or(hints.ttl_ms);
            result.cache.cache_scope = result.cache.cache_scope.or(hints.cache_scope);
        }
        Ok(self.result_bytes(&mut result, |r| &mut r.header))
    }

    /// `resources/read` of a relayed skill file; `None` when `uri` is none.
    pub(crate) async fn relay_read(
        &self,
        uri: &str,
        principal: Option<&Principal>,
    ) -> Option<Result<ReadResourceResult, Fault>> {
        let relay = self.relay()?;
        let read = relay.relay.read(uri, principal)?;
        Some(read.await.map_err(fault))
    }
}

/// `params.uri` of `method`.
fn uri_of(params: Option<&Value>, method: &str) -> Result<String, Fault> {
    params
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| Fault::invalid_params(format!("{method} needs params.uri, a string")))
}

/// A relay's error as the caller's: its JSON-RPC error as it is, a plain
/// message as -32603.
fn fault(e: HandlerError) -> Fault {
    match e.into_parts() {
        Ok(message) => Fault::internal(message),
        Err(obj) => Fault::from_rpc(obj),
    }
}
