//! [`ClientBuilder`]: the client's configuration, and the connection
//! (the era probe, or the era the policy fixes) that ends in a [`Client`].

use super::*;

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

    /// Leaves the `_meta` keys `leave_out` picks out of tool results (see
    /// [`ClientConfig::leave_out_result_meta`]).
    pub fn leave_out_result_meta(mut self, leave_out: fn(&str) -> bool) -> Self {
        self.config.leave_out_result_meta = Some(leave_out);
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
        let mut capabilities = self.handler.support().capabilities();
        if self.config.tasks {
            crate::task::declare(&mut capabilities);
        }
        let inner = Arc::new(Inner {
            name: self.name,
            transport: self.transport,
            config: self.config,
            handler: self.handler,
            capabilities,
            on_notification: self.on_notification,
            next_id: AtomicI64::new(1),
            session: RwLock::new(Arc::new(Session {
                era: Era::Modern,
                version: version::LATEST.to_owned(),
                base_meta: Arc::default(),
            })),
            description: RwLock::new(None),
            header_params: Mutex::default(),
            task_support: Mutex::default(),
            cancels: crate::task::Cancels::default(),
            legacy: AtomicBool::new(false),
            in_flight: calls::InFlight::default(),
            narrowed: Mutex::new(None),
        });
        inner
            .transport
            .set_events(event_sink(Arc::downgrade(&inner)));
        let client = Client { inner };
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
