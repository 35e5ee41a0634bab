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
            R: $into,
            $($arg: ::serde::de::DeserializeOwned + ::schemars::JsonSchema + Send + 'static,)*
        {
            $($items)*

            #[allow(unused_variables)]
            fn call(
                &self,
                $($param: $param_ty),*
            ) -> $crate::BoxFuture<'static, Result<$answer, $crate::HandlerError>> {
                let fut = self($($pass),*);
                Box::pin(async move { $into::$convert(fut.await) })
            }
        }
    };
}

pub(crate) use handler_shapes;

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
        pub fn cache(mut self, ttl_ms: u32, scope: ::switchboard_wire::CacheScope) -> Self {
            self.cache = Some(::switchboard_wire::CacheHints::new(ttl_ms, scope));
            self
        }
    };
}

pub(crate) use spec_builders;
