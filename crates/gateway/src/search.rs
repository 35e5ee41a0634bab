//! The gateway with tool search (`serve --tool-search`, or the config's
//! `toolSearch` set to `true` or a number of tokens the table is over):
//! each caller is listed the always-loaded tools (the config's
//! `alwaysLoad`, and the built-ins `mcp__switchboard__search_tools` and,
//! once a result was kept, `mcp__switchboard__read_result`) plus the
//! tools its own searches loaded; a search that loads tools sends
//! `notifications/tools/list_changed` to that caller's listen streams
//! alone. Every tool stays callable by name (the gate decides, as ever).
//! Callers are told apart by their principal; without authentication
//! they share one set.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use switchboard_host::{Host, LoadedTools, ToolSearch};
use switchboard_server::Notifier;
use switchboard_wire::shared::{lock, read_lock, write_lock};

/// The per-caller state of a gateway that defers its table.
#[derive(Clone, Debug, Default)]
pub(crate) struct Search {
    /// Each caller's loaded tools, by principal subject ("" without one).
    loaded: Arc<Mutex<HashMap<String, LoadedTools>>>,
    /// What every caller is listed: the deferred view without loads.
    always: Arc<RwLock<BTreeSet<String>>>,
}

impl Search {
    /// Whether the gateway defers `host`'s table: asked for, or the
    /// config's `toolSearch` says so for the table's size (`auto` never
    /// does in a gateway: its callers' models are unknown).
    pub(crate) fn wanted(host: &Host, asked: bool) -> bool {
        if asked {
            return true;
        }
        match host.config().tool_search {
            ToolSearch::On => true,
            ToolSearch::Tokens(n) => Host::tools_tokens(&host.tools()) > n,
            ToolSearch::Auto | ToolSearch::Off => false,
        }
    }

    /// Recomputes what every caller is listed, after a table change.
    pub(crate) fn refresh(&self, host: &Host) {
        let names: BTreeSet<String> = host
            .deferred_tools(&host.tools(), &LoadedTools::new())
            .into_iter()
            .map(|t| t.name)
            .collect();
        *write_lock(&self.always) = names;
    }

    /// Whether `tool` is listed to the caller `subject`.
    pub(crate) fn lists(&self, subject: Option<&str>, tool: &str) -> bool {
        if read_lock(&self.always).contains(tool) {
            return true;
        }
        lock(&self.loaded)
            .get(subject.unwrap_or(""))
            .is_some_and(|l| l.contains(tool))
    }

    /// The loaded set of the caller `subject`, made on first use: a load
    /// tells that caller's listen streams its list changed.
    pub(crate) fn loaded_for(&self, subject: Option<&str>, notifier: &Notifier) -> LoadedTools {
        let mut all = lock(&self.loaded);
        all.entry(subject.unwrap_or("").to_owned())
            .or_insert_with(|| {
                let notifier = notifier.clone();
                let subject = subject.map(str::to_owned);
                LoadedTools::with_listener(move |_| {
                    notifier.tools_list_changed_for(subject.as_deref());
                })
            })
            .clone()
    }
}
