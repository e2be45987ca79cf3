//! The rust-client and rust-admin drivers: the `pulsar` crate behind the client-driver protocol
//! (clients/README.md, clients/protocol/v1.schema.json).
//!
//! One binary serves both drivers; its first argument names the one the harness started, which hello
//! reports. Each command is one call of the crate's public API, made as an application makes it; the
//! harness composes the calls into the model's operations. Commands the crate has no call for answer
//! "unsupported", naming the crate's source that shows it.
//!
//! Answers go to the process's original standard output, moved to a descriptor of its own at start;
//! descriptor 1 then points at standard error, so nothing printed elsewhere reaches the answer stream.

mod errors;

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, Write};
use std::os::fd::FromRawFd;
use std::time::Duration;

use futures::TryStreamExt;
use pulsar::consumer::{ConsumerOptions, InitialPosition, Message};
use pulsar::message::proto::command_subscribe::SubType;
use pulsar::producer::{Producer, ProducerOptions};
use pulsar::routing_policy::RoutingPolicy;
use pulsar::{
    Authentication, Consumer, ConnectionRetryOptions, OperationRetryOptions, Pulsar, TokioExecutor,
};
use serde_json::{json, Map, Value};

const PROTOCOL: i64 = 1;
/// How long reset and the end of the process wait for each handle to close: they carry no timeout_ms.
const RESET_CLOSE_LIMIT: Duration = Duration::from_secs(5);
const LIBRARY: &str = "pulsar (Rust crate)";
const VERSION: &str = env!("PULSAR_CRATE_VERSION");
const COMMANDS: &[&str] = &[
    "hello", "noop", "close", "reset", "client.create", "client.get_partitions", "producer.create",
    "producer.send", "consumer.subscribe", "consumer.receive", "consumer.acknowledge", "admin.create",
    "admin.get_partitioned_topic_metadata", "shutdown",
];

/// How a command ends, besides a result: the answer kinds of the protocol.
enum Failure {
    Bad(String),
    Unsupported(String),
    Raised(Value),
}

type Outcome = Result<Value, Failure>;

fn bad<T>(text: impl Into<String>) -> Result<T, Failure> {
    Err(Failure::Bad(text.into()))
}

enum Handle {
    Client(Pulsar<TokioExecutor>),
    Producer(Producer<TokioExecutor>),
    Consumer(Consumer<Vec<u8>, TokioExecutor>),
}

struct Driver {
    runtime: tokio::runtime::Runtime,
    handles: HashMap<String, Handle>,
    next: HashMap<&'static str, u64>,
    received: HashMap<String, (String, Message<Vec<u8>>)>,
    tokens: u64,
}

fn text<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str, Failure> {
    match args.get(key).and_then(Value::as_str) {
        Some(value) if !value.is_empty() => Ok(value),
        _ => bad(format!("missing string argument {key:?}")),
    }
}

fn millis(args: &Map<String, Value>, key: &str) -> Result<Duration, Failure> {
    match args.get(key).and_then(Value::as_u64) {
        Some(value) if value > 0 => Ok(Duration::from_millis(value)),
        _ => bad(format!("missing positive integer argument {key:?}")),
    }
}

fn lacks_admin() -> Failure {
    Failure::Unsupported(format!(
        "pulsar {VERSION} has no admin call for a topic's partitioned metadata: its admin API (feature \
         admin-api) offers topic policies and schemas only (pulsar@{VERSION}:src/admin.rs)"
    ))
}

impl Driver {
    fn new() -> Driver {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        Driver { runtime, handles: HashMap::new(), next: HashMap::new(), received: HashMap::new(), tokens: 0 }
    }

    fn add(&mut self, prefix: &'static str, handle: Handle) -> Value {
        let count = self.next.entry(prefix).or_insert(0);
        *count += 1;
        let name = format!("{prefix}{count}");
        self.handles.insert(name.clone(), handle);
        json!({ "handle": name })
    }

