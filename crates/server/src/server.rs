//! The [`Server`]: what it offers (tools, prompts, resources, completion),
//! how it describes itself, and its options. Built once with
//! [`ServerBuilder`], cheap to clone, shared by every runner.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::{Map, Value, json};
use switchboard_wire::meta::SERVER_INFO;
use switchboard_wire::shared::{read_lock, write_lock};
use switchboard_wire::{
    Implementation, JsonObject, ServerCapabilities,
    types::{
        CacheHints, CacheScope, DiscoverResult, ListChangedCapability, ResourcesCapability,
        ResultHeader,
    },
    version,
};

use crate::cancel::Cancellation;
use crate::completion::{CompletionHandler, ErasedCompletion};
use crate::error::BuildError;
use crate::legacy::Sessions;
use crate::notify::{Deliverable, Notifier};
use crate::prompt::{PromptEntry, PromptHandler, PromptSpec};
use crate::resource::{
    ResourceEntry, ResourceHandler, ResourceSpec, TemplateEntry, TemplateHandler, TemplateSpec,
};
use crate::seal::Keys;
use crate::state::ReplayGuard;
use crate::tool::{ToolEntry, ToolHandler, ToolSpec};

/// An MCP server: cheap to clone, shared by every runner and request.
///
/// ```no_run
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use switchboard_server::Server;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct EchoArgs {
///     /// The text to send back.
///     text: String,
/// }
///
/// async fn echo(args: EchoArgs) -> String {
///     args.text
/// }
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let server = Server::builder("echo", "1.0.0")
///     .tool("echo", "Returns its text argument", echo)
///     .build()?;
/// switchboard_server::stdio::serve(server).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.inner.info.name)
            .field("version", &self.inner.info.version)
            .finish_non_exhaustive()
    }
}

pub(crate) struct Inner {
    pub(crate) info: Implementation,
    pub(crate) options: Options,
    pub(crate) capabilities: ServerCapabilities,
    pub(crate) registry: RwLock<Arc<Registry>>,
    pub(crate) completion: Option<Box<dyn ErasedCompletion>>,
    pub(crate) keys: Keys,
    pub(crate) replay: ReplayGuard,
    pub(crate) notifier: Notifier,
    pub(crate) shutdown: Cancellation,
    /// `"_meta":{"io.modelcontextprotocol/serverInfo":{…}}`, ready to splice.
    pub(crate) meta_member: Vec<u8>,
    /// The `serverInfo` value.
    pub(crate) server_info: Value,
    /// The complete `server/discover` result.
    pub(crate) discover: Vec<u8>,
    /// With live instructions: the `server/discover` result to complete
    /// with them on each request.
    pub(crate) live_discover: Option<DiscoverResult>,
    pub(crate) sessions: Option<Sessions>,
    pub(crate) tasks: crate::task::TaskStore,
    /// Which tools `tools/list` shows to whom ([`Server::set_tool_filter`]).
    pub(crate) tool_filter: RwLock<Option<ToolFilter>>,
    /// Which prompts, resources and templates are listed to whom
    /// ([`Server::set_offer_filter`]).
    pub(crate) offer_filter: RwLock<Option<OfferFilter>>,
    /// The skills served, when any source was given.
    pub(crate) skills: Option<Arc<crate::skill::Catalog>>,
    /// Skills served on other servers' behalf ([`ServerBuilder::skills_relay`]).
    pub(crate) skills_relay: Option<crate::skill::Relay>,
    /// Answered tool calls by idempotency key, for retries.
    pub(crate) idempotency: Arc<crate::idempotency::Record>,
}

/// Decides whether a tool is listed for a caller: the caller's
/// [`Principal`](crate::Principal) (`None` on stdio or without
/// authentication) and the tool's name.
pub type ToolFilter = Arc<dyn Fn(Option<&crate::Principal>, &str) -> bool + Send + Sync>;

