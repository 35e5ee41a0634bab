//! The handler shapes, written once.
//!
//! Tools, prompts, resources, templates and completions each accept plain
//! async functions of a few shapes (with or without the input, with or
//! without the [`Context`](crate::Context)). Each shape is a blanket impl of
//! the kind's handler trait for `Fn(..) -> impl Future`; the impls differ
//! only in the trait, the answer type, its conversion and the arguments
//! passed on, so one macro writes all of them. The marker type keeps the
//! impls apart (a closure could otherwise match two shapes).

/// Writes the blanket impls of one handler trait.
///
/// ```text
/// handler_shapes! {
///     Trait -> Answer, IntoAnswer::into_answer;
///     fn call(input: Input, ctx: Context);
///     Marker [Generics] Fn(ArgTypes) => self(passed names) { associated items }
///     ...
/// }
/// ```
///
/// The generics listed in brackets are the shape's argument type, bounded
/// as tool and prompt arguments are (deserialisable, with a schema). Names
/// of `call`'s parameters a shape does not pass on are simply unused.
macro_rules! handler_shapes {
    (
        $trait:ident -> $answer:ty, $into:ident :: $convert:ident;
        fn call $params:tt;
        $(
            $marker:ty [$($arg:ident),*] Fn $fn_args:tt => self $pass:tt
                { $($items:tt)* }
        )+
    ) => {
        $(
            handler_shapes!(@shape $trait, $answer, $into::$convert, $params,
                $marker, [$($arg),*], $fn_args, $pass, { $($items)* });
        )+
    };
    (
        @shape $trait:ident, $answer:ty, $into:ident :: $convert:ident,
        ($($param:ident : $param_ty:ty),*), $marker:ty, [$($arg:ident),*],
        ($($fn_arg:ty),*), ($($pass:ident),*), { $($items:tt)* }
    ) => {
        impl<F, Fut, R $(, $arg)*> $trait<$marker> for F
        where
            F: Fn($($fn_arg),*) -> Fut + Send + Sync + 'static,
            Fut: ::std::future::Future<Output = R> + Send + 'static,
            R: $into + 'static,
            $($arg: ::serde::de::DeserializeOwned + ::schemars::JsonSchema + Send + 'static,)*
        {
            $($items)*

            #[allow(unused_variables)]
            fn call(
                &self,
                $($param: $param_ty),*
            ) -> $crate::BoxFuture<'static, Result<$answer, $crate::HandlerError>> {
                Box::pin($crate::handler::Converted::new(
                    self($($pass),*),
                    <R as $into>::$convert,
                ))
            }
        }
    };
}

pub(crate) use handler_shapes;

pin_project_lite::pin_project! {
    /// A handler's future whose output is converted to the kind's answer
    /// when it is ready. An `async` block awaiting the handler's future
    /// would hold it twice (captured, and moved into the await), doubling
    /// the size of every request's future, which is copied when boxed.
    pub(crate) struct Converted<Fut, R, T> {
        #[pin]
        fut: Fut,
        convert: fn(R) -> T,
    }
}

impl<Fut, R, T> Converted<Fut, R, T> {
    /// `fut`, its output passed through `convert`.
    pub(crate) fn new(fut: Fut, convert: fn(R) -> T) -> Self {
        Converted { fut, convert }
    }
}

impl<Fut, R, T> std::future::Future for Converted<Fut, R, T>
where
    Fut: std::future::Future<Output = R>,
{
    type Output = T;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<T> {
        let this = self.project();
        this.fut.poll(cx).map(*this.convert)
    }
}

/// Writes the builder methods a spec shares with other specs: the
/// description, title and MIME type of the wire object in field `$field`,
/// and per-entry cache hints in field `cache`.
macro_rules! spec_builders {
    ($field:ident, $mime_doc:literal) => {
        #[doc = $mime_doc]
        pub fn mime_type(mut self, mime: impl Into<String>) -> Self {
            self.$field.mime_type = Some(mime.into());
            self
        }

        /// A description.
        pub fn description(mut self, description: impl Into<String>) -> Self {
            self.$field.description = Some(description.into());
            self
        }

        /// A display title.
        pub fn title(mut self, title: impl Into<String>) -> Self {
            self.$field.title = Some(title.into());
            self
        }

        /// Cache hints for reads through this entry, instead of the
        /// server's.
        pub fn cache(mut self, ttl_ms: u32, scope: ::switchboard_wire::types::CacheScope) -> Self {
            self.cache = Some(::switchboard_wire::types::CacheHints::new(ttl_ms, scope));
            self
        }
    };
}

pub(crate) use spec_builders;

/// A handler function kept with its shape marker `M`, so the kind's
/// type-erased trait can call it: every kind boxes one of these.
pub(crate) struct Typed<F, M> {
    pub(crate) f: F,
    _marker: std::marker::PhantomData<fn() -> M>,
}

impl<F, M> Typed<F, M> {
    /// `f` with its marker.
    pub(crate) fn new(f: F) -> Typed<F, M> {
        Typed {
            f,
            _marker: std::marker::PhantomData,
        }
    }
}
