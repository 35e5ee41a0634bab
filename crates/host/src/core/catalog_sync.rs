//! The catalog kept in step with the servers: each server's prompts,
//! resources and templates are listed when it mounts (for the capabilities
//! it declares) and again on its `list_changed`; its
//! `notifications/resources/updated` are passed on. Prompt gets, reads and
//! completions take the governed path (`request`), routed through the
//! [`Catalog`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use serde_json::Value;
use switchboard_client::{Client, ClientError};
use switchboard_wire::shared::{lock, read_lock};
use switchboard_wire::types::method;
use switchboard_wire::{Era, Prompt, ResourceTemplate, types::SubscriptionFilter};
use tokio::sync::broadcast;
use tracing::{debug, warn};

use super::{Host, Inner};
use crate::catalog::{Catalog, OfferChange, ServerOffer};
use crate::config::NewTools;
use crate::pins::{DefKind, PinState, Pins};
use crate::upstream::Upstream;

/// How many offer changes a slow subscriber may fall behind.
const CHANGE_BUFFER: usize = 64;

/// Every server's offer and the catalog built from them.
#[derive(Debug)]
pub(super) struct Offers {
    servers: Mutex<BTreeMap<String, ServerOffer>>,
    catalog: RwLock<Arc<Catalog>>,
    changes: broadcast::Sender<OfferChange>,
}

impl Offers {
    pub(super) fn new() -> Offers {
        Offers {
            servers: Mutex::new(BTreeMap::new()),
            catalog: RwLock::new(Arc::new(Catalog::default())),
            changes: broadcast::channel(CHANGE_BUFFER).0,
        }
    }
}

impl Host {
    /// The prompts, resources and templates of every server under the
    /// names and URIs clients see.
    pub fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&read_lock(&self.inner.offers.catalog))
    }

    /// Changes of the catalog and resource updates, as they happen.
    pub fn subscribe_offers(&self) -> broadcast::Receiver<OfferChange> {
        self.inner.offers.changes.subscribe()
    }

    /// Lists what every connected server offers beyond tools, in
    /// parallel, then follows each one's changes in the background.
    pub(super) async fn mount_offers(&self) {
        let mut lists = tokio::task::JoinSet::new();
        for server in self.upstreams().iter() {
            if let Some(link) = server.live_link() {
                let alias = server.alias().to_owned();
                lists.spawn(async move {
                    let offer = list(&link.client, &ServerOffer::default()).await;
                    (alias, link.client, offer)
                });
            }
        }
        while let Some(joined) = lists.join_next().await {
            let Ok((alias, client, offer)) = joined else {
                continue;
            };
            self.set_offer(&alias, offer.clone());
            let task = tokio::spawn(watch(Arc::downgrade(&self.inner), alias, client, offer));
            self.tasks().push(task.abort_handle());
        }
    }

    /// Starts following what `server` offers beyond tools on its current
    /// connection (after a reconnect): one task, ended with the
    /// connection.
    pub(super) fn start_offers(&self, server: &Arc<Upstream>) {
        if self.is_shut_down() {
            return;
        }
        let Some(link) = server.live_link() else {
            return;
        };
        let alias = server.alias().to_owned();
        let weak = Arc::downgrade(&self.inner);
        let task = tokio::spawn(async move {
            let offer = list(&link.client, &ServerOffer::default()).await;
            watch(weak, alias, link.client, offer).await;
        });
        self.tasks().push(task.abort_handle());
    }

    /// Records `alias`'s offer, rebuilds the catalog and says what changed.
    fn set_offer(&self, alias: &str, offer: ServerOffer) {
        self.update_offers(alias, Some(offer));
    }

    /// Forgets what a server dropped from the config offered (reload).
    pub(super) fn drop_offer(&self, alias: &str) {
        self.update_offers(alias, None);
    }

    /// Records (`Some`) or forgets (`None`) `alias`'s offer, rebuilds the
    /// catalog and says what changed.
    fn update_offers(&self, alias: &str, offer: Option<ServerOffer>) {
        let offers = &self.inner.offers;
        let mut servers = lock(&offers.servers);
        match offer {
            Some(offer) => {
                servers.insert(alias.to_owned(), offer);
            }
            None => {
                servers.remove(alias);
            }
        }
        let new_tools = self.config_read().new_tools;
        let listed: Vec<(String, ServerOffer)> = servers
            .iter()
            .map(|(a, o)| (a.clone(), self.held_offer(a, o, new_tools)))
            .collect();
        let catalog = Catalog::build(&listed);
        let old = self.catalog();
        if let Ok(mut c) = offers.catalog.write() {
            *c = Arc::new(catalog.clone());
        }
        drop(servers);
        if old.prompts() != catalog.prompts() {
            let _ = offers.changes.send(OfferChange::Prompts);
        }
        if old.resources() != catalog.resources() || old.templates() != catalog.templates() {
            let _ = offers.changes.send(OfferChange::Resources);
        }
    }
}