    /// Runs `work` on the runtime for at most the request's timeout_ms; past it the call is dropped and
    /// the answer is the driver's own timeout.
    fn bounded<T, F>(&self, args: &Map<String, Value>, what: &str, work: F) -> Result<T, Failure>
    where
        F: std::future::Future<Output = Result<T, pulsar::Error>>,
    {
        let limit = millis(args, "timeout_ms")?;
        match self.runtime.block_on(async { tokio::time::timeout(limit, work).await }) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(Failure::Raised(errors::raised(&error))),
            Err(_) => Err(Failure::Raised(errors::timed_out(what))),
        }
    }

    fn client(&self, args: &Map<String, Value>) -> Result<Pulsar<TokioExecutor>, Failure> {
        match self.handles.get(text(args, "client")?) {
            Some(Handle::Client(client)) => Ok(client.clone()),
            _ => bad("client names no open client"),
        }
    }

    fn run(&mut self, cmd: &str, args: &Map<String, Value>) -> Outcome {
        match cmd {
            "noop" => Ok(json!({})),
            "close" => self.close(args),
            "reset" => Ok(json!({ "closed": self.close_all() })),
            "client.create" => self.create_client(args),
            "client.get_partitions" => self.get_partitions(args),
            "producer.create" => self.create_producer(args),
            "producer.send" => self.send(args),
            "consumer.subscribe" => self.subscribe(args),
            "consumer.receive" => self.receive(args),
            "consumer.acknowledge" => self.acknowledge(args),
            "admin.create" | "admin.get_partitioned_topic_metadata" => Err(lacks_admin()),
            _ => bad(format!("unknown command {cmd}; this driver knows {}", COMMANDS.join(", "))),
        }
    }

    /// Closes one handle, waiting at most `limit` for the crate to say the broker closed it.
    fn close_handle(&mut self, handle: Handle, limit: Duration) {
        match handle {
            Handle::Producer(mut producer) => {
                let _ = self.runtime.block_on(async { tokio::time::timeout(limit, producer.close()).await });
            }
            Handle::Consumer(mut consumer) => {
                let _ = self.runtime.block_on(async { tokio::time::timeout(limit, consumer.close()).await });
            }
            Handle::Client(client) => drop(client),
        }
    }

    fn close(&mut self, args: &Map<String, Value>) -> Outcome {
        let name = text(args, "handle")?.to_string();
        let limit = millis(args, "timeout_ms")?;
        match self.handles.remove(&name) {
            Some(handle) => {
                self.received.retain(|_, (owner, _)| *owner != name);
                self.close_handle(handle, limit);
                Ok(json!({}))
            }
            None => bad(format!("no open handle {name:?}")),
        }
    }

    /// Closes every handle, consumers and producers before the clients they came from.
    fn close_all(&mut self) -> usize {
        self.received.clear();
        let mut names: Vec<String> = self.handles.keys().cloned().collect();
        names.sort_by_key(|name| !(name.starts_with('s') || name.starts_with('p')));
        let count = names.len();
        for name in names {
            if let Some(handle) = self.handles.remove(&name) {
                self.close_handle(handle, RESET_CLOSE_LIMIT);
            }
        }
        count
    }

    fn create_client(&mut self, args: &Map<String, Value>) -> Outcome {
        let url = text(args, "service_url")?.to_string();
        if !(url.starts_with("pulsar://") || url.starts_with("pulsar+ssl://")) {
            return Err(Failure::Unsupported(format!(
                "pulsar {VERSION} takes pulsar:// and pulsar+ssl:// service URLs only: it has no HTTP lookup \
                 (pulsar@{VERSION}:src/connection.rs refuses any other scheme)"
            )));
        }
        let operation = millis(args, "operation_timeout_ms")?;
        let connection = millis(args, "connection_timeout_ms")?;
        let mut builder = Pulsar::builder(url, TokioExecutor)
            .with_operation_retry_options(OperationRetryOptions {
                operation_timeout: operation,
                ..Default::default()
            })
            .with_connection_retry_options(ConnectionRetryOptions {
                connection_timeout: connection,
                max_retries: 1,
                ..Default::default()
            });
        if let Some(token) = args.get("auth_token").and_then(Value::as_str) {
            builder = builder.with_auth(Authentication { name: "token".into(), data: token.as_bytes().to_vec() });
        }
        if let Some(trust) = args.get("tls_trust_certs_file").and_then(Value::as_str) {
            builder = builder
                .with_certificate_chain_file(trust)
                .map_err(|error| Failure::Bad(format!("tls_trust_certs_file {trust}: {error}")))?
                .with_tls_hostname_verification_enabled(true);
        }
        let client = self.bounded(args, "Pulsar::builder(..).build()", builder.build())?;
        Ok(self.add("c", Handle::Client(client)))
    }

    fn get_partitions(&mut self, args: &Map<String, Value>) -> Outcome {
        if args.contains_key("auto_create") {
            return Err(Failure::Unsupported(format!(
                "pulsar {VERSION} has no call taking PIP-344's metadataAutoCreationEnabled: \
                 Pulsar::lookup_partitioned_topic(topic) is its partitions lookup, and its PARTITIONED_METADATA \
                 request has no field 6 (pulsar@{VERSION}:src/client.rs, src/connection.rs)"
            )));
        }
        let client = self.client(args)?;
        let topic = text(args, "topic")?.to_string();
        let found = self.bounded(args, "lookup_partitioned_topic", client.lookup_partitioned_topic(topic))?;
        let names: Vec<String> = found.into_iter().map(|(name, _)| name).collect();
        Ok(json!({ "topics": names }))
    }

    fn create_producer(&mut self, args: &Map<String, Value>) -> Outcome {
        let client = self.client(args)?;
        let topic = text(args, "topic")?.to_string();
        // One partition for every message, chosen at random when the producer is made, as the Java driver's
        // MessageRoutingMode.SinglePartition: the crate's default routes each message to the next partition
        // (pulsar@6.9.1:src/producer.rs, PartitionedProducer::choose_partition), and the protocol's
        // producer.create publishes to one partition, so a consumer receives the messages in order.
        let options = ProducerOptions { routing_policy: Some(RoutingPolicy::Single), ..Default::default() };
        let build = client.producer().with_topic(topic).with_options(options).build();
        let producer = self.bounded(args, "ProducerBuilder::build", build)?;
        Ok(self.add("p", Handle::Producer(producer)))
    }

    fn send(&mut self, args: &Map<String, Value>) -> Outcome {
        let name = text(args, "producer")?.to_string();
        let Some(payload) = args.get("payload").and_then(Value::as_str).map(str::to_string) else {
            return bad("missing string argument \"payload\"");
        };
        let limit = millis(args, "timeout_ms")?;
        let Some(Handle::Producer(producer)) = self.handles.get_mut(&name) else {
            return bad("producer names no open producer");
        };
        let sent = self.runtime.block_on(async {
            tokio::time::timeout(limit, async { producer.send_non_blocking(payload.into_bytes()).await?.await }).await
        });
        match sent {
            Ok(Ok(receipt)) => {
                let id = receipt
                    .message_id
                    .map(|id| format!("{}:{}:{}", id.ledger_id, id.entry_id, id.partition.unwrap_or(-1)))
                    .unwrap_or_default();
                Ok(json!({ "message_id": id }))
            }
            Ok(Err(error)) => Err(Failure::Raised(errors::raised(&error))),
            Err(_) => Err(Failure::Raised(errors::timed_out("Producer::send_non_blocking"))),
        }
    }

    fn subscribe(&mut self, args: &Map<String, Value>) -> Outcome {
        let client = self.client(args)?;
        let topic = text(args, "topic")?.to_string();
        let subscription = text(args, "subscription")?.to_string();
        let sub_type = match text(args, "sub_type")? {
            "Exclusive" => SubType::Exclusive,
            "Shared" => SubType::Shared,
            "Failover" => SubType::Failover,
            "Key_Shared" => SubType::KeyShared,
            other => return bad(format!("sub_type {other:?} is not one of Exclusive, Shared, Failover, Key_Shared")),
        };
        let position = match args.get("initial_position").and_then(Value::as_str) {
            None | Some("Latest") => InitialPosition::Latest,
            Some("Earliest") => InitialPosition::Earliest,
            Some(other) => return bad(format!("initial_position {other:?} is not Latest or Earliest")),
        };
        let build = client
            .consumer()
            .with_topic(topic)
            .with_subscription(subscription)
            .with_subscription_type(sub_type)
            .with_options(ConsumerOptions::default().with_initial_position(position))
            .build::<Vec<u8>>();
        let consumer = self.bounded(args, "ConsumerBuilder::build", build)?;
        Ok(self.add("s", Handle::Consumer(consumer)))
    }

    fn receive(&mut self, args: &Map<String, Value>) -> Outcome {
        let name = text(args, "consumer")?.to_string();
        let wait = millis(args, "timeout_ms")?;
        let Some(Handle::Consumer(consumer)) = self.handles.get_mut(&name) else {
            return bad("consumer names no open consumer");
        };
        let next = self.runtime.block_on(async { tokio::time::timeout(wait, consumer.try_next()).await });
        let message = match next {
            Err(_) => return Ok(json!({ "message": null })),
            Ok(Ok(Some(message))) => message,
            Ok(Ok(None)) => return Err(Failure::Raised(errors::stream_ended())),
            Ok(Err(error)) => return Err(Failure::Raised(errors::raised(&error))),
        };
        self.tokens += 1;
        let token = format!("m{}", self.tokens);
        let body = json!({
            "payload": String::from_utf8_lossy(&message.payload.data),
            "message_id": token,
            "topic": message.topic.clone(),
        });
        self.received.insert(token, (name, message));
        Ok(json!({ "message": body }))
    }

    fn acknowledge(&mut self, args: &Map<String, Value>) -> Outcome {
        let name = text(args, "consumer")?.to_string();
        let token = text(args, "message_id")?.to_string();
        let limit = millis(args, "timeout_ms")?;
        let Some((_, message)) = self.received.remove(&token) else {
            return bad(format!("no received message {token} to acknowledge"));
        };
        let Some(Handle::Consumer(consumer)) = self.handles.get_mut(&name) else {
            return bad("consumer names no open consumer");
        };
        match self.runtime.block_on(async { tokio::time::timeout(limit, consumer.ack(&message)).await }) {
            Ok(Ok(())) => Ok(json!({})),
            Ok(Err(error)) => Err(Failure::Raised(errors::raised(&pulsar::Error::Consumer(error)))),
            Err(_) => Err(Failure::Raised(errors::timed_out("Consumer::ack"))),
        }
    }
}

