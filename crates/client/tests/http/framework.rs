//! Our own server framework served over HTTP on 127.0.0.1:0, for the tests
//! that run the client against it end to end (the shared fixture).

pub(crate) use switchboard_testkit::fixtures::serve_http as serve_server;