/// What an [`OfferFilter`] is asked about: a prompt by name, a resource by
/// URI, a resource template by URI template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offered<'a> {
    /// A prompt's name.
    Prompt(&'a str),
    /// A resource's URI.
    Resource(&'a str),
    /// A resource template's URI template.
    Template(&'a str),
}

/// Decides whether a prompt, resource or template is listed for a caller
/// (its [`Principal`](crate::Principal), `None` on stdio or without
/// authentication).
pub type OfferFilter = Arc<dyn Fn(Option<&crate::Principal>, Offered<'_>) -> bool + Send + Sync>;

/// Server-wide settings.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    pub(crate) page_size: usize,
    pub(crate) discover_cache: CacheHints,
    pub(crate) list_cache: CacheHints,
    pub(crate) read_cache: CacheHints,
    pub(crate) state_ttl: Duration,
    pub(crate) instructions: Option<String>,
    /// Instructions computed on each `server/discover` (and legacy
    /// `initialize`), in place of `instructions`.
    pub(crate) live_instructions: Option<LiveText>,
    pub(crate) logging: bool,
    pub(crate) legacy: bool,
    /// How long a legacy session waits for the client to answer a
    /// server-to-client request.
    pub(crate) legacy_answer_timeout: Duration,
    /// Whether results carry the `serverInfo` `_meta` (WIRE-17).
    pub(crate) server_info_meta: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            page_size: 100,
            discover_cache: CacheHints::new(3_600_000, CacheScope::Public),
            list_cache: CacheHints::new(60_000, CacheScope::Public),
            read_cache: CacheHints::new(0, CacheScope::Private),
            state_ttl: Duration::from_secs(600),
            instructions: None,
            live_instructions: None,
            logging: false,
            legacy: true,
            legacy_answer_timeout: Duration::from_secs(300),
            server_info_meta: true,
        }
    }
}

/// Text computed when it is sent (live instructions), for the caller
/// asking (`None` on stdio or without authentication).
#[derive(Clone)]
pub(crate) struct LiveText(Arc<LiveTextFn>);

/// What computes a [`LiveText`] for the caller asking.
type LiveTextFn = dyn Fn(Option<&crate::Principal>) -> String + Send + Sync;

impl std::fmt::Debug for LiveText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LiveText")
    }
}

/// A map from names (of tools, prompts, resources) looked up on every
/// request: foldhash, several times cheaper than SipHash for short names.
/// Only the server inserts names, so a caller cannot grow a chain of
/// collisions; the seed is random per map all the same.
pub(crate) type NameMap<V> = HashMap<String, V, foldhash::fast::RandomState>;

/// Everything the server offers, swapped whole when it changes at run time.
#[derive(Default)]
pub(crate) struct Registry {
    pub(crate) tools: Vec<Arc<ToolEntry>>,
    pub(crate) tool_index: NameMap<usize>,
    /// Tools callable by name but not listed ([`ToolSpec::unlisted`]).
    pub(crate) unlisted_tools: NameMap<Arc<ToolEntry>>,
    pub(crate) prompts: Vec<Arc<PromptEntry>>,
    pub(crate) prompt_index: NameMap<usize>,
    pub(crate) resources: Vec<Arc<ResourceEntry>>,
    pub(crate) resource_index: NameMap<usize>,
    pub(crate) templates: Vec<Arc<TemplateEntry>>,
}

impl Registry {
    pub(crate) fn tool(&self, name: &str) -> Option<&Arc<ToolEntry>> {
        match self.tool_index.get(name) {
            Some(i) => Some(&self.tools[*i]),
            None => self.unlisted_tools.get(name),
        }
    }

    pub(crate) fn prompt(&self, name: &str) -> Option<&Arc<PromptEntry>> {
        self.prompt_index.get(name).map(|i| &self.prompts[*i])
    }

    pub(crate) fn resource(&self, uri: &str) -> Option<&Arc<ResourceEntry>> {
        self.resource_index.get(uri).map(|i| &self.resources[*i])
    }

    fn add_tool(&mut self, entry: ToolEntry) -> Result<(), BuildError> {
        if self.tool(&entry.def.name).is_some() {
            return Err(BuildError::Duplicate {
                kind: "tool",
                name: entry.def.name,
            });
        }
        if entry.unlisted {
            self.unlisted_tools
                .insert(entry.def.name.clone(), Arc::new(entry));
            return Ok(());
        }
        self.tool_index
            .insert(entry.def.name.clone(), self.tools.len());
        self.tools.push(Arc::new(entry));
        Ok(())
    }

    fn add_prompt(&mut self, entry: PromptEntry) -> Result<(), BuildError> {
        if self.prompt_index.contains_key(&entry.def.name) {
            return Err(BuildError::Duplicate {
                kind: "prompt",
                name: entry.def.name,
            });
        }
        self.prompt_index
            .insert(entry.def.name.clone(), self.prompts.len());
        self.prompts.push(Arc::new(entry));
        Ok(())
    }

    fn add_resource(&mut self, entry: ResourceEntry) -> Result<(), BuildError> {
        if self.resource_index.contains_key(&entry.def.uri) {
            return Err(BuildError::Duplicate {
                kind: "resource",
                name: entry.def.uri,
            });
        }
        self.resource_index
            .insert(entry.def.uri.clone(), self.resources.len());
        self.resources.push(Arc::new(entry));
        Ok(())
    }