impl Host {
    /// What of `alias`'s `offer` the catalog serves, under the pins: its
    /// prompts and templates are pinned when first seen (trust on first
    /// use); a changed one is served as approved, its description starting
    /// with [`CHANGED_DEF_NOTICE`], until `pins accept`; one added after
    /// the server's first listing only under `"newTools": "allow"`.
    fn held_offer(&self, alias: &str, offer: &ServerOffer, new_tools: NewTools) -> ServerOffer {
        let pins = &self.inner.pins;
        let prompts = defs_of(&offer.prompts, |p| p.name.clone());
        let templates = defs_of(&offer.templates, |t| t.uri_template.clone());
        for (kind, defs) in [
            (DefKind::Prompt, &prompts),
            (DefKind::ResourceTemplate, &templates),
        ] {
            if let Err(e) = pins.see_defs(kind, alias, defs) {
                warn!(server = %alias, error = %e, "could not record the pins");
            }
        }
        ServerOffer {
            prompts: held(
                pins,
                DefKind::Prompt,
                alias,
                &prompts,
                new_tools,
                |p: &mut Prompt| &mut p.description,
            ),
            templates: held(
                pins,
                DefKind::ResourceTemplate,
                alias,
                &templates,
                new_tools,
                |t: &mut ResourceTemplate| &mut t.description,
            ),
            ..offer.clone()
        }
    }

    /// The pin state of each prompt and template `alias` offers now (a
    /// server's last listing), with its key: for `pins list`.
    pub(super) fn offer_pins(&self) -> Vec<(String, DefKind, String, PinState)> {
        let servers = lock(&self.inner.offers.servers).clone();
        let pins = &self.inner.pins;
        let mut out = Vec::new();
        for (alias, offer) in &servers {
            for (kind, defs) in [
                (DefKind::Prompt, defs_of(&offer.prompts, |p| p.name.clone())),
                (
                    DefKind::ResourceTemplate,
                    defs_of(&offer.templates, |t| t.uri_template.clone()),
                ),
            ] {
                for (key, value) in defs {
                    let state = pins.def_state(kind, alias, &key, &value);
                    out.push((alias.clone(), kind, key, state));
                }
            }
        }
        out
    }

    /// Accepts the current definition of the prompts and templates that
    /// `chosen(alias, kind, key)` picks, then serves them as they are now.
    ///
    /// # Returns
    /// `(alias, kind, key)` of each one accepted.
    ///
    /// # Errors
    /// [`HostError::PinsIo`] when the lockfile cannot be written.
    pub(super) fn accept_offer_pins(
        &self,
        chosen: impl Fn(&str, DefKind, &str) -> bool,
    ) -> Result<Vec<(String, DefKind, String)>, crate::HostError> {
        let servers = lock(&self.inner.offers.servers).clone();
        let mut accepted = Vec::new();
        for (alias, offer) in &servers {
            let mut touched = false;
            for (kind, defs) in [
                (DefKind::Prompt, defs_of(&offer.prompts, |p| p.name.clone())),
                (
                    DefKind::ResourceTemplate,
                    defs_of(&offer.templates, |t| t.uri_template.clone()),
                ),
            ] {
                let picked: Vec<(String, Value)> = defs
                    .into_iter()
                    .filter(|(key, _)| chosen(alias, kind, key))
                    .collect();
                if picked.is_empty() {
                    continue;
                }
                self.inner.pins.accept_defs(kind, alias, &picked)?;
                touched = true;
                accepted.extend(picked.into_iter().map(|(k, _)| (alias.clone(), kind, k)));
            }
            if touched {
                self.set_offer(alias, offer.clone());
            }
        }
        Ok(accepted)
    }
}

/// What a changed prompt's or template's description starts with (then a
/// space), while it is served as approved.
pub const CHANGED_DEF_NOTICE: &str =
    "[changed since the user approved it: shown as approved until reviewed]";

/// `(key, definition)` of each item, the definition as JSON.
fn defs_of<T: serde::Serialize>(items: &[T], key: impl Fn(&T) -> String) -> Vec<(String, Value)> {
    items
        .iter()
        .map(|i| (key(i), serde_json::to_value(i).unwrap_or(Value::Null)))
        .collect()
}

/// The items of `defs` as served under their pins (see
/// [`Host::held_offer`]); `description` reaches an item's description.
fn held<T: serde::de::DeserializeOwned>(
    pins: &Pins,
    kind: DefKind,
    alias: &str,
    defs: &[(String, Value)],
    new_tools: NewTools,
    description: impl Fn(&mut T) -> &mut Option<String>,
) -> Vec<T> {
    defs.iter()
        .filter_map(|(key, value)| {
            let (shown, changed) = match pins.def_state(kind, alias, key, value) {
                PinState::New if new_tools == NewTools::Ask => return None,
                PinState::Changed { .. } => (pins.approved_def(kind, alias, key)?, true),
                _ => (value.clone(), false),
            };
            let mut item: T = serde_json::from_value(shown).ok()?;
            if changed {
                let text = description(&mut item);
                *text = Some(match text.take() {
                    Some(d) => format!("{CHANGED_DEF_NOTICE} {d}"),
                    None => CHANGED_DEF_NOTICE.to_owned(),
                });
            }
            Some(item)
        })
        .collect()
}

