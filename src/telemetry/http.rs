//! The OTLP exporter's HTTP client: ureq (blocking, plain HTTP, no async runtime of its
//! own), behind `opentelemetry_http::HttpClient`.
//!
//! The SDK's batch processors and metric reader call it from threads of their own, so a
//! blocking call is what they expect; the relay's thread never calls it. Every call is bounded
//! by the exporter's timeout (`OTEL_EXPORTER_OTLP_TIMEOUT`, 10 s by default).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};

/// A ureq agent with one overall deadline per call.
#[derive(Debug)]
pub(crate) struct Client {
    agent: ureq::Agent,
}

impl Client {
    pub(crate) fn new(timeout: Duration) -> Client {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            // The status is the exporter's to judge (it retries on 429/503, gives up on 400).
            .http_status_as_error(false)
            .user_agent(concat!("rootfence/", env!("CARGO_PKG_VERSION")))
            .build();
        Client {
            agent: config.new_agent(),
        }
    }

    fn send(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let request = Request::from_parts(parts, &body[..]);
        let response = self.agent.run(request)?;
        let (parts, mut body) = response.into_parts();
        // A collector answers with a small status message (partial success); cap it.
        let bytes = body.with_config().limit(1 << 20).read_to_vec()?;
        Ok(Response::from_parts(parts, Bytes::from(bytes)))
    }
}

impl HttpClient for Client {
    // The trait is declared with `async_trait`; this is its expanded form, so the crate's
    // own dependency list does not grow by a proc macro for one method.
    fn send_bytes<'a, 'b>(
        &'a self,
        request: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        Box::pin(async move { self.send(request) })
    }
}