    fn add_template(&mut self, entry: TemplateEntry) -> Result<(), BuildError> {
        if self
            .templates
            .iter()
            .any(|t| t.def.uri_template == entry.def.uri_template)
        {
            return Err(BuildError::Duplicate {
                kind: "resource template",
                name: entry.def.uri_template,
            });
        }
        self.templates.push(Arc::new(entry));
        Ok(())
    }

    fn reindex(&mut self) {
        self.tool_index = index(&self.tools, |t| &t.def.name);
        self.prompt_index = index(&self.prompts, |p| &p.def.name);
        self.resource_index = index(&self.resources, |r| &r.def.uri);
    }

    fn clone_shallow(&self) -> Registry {
        Registry {
            tools: self.tools.clone(),
            tool_index: self.tool_index.clone(),
            unlisted_tools: self.unlisted_tools.clone(),
            prompts: self.prompts.clone(),
            prompt_index: self.prompt_index.clone(),
            resources: self.resources.clone(),
            resource_index: self.resource_index.clone(),
            templates: self.templates.clone(),
        }
    }
}

fn index<T>(items: &[Arc<T>], key: impl Fn(&T) -> &String) -> NameMap<usize> {
    items
        .iter()
        .enumerate()
        .map(|(i, t)| (key(t).clone(), i))
        .collect()
}