/// Lists what `client`'s server offers; `None` parts failed to list and
/// keep their last value.
async fn list(client: &Client, last: &ServerOffer) -> ServerOffer {
    let Some(caps) = client.server().map(|d| d.capabilities) else {
        return last.clone();
    };
    let alias = client.name().to_owned();
    let mut offer = ServerOffer {
        completions: caps.completions.is_some(),
        ..ServerOffer::default()
    };
    let failed = |what: &str, e: &ClientError| {
        warn!(server = %alias, error = %e, "listing its {what} failed");
    };
    if caps.prompts.is_some() {
        match client.list_all_prompts().await {
            Ok(l) => offer.prompts = l.items,
            Err(e) => {
                failed("prompts", &e);
                offer.prompts.clone_from(&last.prompts);
            }
        }
    }
    if caps.resources.is_some() {
        match client.list_all_resources().await {
            Ok(l) => offer.resources = l.items,
            Err(e) => {
                failed("resources", &e);
                offer.resources.clone_from(&last.resources);
            }
        }
        match client.list_all_resource_templates().await {
            Ok(l) => offer.templates = l.items,
            Err(e) => {
                failed("resource templates", &e);
                offer.templates.clone_from(&last.templates);
            }
        }
    }
    offer
}

/// Lists the server's offer, then follows its changes on a listen stream
/// (modern servers that declare them): `list_changed` re-lists, a
/// resource update is passed on under its served URI. The stream asks for
/// updates of every listed resource, and is re-opened when that list
/// changes; each time it opens, the offer is listed once more (a change
/// made before the stream was open was notified to no one). Ends with the
/// connection.
async fn watch(host: Weak<Inner>, alias: String, client: Client, mut offer: ServerOffer) {
    let mut backoff = Duration::from_millis(500);
    loop {
        {
            let Some(inner) = host.upgrade() else { return };
            Host { inner }.set_offer(&alias, offer.clone());
        }
        let Some(caps) = client.server().map(|d| d.capabilities) else {
            return;
        };
        let prompts = caps.prompts.as_ref().and_then(|c| c.list_changed) == Some(true);
        let resources = caps.resources.as_ref().and_then(|c| c.list_changed) == Some(true);
        let subscribe = caps.resources.as_ref().and_then(|c| c.subscribe) == Some(true);
        let updates = subscribe && !offer.resources.is_empty();
        if client.era() != Era::Modern || !(prompts || resources || updates) {
            return;
        }
        let filter = SubscriptionFilter {
            prompts_list_changed: prompts.then_some(true),
            resources_list_changed: resources.then_some(true),
            resource_subscriptions: updates
                .then(|| offer.resources.iter().map(|r| r.uri.clone()).collect()),
            ..SubscriptionFilter::default()
        };
        let mut sub = match client.listen(filter).await {
            Ok(sub) => sub,
            Err(e) if e.is_closed() => return,
            Err(e) => {
                debug!(server = %alias, error = %e, "opening the offer listen stream failed");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(60));
                offer = list(&client, &offer).await;
                continue;
            }
        };
        backoff = Duration::from_millis(500);
        // A change between the last listing and the stream's opening was
        // notified to no one: list once more, now that changes are.
        let fresh = list(&client, &offer).await;
        if fresh != offer {
            let reopen = subscribe
                && !fresh
                    .resources
                    .iter()
                    .map(|r| &r.uri)
                    .eq(offer.resources.iter().map(|r| &r.uri));
            offer = fresh;
            if reopen {
                // The stream watches the old URIs: open it again.
                continue;
            }
            let Some(inner) = host.upgrade() else { return };
            Host { inner }.set_offer(&alias, offer.clone());
        }
        loop {
            let Some(n) = sub.next().await else {
                // The stream ended: re-list (a change may have been
                // missed) and open it again; a closed connection ends the
                // task when listening fails.
                tokio::time::sleep(backoff).await;
                break;
            };
            match n.method.as_str() {
                method::PROMPTS_LIST_CHANGED => {
                    offer = list(&client, &offer).await;
                    let Some(inner) = host.upgrade() else { return };
                    Host { inner }.set_offer(&alias, offer.clone());
                }
                method::RESOURCES_LIST_CHANGED => {
                    // Its skills are resources too: list them again.
                    if let Some(inner) = host.upgrade() {
                        Host { inner }.refresh_skills(&alias);
                    }
                    // The URIs to watch may have changed: re-open.
                    break;
                }
                method::RESOURCES_UPDATED => {
                    let Some(uri) = n
                        .params
                        .as_ref()
                        .and_then(|p| p.get("uri"))
                        .and_then(Value::as_str)
                    else {
                        continue;
                    };
                    let Some(inner) = host.upgrade() else { return };
                    let host = Host { inner };
                    let served = host.catalog().served_uri(&alias, uri);
                    let _ = host
                        .inner
                        .offers
                        .changes
                        .send(OfferChange::ResourceUpdated(served));
                }
                _ => {}
            }
        }
        offer = list(&client, &offer).await;
    }
}