struct Loop {
    name: String,
    agreed: Option<bool>,
    stopping: bool,
    driver: Driver,
}

impl Loop {
    fn answer(&mut self, line: &str) -> Value {
        let request: Value = match serde_json::from_str(line) {
            Ok(value @ Value::Object(_)) => value,
            Ok(_) | Err(_) => {
                let shown: String = line.chars().take(200).collect();
                return json!({ "id": null, "error": format!("a request must be a JSON object, got: {shown}") });
            }
        };
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let Some(cmd) = request.get("cmd").and_then(Value::as_str) else {
            return json!({ "id": id, "error": "request has no \"cmd\" string" });
        };
        let empty = Map::new();
        let args = request.get("args").and_then(Value::as_object).unwrap_or(&empty);
        if cmd == "hello" {
            return self.hello(id, args);
        }
        match self.agreed {
            Some(true) => {}
            Some(false) => return json!({ "id": id, "error": "hello was refused: this driver speaks protocol 1 only" }),
            None => return json!({ "id": id, "error": "send hello with protocol 1 first" }),
        }
        if cmd == "shutdown" {
            self.stopping = true;
            return json!({ "id": id, "ok": {} });
        }
        match self.driver.run(cmd, args) {
            Ok(result) => json!({ "id": id, "ok": result }),
            Err(Failure::Bad(text)) => json!({ "id": id, "error": format!("{cmd}: {text}") }),
            Err(Failure::Unsupported(text)) => json!({ "id": id, "unsupported": text }),
            Err(Failure::Raised(raised)) => json!({ "id": id, "raised": raised }),
        }
    }

