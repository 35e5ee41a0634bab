//! [`ClientBuilder`]: the configuration, the input handler and the
//! notification sink a [`Client`] is built with, and connecting it (the
//! era probe, or the legacy handshake).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use switchboard_wire::{Implementation, Notification};

use super::Client;
use crate::error::ClientError;
use crate::input::{InputHandler, NoInput};
use crate::options::{ClientConfig, EraPolicy};
use crate::transport::{NotificationSink, Transport};

/// Builds a [`Client`].
pub struct ClientBuilder {
    name: String,
    transport: Arc<dyn Transport>,
    config: ClientConfig,
    handler: Arc<dyn InputHandler>,
    on_notification: Option<NotificationSink>,
}

impl ClientBuilder {
    /// A builder over a shared transport.
    pub fn from_arc(name: impl Into<String>, transport: Arc<dyn Transport>) -> Self {
        ClientBuilder {
            name: name.into(),
            transport,
            config: ClientConfig::default(),
            handler: Arc::new(NoInput),
            on_notification: None,
        }
    }

    /// Replaces the whole configuration.
    pub fn config(mut self, config: ClientConfig) -> Self {
        self.config = config;
        self
    }

    /// The default deadline of every request.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.config.timeout = timeout;
        self
    }

    /// How long the era probe waits before deciding the server is legacy.
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.config.probe_timeout = timeout;
        self
    }

    /// How to find the server's era.
    pub fn era_policy(mut self, policy: EraPolicy) -> Self {
        self.config.era_policy = policy;
        self
    }

    /// Declares the tasks extension (`io.modelcontextprotocol/tasks`): a
    /// server may then answer `tools/call` with a task, which
    /// [`Client::call_tool`] drives to its end.
    pub fn tasks(mut self, on: bool) -> Self {
        self.config.tasks = on;
        self
    }

    /// Whether to follow tasks' status notifications (see
    /// [`ClientConfig::task_notifications`]).
    pub fn task_notifications(mut self, on: bool) -> Self {
        self.config.task_notifications = on;
        self
    }

    /// The deadline of a whole task (see [`ClientConfig::task_timeout`]).
    pub fn task_timeout(mut self, timeout: Duration) -> Self {
        self.config.task_timeout = timeout;
        self
    }

    /// Who the client is.
    pub fn client_info(mut self, info: Implementation) -> Self {
        self.config.client_info = info;
        self
    }

    /// The handler that answers input requests; the client declares the
    /// capabilities it supports, and no others.
    pub fn input_handler(mut self, handler: impl InputHandler + 'static) -> Self {
        self.handler = Arc::new(handler);
        self
    }

    /// Receives notifications no request claimed (`notifications/message`
    /// on stdio, list-changed outside a listen stream). Without one they are
    /// logged.
    pub fn on_notification(mut self, sink: impl Fn(Notification) + Send + Sync + 'static) -> Self {
        self.on_notification = Some(Arc::new(sink));
        self
    }

    /// Builds the client and finds the server's era (see [`EraPolicy`]).
    ///
    /// # Errors
    /// [`ClientError`] when the server cannot be reached, speaks no version
    /// we support, or fails the handshake.
    pub async fn connect(self) -> Result<Client, ClientError> {
        let client = Client::unconnected(
            self.name,
            self.transport,
            self.config,
            self.handler,
            self.on_notification,
        );
        client.connect().await?;
        Ok(client)
    }
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("name", &self.name)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
