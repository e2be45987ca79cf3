//! What the crate's errors look like in the protocol's "raised": the innermost enum variant as Rust
//! source names it (`pulsar::error::ConnectionError::PulsarError`), the Display text, and on the way
//! there every enclosing variant, then the broker's ServerError (`ServerError::TopicNotFound`) or the
//! I/O error kind (`std::io::ErrorKind::ConnectionRefused`) when the error carries one.

use pulsar::error::{ConnectionError, ConsumerError, ProducerError, ServiceDiscoveryError};
use pulsar::message::proto::ServerError;
use serde_json::{json, Value};

const ERROR: &str = "pulsar::error::Error";
const CONNECTION: &str = "pulsar::error::ConnectionError";
const DISCOVERY: &str = "pulsar::error::ServiceDiscoveryError";

fn leading_word(debug: String) -> String {
    debug.split(|c: char| !c.is_alphanumeric() && c != '_').next().unwrap_or("").to_string()
}

fn server(error: &Option<ServerError>) -> Vec<String> {
    error.iter().map(|e| format!("ServerError::{}", e.as_str_name())).collect()
}

fn connection(error: &ConnectionError, path: &mut Vec<String>) -> Vec<String> {
    match error {
        ConnectionError::PulsarError(code, _) => {
            path.push(format!("{CONNECTION}::PulsarError"));
            server(code)
        }
        ConnectionError::Io(io) => {
            path.push(format!("{CONNECTION}::Io"));
            vec![format!("std::io::ErrorKind::{:?}", io.kind())]
        }
        other => {
            path.push(format!("{CONNECTION}::{}", leading_word(format!("{other:?}"))));
            vec![]
        }
    }
}

fn discovery(error: &ServiceDiscoveryError, path: &mut Vec<String>) -> Vec<String> {
    match error {
        ServiceDiscoveryError::Connection(inner) => {
            path.push(format!("{DISCOVERY}::Connection"));
            connection(inner, path)
        }
        ServiceDiscoveryError::Query(code, _) => {
            path.push(format!("{DISCOVERY}::Query"));
            server(code)
        }
        other => {
            path.push(format!("{DISCOVERY}::{}", leading_word(format!("{other:?}"))));
            vec![]
        }
    }
}

pub fn raised(error: &pulsar::Error) -> Value {
    let mut path = Vec::new();
    let details = match error {
        pulsar::Error::Connection(inner) => {
            path.push(format!("{ERROR}::Connection"));
            connection(inner, &mut path)
        }
        pulsar::Error::ServiceDiscovery(inner) => {
            path.push(format!("{ERROR}::ServiceDiscovery"));
            discovery(inner, &mut path)
        }
        pulsar::Error::Consumer(ConsumerError::Connection(inner)) => {
            path.push(format!("{ERROR}::Consumer"));
            path.push("pulsar::error::ConsumerError::Connection".into());
            connection(inner, &mut path)
        }
        pulsar::Error::Producer(ProducerError::Connection(inner)) => {
            path.push(format!("{ERROR}::Producer"));
            path.push("pulsar::error::ProducerError::Connection".into());
            connection(inner, &mut path)
        }
        other => {
            path.push(format!("{ERROR}::{}", leading_word(format!("{other:?}"))));
            vec![]
        }
    };
    let class = path.last().cloned().unwrap_or_else(|| ERROR.into());
    let mut causes = path;
    causes.extend(details);
    json!({ "class": class, "message": error.to_string(), "causes": causes })
}

/// The driver's own bounded wait ended before the crate answered.
pub fn timed_out(what: &str) -> Value {
    json!({ "class": "tokio::time::error::Elapsed", "message": format!("{what}: no answer from the crate within the request's timeout_ms"), "causes": [] })
}

/// A consumer's message stream ended: the crate closed it.
pub fn stream_ended() -> Value {
    json!({ "class": "futures::stream::End", "message": "the consumer's message stream ended", "causes": [] })
}