    fn hello(&mut self, id: Value, args: &Map<String, Value>) -> Value {
        if args.get("protocol").and_then(Value::as_i64) != Some(PROTOCOL) {
            self.agreed = Some(false);
            let asked = args.get("protocol").cloned().unwrap_or(Value::Null);
            return json!({ "id": id, "error": format!("protocol {asked} is not spoken here; this driver speaks protocol 1") });
        }
        self.agreed = Some(true);
        json!({ "id": id, "ok": {
            "protocol": PROTOCOL, "driver": self.name, "language": "rust",
            "runtime": env!("RUSTC_VERSION_TEXT"),
            "library": LIBRARY, "library_version": VERSION, "commands": COMMANDS,
            "options": ["auth_token", "tls_trust_certs_file"],
        }})
    }
}

/// The answer stream: the original standard output; descriptor 1 becomes standard error.
fn claim_stdout() -> File {
    // SAFETY: plain descriptor calls at start, before any other thread exists.
    unsafe {
        let answers = libc::dup(1);
        assert!(answers >= 0, "cannot keep standard output for answers");
        libc::dup2(2, 1);
        File::from_raw_fd(answers)
    }
}

fn main() {
    let mut answers = claim_stdout();
    let name = std::env::args().nth(1).unwrap_or_else(|| "rust".to_string());
    let mut serving = Loop { name, agreed: None, stopping: false, driver: Driver::new() };
    // The crate's producers and consumers spawn a task on the runtime when they are dropped (a producer's
    // Drop closes it there, pulsar@6.9.1:src/producer.rs), which panics outside a runtime's context:
    // every drop on this thread happens inside it. Declared after `serving`, the guard ends first.
    let runtime = serving.driver.runtime.handle().clone();
    let _entered = runtime.enter();
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let answer = serving.answer(&line);
        let mut encoded = serde_json::to_vec(&answer).expect("an answer encodes");
        encoded.push(b'\n');
        if answers.write_all(&encoded).and_then(|_| answers.flush()).is_err() {
            break;
        }
        if serving.stopping {
            break;
        }
    }
    serving.driver.close_all();
}