/// Builds a [`Server`].
pub struct ServerBuilder {
    info: Implementation,
    options: Options,
    registry: Registry,
    completion: Option<Box<dyn ErasedCompletion>>,
    key: Option<Vec<u8>>,
    replay_ledger: Option<std::path::PathBuf>,
    use_ledger: Option<std::sync::Arc<dyn crate::state::UseLedger>>,
    extensions: JsonObject,
    experimental: Option<JsonObject>,
    declare_tools: bool,
    declare_prompts: bool,
    declare_resources: bool,
    error: Option<BuildError>,
    pub(crate) task_options: crate::task::TaskOptions,
    skills: crate::skill::SkillsBuilder,
    skills_relay: Option<crate::skill::Relay>,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("name", &self.info.name)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Starts building a server that calls itself `name` `version` (sent as
    /// `serverInfo` in every result's `_meta`, WIRE-17).
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            info: Implementation::new(name, version),
            options: Options::default(),
            registry: Registry::default(),
            completion: None,
            key: None,
            replay_ledger: None,
            use_ledger: None,
            extensions: JsonObject::new(),
            experimental: None,
            declare_tools: false,
            declare_prompts: false,
            declare_resources: false,
            error: None,
            task_options: crate::task::TaskOptions::default(),
            skills: crate::skill::SkillsBuilder::default(),
            skills_relay: None,
        }
    }

    /// Who the server says it is.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// What `server/discover` advertises.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.inner.capabilities
    }

    /// Announces changes to open `subscriptions/listen` streams.
    pub fn notifier(&self) -> &Notifier {
        &self.inner.notifier
    }

    /// Ends every open listen stream gracefully (each gets its closing
    /// result) and makes runners stop accepting work. Runners also call it
    /// when their shutdown signal fires.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
    }

    /// Whether [`Server::shutdown`] was called.
    pub fn is_shut_down(&self) -> bool {
        self.inner.shutdown.is_cancelled()
    }

    pub(crate) fn registry(&self) -> Arc<Registry> {
        Arc::clone(&read_lock(&self.inner.registry))
    }

    /// The tool named `name`, looked up under the registry's lock without
    /// holding on to the registry (a call needs nothing else of it).
    pub(crate) fn tool(&self, name: &str) -> Option<Arc<ToolEntry>> {
        read_lock(&self.inner.registry).tool(name).cloned()
    }

    pub(crate) fn replay_guard(&self) -> &ReplayGuard {
        &self.inner.replay
    }

    fn update(
        &self,
        change: impl FnOnce(&mut Registry) -> Result<(), BuildError>,
    ) -> Result<(), BuildError> {
        let mut guard = write_lock(&self.inner.registry);
        let mut next = guard.clone_shallow();
        change(&mut next)?;
        *guard = Arc::new(next);
        Ok(())
    }

    /// Adds a tool while running and tells listen streams the list changed.
    ///
    /// # Errors
    /// As [`ServerBuilder::build`] for this tool.
    pub fn add_tool<M: 'static, H: ToolHandler<M>>(
        &self,
        spec: ToolSpec,
        handler: H,
    ) -> Result<(), BuildError> {
        let entry = ToolEntry::new(spec, handler)?;
        let listed = !entry.unlisted;
        self.update(|r| r.add_tool(entry))?;
        if listed {
            self.inner.notifier.tools_list_changed();
        }
        Ok(())
    }

    /// Adds a tool while running, or replaces the one of the same name in
    /// the same step (a call never finds the name missing in between), and
    /// tells listen streams the list changed.
    ///
    /// # Errors
    /// As [`ServerBuilder::build`] for this tool.
    pub fn put_tool<M: 'static, H: ToolHandler<M>>(
        &self,
        spec: ToolSpec,
        handler: H,
    ) -> Result<(), BuildError> {
        let entry = ToolEntry::new(spec, handler)?;
        self.update(|r| match r.tool_index.get(&entry.def.name) {
            Some(&i) => {
                r.tools[i] = Arc::new(entry);
                Ok(())
            }
            None => r.add_tool(entry),
        })?;
        self.inner.notifier.tools_list_changed();
        Ok(())
    }

    /// Lists to each caller only the tools `filter` keeps for it (by its
    /// principal and the tool's name); the others are left out of its
    /// `tools/list`. Calls are not filtered here: the handler decides (a
    /// gateway's gate refuses a call its principal may not make). Replaces
    /// any earlier filter.
    pub fn set_tool_filter(
        &self,
        filter: impl Fn(Option<&crate::Principal>, &str) -> bool + Send + Sync + 'static,
    ) {
        *write_lock(&self.inner.tool_filter) = Some(Arc::new(filter));
    }

    /// The tool filter, if one is set.
    pub(crate) fn tool_filter(&self) -> Option<ToolFilter> {
        read_lock(&self.inner.tool_filter).clone()
    }

    /// Lists to each caller only the prompts, resources and resource
    /// templates `filter` keeps for it; the others are left out of its
    /// `prompts/list`, `resources/list` and `resources/templates/list`, and
    /// its `subscriptions/listen` hears no updates of them. Gets, reads and
    /// completions are not filtered here: the handler decides (a
    /// completion of something hidden reaches the completion handler
    /// without the check of its argument's name, which would tell the
    /// caller it exists; the handler refuses it as unknown). Replaces any
    /// earlier filter.
    pub fn set_offer_filter(
        &self,
        filter: impl Fn(Option<&crate::Principal>, Offered<'_>) -> bool + Send + Sync + 'static,
    ) {
        *write_lock(&self.inner.offer_filter) = Some(Arc::new(filter));
    }

    /// The offer filter, if one is set.
    pub(crate) fn offer_filter(&self) -> Option<OfferFilter> {
        read_lock(&self.inner.offer_filter).clone()
    }

    /// Removes a tool while running; `true` if it existed.
    pub fn remove_tool(&self, name: &str) -> bool {
        let mut found = false;
        let mut unlisted = false;
        let _ = self.update(|r| {
            let before = r.tools.len();
            r.tools.retain(|t| t.def.name != name);
            found = r.tools.len() != before;
            unlisted = r.unlisted_tools.remove(name).is_some();
            r.reindex();
            Ok(())
        });
        if found {
            self.inner.notifier.tools_list_changed();
        }
        found |= unlisted;
        found
    }

    /// Adds a prompt while running and tells listen streams.
    ///
    /// # Errors
    /// As [`ServerBuilder::build`] for this prompt.
    pub fn add_prompt<M: 'static, H: PromptHandler<M>>(
        &self,
        spec: PromptSpec,
        handler: H,
    ) -> Result<(), BuildError> {
        let entry = PromptEntry::new(spec, handler)?;
        self.update(|r| r.add_prompt(entry))?;
        self.inner.notifier.prompts_list_changed();
        Ok(())
    }

    /// Removes a prompt while running; `true` if it existed.
    pub fn remove_prompt(&self, name: &str) -> bool {
        let mut found = false;
        let _ = self.update(|r| {
            let before = r.prompts.len();
            r.prompts.retain(|p| p.def.name != name);
            found = r.prompts.len() != before;
            r.reindex();
            Ok(())
        });
        if found {
            self.inner.notifier.prompts_list_changed();
        }
        found
    }

    /// Adds a resource while running and tells listen streams.
    ///
    /// # Errors
    /// As [`ServerBuilder::build`] for this resource.
    pub fn add_resource<M: 'static, H: ResourceHandler<M>>(
        &self,
        spec: ResourceSpec,
        handler: H,
    ) -> Result<(), BuildError> {
        let entry = ResourceEntry::new(spec, handler)?;
        self.update(|r| r.add_resource(entry))?;
        self.inner.notifier.resources_list_changed();
        Ok(())
    }

    /// Removes a resource while running; `true` if it existed.
    pub fn remove_resource(&self, uri: &str) -> bool {
        let mut found = false;
        let _ = self.update(|r| {
            let before = r.resources.len();
            r.resources.retain(|x| x.def.uri != uri);
            found = r.resources.len() != before;
            r.reindex();
            Ok(())
        });
        if found {
            self.inner.notifier.resources_list_changed();
        }
        found
    }

    /// Adds a resource template while running and tells listen streams.
    ///
    /// # Errors
    /// As [`ServerBuilder::build`] for this template.
    pub fn add_template<M: 'static, H: TemplateHandler<M>>(
        &self,
        spec: TemplateSpec,
        handler: H,
    ) -> Result<(), BuildError> {
        let entry = TemplateEntry::new(spec, handler)?;
        self.update(|r| r.add_template(entry))?;
        self.inner.notifier.resources_list_changed();
        Ok(())
    }

    /// Removes a resource template while running; `true` if it existed.
    pub fn remove_template(&self, uri_template: &str) -> bool {
        let mut found = false;
        let _ = self.update(|r| {
            let before = r.templates.len();
            r.templates.retain(|t| t.def.uri_template != uri_template);
            found = r.templates.len() != before;
            Ok(())
        });
        if found {
            self.inner.notifier.resources_list_changed();
        }
        found
    }

    /// What listen streams can deliver, from the capabilities.
    pub(crate) fn deliverable(&self) -> Deliverable {
        let c = &self.inner.capabilities;
        let listed = |cap: &Option<ListChangedCapability>| {
            cap.as_ref().is_some_and(|c| c.list_changed == Some(true))
        };
        Deliverable {
            tools: listed(&c.tools),
            prompts: listed(&c.prompts),
            resources: c
                .resources
                .as_ref()
                .is_some_and(|r| r.list_changed == Some(true)),
            resource_updates: c
                .resources
                .as_ref()
                .is_some_and(|r| r.subscribe == Some(true)),
        }
    }

    /// The instructions to send now to `principal`: the live ones when
    /// set, else the fixed ones.
    pub(crate) fn instructions_now(&self, principal: Option<&crate::Principal>) -> Option<String> {
        match &self.inner.options.live_instructions {
            Some(LiveText(text)) => Some(text(principal)),
            None => self.inner.options.instructions.clone(),
        }
    }

    /// The `server/discover` result for `principal`, with the instructions
    /// of the moment.
    pub(crate) fn discover_bytes(&self, principal: Option<&crate::Principal>) -> Vec<u8> {
        match &self.inner.live_discover {
            None => self.inner.discover.clone(),
            Some(template) => {
                let mut discover = template.clone();
                discover.instructions = self.instructions_now(principal);
                serde_json::to_vec(&discover).unwrap_or_default()
            }
        }
    }

    /// Adds the `serverInfo` member to a result's own `_meta` (WIRE-17),
    /// unless it is configured off or the handler set one.
    pub(crate) fn add_server_info(&self, meta: &mut JsonObject) {
        if self.inner.options.server_info_meta {
            meta.entry(SERVER_INFO)
                .or_insert_with(|| self.inner.server_info.clone());
        }
    }

    /// Finishes a result object that has no `_meta` of its own: adds the
    /// `serverInfo` `_meta` (WIRE-17), unless it is configured off.
    pub(crate) fn finish_result(&self, mut bytes: Vec<u8>) -> Vec<u8> {
        if !self.inner.options.server_info_meta || bytes.last() != Some(&b'}') {
            return bytes;
        }
        bytes.pop();
        if bytes.len() > 1 {
            bytes.push(b',');
        }
        bytes.extend_from_slice(&self.inner.meta_member);
        bytes.push(b'}');
        bytes
    }
}

impl ServerBuilder {
    fn keep_error(&mut self, r: Result<(), BuildError>) {
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
    }

    /// Sets a display title for `serverInfo`.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// Natural-language guidance for the model, sent in `server/discover`.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.options.instructions = Some(text.into());
        self
    }

    /// Instructions computed by `text` each time they are sent (every
    /// `server/discover`, and a legacy `initialize`), e.g. to report what
    /// is currently unavailable; replaces [`ServerBuilder::instructions`].
    /// Pair it with a short [`ServerBuilder::discover_cache`], or clients
    /// may keep an old text for the default hour.
    pub fn instructions_with(self, text: impl Fn() -> String + Send + Sync + 'static) -> Self {
        self.instructions_for(move |_| text())
    }

    /// Instructions computed by `text` for the caller asking, each time
    /// they are sent (as [`ServerBuilder::instructions_with`]): `text` gets
    /// the caller's [`Principal`](crate::Principal) (`None` on stdio or
    /// without authentication), e.g. to speak only of what that caller may
    /// use. Pair it with a private [`ServerBuilder::discover_cache`].
    pub fn instructions_for(
        mut self,
        text: impl Fn(Option<&crate::Principal>) -> String + Send + Sync + 'static,
    ) -> Self {
        self.options.live_instructions = Some(LiveText(Arc::new(text)));
        self
    }

    /// How many entries one page of a list carries (default 100).
    pub fn page_size(mut self, n: usize) -> Self {
        self.options.page_size = n;
        self
    }

    /// Cache hints of `server/discover` (default 1 hour, public).
    pub fn discover_cache(mut self, ttl_ms: u32, scope: CacheScope) -> Self {
        self.options.discover_cache = CacheHints::new(ttl_ms, scope);
        self
    }

    /// Cache hints of the four list results (default 60 s, public). Use
    /// `Private` when lists depend on who is asking.
    pub fn list_cache(mut self, ttl_ms: u32, scope: CacheScope) -> Self {
        self.options.list_cache = CacheHints::new(ttl_ms, scope);
        self
    }

    /// Default cache hints of `resources/read` (default 0, private);
    /// resources may set their own.
    pub fn read_cache(mut self, ttl_ms: u32, scope: CacheScope) -> Self {
        self.options.read_cache = CacheHints::new(ttl_ms, scope);
        self
    }

    /// The key that signs `requestState` and cursors. Give every replica
    /// behind a load balancer the same key; without one, a random key per
    /// process is used (states and cursors then die with the process).
    pub fn signing_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Records each used single-use `requestState` in the file at `path`
    /// as well as in memory, so that servers sharing the file (replicas
    /// behind one URL, with one [`ServerBuilder::signing_key`]) accept such
    /// a state once between them. The file is created if missing; a use
    /// that cannot be recorded is refused.
    pub fn replay_ledger(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.replay_ledger = Some(path.into());
        self
    }

    /// Records each used single-use `requestState` in `ledger` as well as
    /// in memory (in place of a [`ServerBuilder::replay_ledger`] file):
    /// servers sharing the ledger accept such a state once between them,
    /// and a use the ledger cannot record is refused.
    pub fn use_ledger(mut self, ledger: std::sync::Arc<dyn crate::state::UseLedger>) -> Self {
        self.use_ledger = Some(ledger);
        self
    }

    /// How long a `requestState` stays valid (default 10 minutes).
    pub fn request_state_ttl(mut self, ttl: Duration) -> Self {
        self.options.state_ttl = ttl;
        self
    }

    /// Declares the (deprecated) `logging` capability, so handlers may send
    /// `notifications/message` to requests that ask for them (LOG-02).
    pub fn logging(mut self, on: bool) -> Self {
        self.options.logging = on;
        self
    }

    /// Whether legacy 2025-11-25 clients (`initialize`, sessions, ping) are
    /// served alongside modern ones (default on).
    pub fn legacy(mut self, on: bool) -> Self {
        self.options.legacy = on;
        self
    }

    /// How long a legacy session waits for the client to answer a
    /// server-to-client request (default 5 minutes).
    pub fn legacy_answer_timeout(mut self, timeout: Duration) -> Self {
        self.options.legacy_answer_timeout = timeout;
        self
    }

    /// Whether every result's `_meta` names this server
    /// (`io.modelcontextprotocol/serverInfo`, default on). The spec asks
    /// for it unless a server is configured not to (WIRE-17): off, the
    /// answers are smaller, and nothing else changes (a legacy
    /// `initialize` still carries `serverInfo`, which it requires).
    pub fn server_info_meta(mut self, on: bool) -> Self {
        self.options.server_info_meta = on;
        self
    }

    /// Advertises an extension in `capabilities.extensions` (VER-04).
    pub fn extension(mut self, id: impl Into<String>, settings: Value) -> Self {
        self.extensions.insert(id.into(), settings);
        self
    }

    /// Advertises `capabilities.experimental`.
    pub fn experimental(mut self, value: JsonObject) -> Self {
        self.experimental = Some(value);
        self
    }

    /// Declares the tools capability even with no tool yet (tools added at
    /// run time).
    pub fn declare_tools(mut self) -> Self {
        self.declare_tools = true;
        self
    }

    /// Declares the prompts capability even with no prompt yet.
    pub fn declare_prompts(mut self) -> Self {
        self.declare_prompts = true;
        self
    }

    /// Declares the resources capability even with no resource yet.
    pub fn declare_resources(mut self) -> Self {
        self.declare_resources = true;
        self
    }

    /// Registers a tool whose input schema is derived from the handler's
    /// argument type.
    pub fn tool<M: 'static, H: ToolHandler<M>>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        handler: H,
    ) -> Self {
        self.tool_spec(ToolSpec::new(name).description(description), handler)
    }

    /// Registers a tool described by `spec`.
    pub fn tool_spec<M: 'static, H: ToolHandler<M>>(mut self, spec: ToolSpec, handler: H) -> Self {
        let r = ToolEntry::new(spec, handler).and_then(|e| self.registry.add_tool(e));
        self.keep_error(r);
        self
    }

    /// Registers a prompt whose arguments are derived from the handler's
    /// argument type.
    pub fn prompt<M: 'static, H: PromptHandler<M>>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        handler: H,
    ) -> Self {
        self.prompt_spec(PromptSpec::new(name).description(description), handler)
    }

    /// Registers a prompt described by `spec`.
    pub fn prompt_spec<M: 'static, H: PromptHandler<M>>(
        mut self,
        spec: PromptSpec,
        handler: H,
    ) -> Self {
        let r = PromptEntry::new(spec, handler).and_then(|e| self.registry.add_prompt(e));
        self.keep_error(r);
        self
    }

    /// Registers a fixed resource.
    pub fn resource<M: 'static, H: ResourceHandler<M>>(
        mut self,
        spec: ResourceSpec,
        handler: H,
    ) -> Self {
        let r = ResourceEntry::new(spec, handler).and_then(|e| self.registry.add_resource(e));
        self.keep_error(r);
        self
    }

    /// Registers a resource template.
    pub fn resource_template<M: 'static, H: TemplateHandler<M>>(
        mut self,
        spec: TemplateSpec,
        handler: H,
    ) -> Self {
        let r = TemplateEntry::new(spec, handler).and_then(|e| self.registry.add_template(e));
        self.keep_error(r);
        self
    }

    /// Serves the skills under `path` (the `io.modelcontextprotocol/skills`
    /// extension): every directory below it holding a `SKILL.md` is a
    /// skill (`path/acme/billing/refunds/SKILL.md` is the skill `refunds`
    /// at `skill://acme/billing/refunds/SKILL.md`), with every file below
    /// it. Digests and sizes are computed at build time and again, before
    /// each skills request, for the files that changed. A skill that breaks
    /// the extension's rules is not served, and the reason is logged.
    /// Declares the extension (with `directoryRead`) and `resources`.
    pub fn skills_dir(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.skills.dirs.push(path.into());
        self
    }

    /// Serves a skill given in code (fixed files, or generated content:
    /// [`SkillSpec::dynamic`](crate::SkillSpec::dynamic)). Declares the
    /// extension and `resources`.
    pub fn skill(mut self, spec: crate::SkillSpec) -> Self {
        self.skills.specs.push(spec);
        self
    }

    /// Serves skills on other servers' behalf (a gateway): the extension
    /// is declared (with `directoryRead` when `directory_read`), with the
    /// `resources` capability, and `skills/list`, `skills/get`,
    /// `resources/directory/read` and the `resources/read` of the files
    /// the relay serves go to it with the caller's principal. Replaces
    /// [`ServerBuilder::skills_dir`] and [`ServerBuilder::skill`].
    pub fn skills_relay(
        mut self,
        relay: std::sync::Arc<dyn crate::SkillsRelay>,
        directory_read: bool,
    ) -> Self {
        self.skills_relay = Some(crate::skill::Relay {
            relay,
            directory_read,
        });
        self
    }

    /// Whether `resources/directory/read` is offered with skills (default
    /// on: the extension is declared with `directoryRead: true`).
    pub fn skills_directory_read(mut self, on: bool) -> Self {
        self.skills.directory_read = on;
        self
    }

    /// Sets the `completion/complete` handler and declares `completions`.
    pub fn completion<M: 'static, H: CompletionHandler<M>>(mut self, handler: H) -> Self {
        self.completion = Some(Box::new(crate::handler::Typed::new(handler)));
        self
    }

    /// Builds the server.
    ///
    /// # Errors
    /// The first [`BuildError`] met while registering (duplicate names,
    /// unusable schemas, bad `x-mcp-header` annotations, bad templates), or
    /// a configuration error.
    pub fn build(self) -> Result<Server, BuildError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if self.options.page_size == 0 {
            return Err(BuildError::Config("page size must be at least 1".into()));
        }
        if !self.task_options.peers.is_empty() && self.task_options.origin.is_none() {
            // Peers send work on by the replica names leading ids: a
            // nameless replica's would never be found.
            return Err(BuildError::Config(
                "replica peers need this replica's own name (task_origin)".into(),
            ));
        }
        let keys = Keys::new(self.key.as_deref())
            .map_err(|e| BuildError::Config(format!("no operating-system randomness: {}", e.0)))?;
        let replay = match (&self.use_ledger, &self.replay_ledger) {
            (Some(ledger), _) => ReplayGuard::shared(ledger.clone()),
            (None, None) => ReplayGuard::default(),
            (None, Some(path)) => ReplayGuard::with_ledger(path).map_err(|e| {
                BuildError::Config(format!(
                    "cannot open the replay ledger {}: {e}",
                    path.display()
                ))
            })?,
        };
        let skills = self.skills.build()?;
        let mut extensions = self.extensions;
        let skills = skills.filter(|_| self.skills_relay.is_none());
        let directory_read = match (&self.skills_relay, &skills) {
            (Some(relay), _) => Some(relay.directory_read),
            (None, Some(catalog)) => Some(catalog.directory_read),
            (None, None) => None,
        };
        if let Some(directory_read) = directory_read {
            extensions.insert(
                switchboard_wire::skills::EXTENSION_ID.to_owned(),
                switchboard_wire::SkillsCapability::new(directory_read).to_value(),
            );
        }
        let list_changed = || {
            Some(ListChangedCapability {
                list_changed: Some(true),
                extra: JsonObject::new(),
            })
        };
        let r = &self.registry;
        let capabilities = ServerCapabilities {
            tools: (self.declare_tools || !r.tools.is_empty())
                .then(list_changed)
                .flatten(),
            prompts: (self.declare_prompts || !r.prompts.is_empty())
                .then(list_changed)
                .flatten(),
            // Skill files are resources: the extension needs the
            // capability (SK-CAP-4).
            resources: (self.declare_resources
                || !r.resources.is_empty()
                || !r.templates.is_empty()
                || directory_read.is_some())
            .then(|| ResourcesCapability {
                subscribe: Some(true),
                list_changed: Some(true),
                extra: JsonObject::new(),
            }),
            completions: self.completion.as_ref().map(|_| JsonObject::new()),
            logging: self.options.logging.then(JsonObject::new),
            experimental: self.experimental,
            extensions: (!extensions.is_empty()).then_some(extensions),
            extra: JsonObject::new(),
        };
        let server_info = serde_json::to_value(&self.info).unwrap_or_else(|_| json!({}));
        let mut meta = Map::new();
        meta.insert(SERVER_INFO.into(), server_info.clone());
        let meta_member = {
            let mut out = b"\"_meta\":".to_vec();
            out.extend_from_slice(&serde_json::to_vec(&meta).unwrap_or_else(|_| b"{}".to_vec()));
            out
        };
        let discover = DiscoverResult {
            supported_versions: version::MODERN_SUPPORTED
                .iter()
                .map(|v| (*v).to_owned())
                .collect(),
            capabilities: capabilities.clone(),
            instructions: self.options.instructions.clone(),
            cache: self.options.discover_cache.clone(),
            header: ResultHeader {
                result_type: Some(switchboard_wire::types::ResultType::Complete),
                meta: self.options.server_info_meta.then_some(meta),
                extra: JsonObject::new(),
            },
        };
        let live_discover = self
            .options
            .live_instructions
            .is_some()
            .then(|| discover.clone());
        let discover = serde_json::to_vec(&discover).unwrap_or_default();
        let sessions = self.options.legacy.then(Sessions::new);
        Ok(Server {
            inner: Arc::new(Inner {
                info: self.info,
                options: self.options,
                capabilities,
                registry: RwLock::new(Arc::new(self.registry)),
                completion: self.completion,
                keys,
                replay,
                notifier: Notifier::new(),
                shutdown: Cancellation::new(),
                meta_member,
                server_info,
                discover,
                live_discover,
                sessions,
                tasks: crate::task::TaskStore::new(self.task_options),
                tool_filter: RwLock::new(None),
                offer_filter: RwLock::new(None),
                skills,
                skills_relay: self.skills_relay,
                idempotency: Arc::default(),
            }),
        })
    }
}
