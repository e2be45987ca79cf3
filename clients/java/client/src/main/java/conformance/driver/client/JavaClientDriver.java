package conformance.driver.client;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import conformance.driver.Args;
import conformance.driver.DriverLoop;
import conformance.driver.Handles;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.AuthenticationFactory;
import org.apache.pulsar.client.api.ClientBuilder;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageRoutingMode;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;

/**
 * The java-client driver: org.apache.pulsar:pulsar-client behind the client-driver protocol
 * (clients/README.md). Each command is one call of the client's public API, as an application
 * makes it; the harness composes them into the model's operations.
 *
 * <p>Every blocking call waits at most the request's "timeout_ms" (a future's get), so the
 * driver answers "raised" with java.util.concurrent.TimeoutException rather than hanging.
 *
 * <p>"client.get_partitions" without "auto_create" calls the one-argument
 * getPartitionsForTopic(topic), deprecated by PIP-344; with it, getPartitionsForTopic(topic, flag).
 * A client release without the two-argument method (before PIP-344) answers "unsupported".
 *
 * <p>Producers publish without batching and to a single partition, so the order of a
 * partitioned topic's messages is the order they were sent; consumers acknowledge at once
 * (acknowledgmentGroupTime 0), so an acknowledgement is on the wire when the call returns.
 *
 * <p>"close" of a client returns once its close has begun (the client closes its producers
 * and consumers first, then its event loop, which Netty ends only after a quiet period); the JVM
 * waits for the rest when the driver ends.
 */
public final class JavaClientDriver {
    private final Handles handles = new Handles();
    private final Map<String, Message<byte[]>> received = new HashMap<>();
    private long nextMessage = 1;

    public static void main(String[] argv) throws Exception {
        new JavaClientDriver().loop().serve();
    }

    DriverLoop loop() {
        return new DriverLoop("java-client", "org.apache.pulsar:pulsar-client", clientVersion(), handles)
                .options("auth_token", "tls_trust_certs_file")
                .command("client.create", this::createClient)
                .command("client.get_partitions", this::getPartitions)
                .command("producer.create", this::createProducer)
                .command("producer.send", this::send)
                .command("consumer.subscribe", this::subscribe)
                .command("consumer.receive", this::receive)
                .command("consumer.acknowledge", this::acknowledge)
                .command("reset", this::reset);
    }

    private JsonObject reset(JsonObject args) {
        received.clear();
        JsonObject result = new JsonObject();
        result.addProperty("closed", handles.closeAll());
        return result;
    }

    static String clientVersion() {
        return DriverLoop.pulsarVersion(PulsarClient.class);
    }

    private static long timeout(JsonObject args) throws Args.BadRequest {
        return Args.number(args, "timeout_ms");
    }

    private static <T> T bounded(CompletableFuture<T> future, long timeoutMs) throws Exception {
        return future.get(timeoutMs, TimeUnit.MILLISECONDS);
    }

    private static JsonObject handle(String handle) {
        JsonObject result = new JsonObject();
        result.addProperty("handle", handle);
        return result;
    }

    private JsonObject createClient(JsonObject args) throws Exception {
        long timeoutMs = timeout(args);
        ClientBuilder builder = PulsarClient.builder()
                .serviceUrl(Args.string(args, "service_url"))
                .operationTimeout((int) Args.number(args, "operation_timeout_ms"), TimeUnit.MILLISECONDS)
                .lookupTimeout((int) Args.number(args, "operation_timeout_ms"), TimeUnit.MILLISECONDS)
                .connectionTimeout((int) Args.number(args, "connection_timeout_ms"), TimeUnit.MILLISECONDS)
                .ioThreads(1)
                .listenerThreads(1)
                .statsInterval(0, TimeUnit.SECONDS);
        // The protocol's optional create arguments (clients/README.md, "options").
        String token = Args.optionalString(args, "auth_token", null);
        if (token != null) {
            builder.authentication(AuthenticationFactory.token(token));
        }
        String trust = Args.optionalString(args, "tls_trust_certs_file", null);
        if (trust != null) {
            builder.tlsTrustCertsFilePath(trust).enableTlsHostnameVerification(true);
        }
        PulsarClient client = builder.build();
        // "close" returns once the close has begun: closing a client ends its event loop after Netty's quiet period (seconds); the
        // driver does not wait for that, and a close that fails is reported on stderr.
        return handle(handles.add("c", client, () -> client.closeAsync().whenComplete((ignored, failure) -> {
            if (failure != null) {
                System.err.println("closing a client failed: " + failure);
                shutdownQuietly(client);
            }
        })));
    }

    private JsonObject getPartitions(JsonObject args) throws Exception {
        PulsarClient client = handles.get(Args.string(args, "client"), PulsarClient.class);
        String topic = Args.string(args, "topic");
        Boolean autoCreate = Args.optionalBoolean(args, "auto_create");
        CompletableFuture<List<String>> future;
        if (autoCreate == null) {
            future = oneArgumentForm(client, topic);
        } else {
            try {
                future = client.getPartitionsForTopic(topic, autoCreate);
            } catch (NoSuchMethodError | AbstractMethodError e) {
                throw new DriverLoop.Unsupported("pulsar-client " + clientVersion()
                        + " has no getPartitionsForTopic(String, boolean): that method came with PIP-344");
            }
        }
        JsonArray topics = new JsonArray();
        for (String name : bounded(future, timeout(args))) {
            topics.add(name);
        }
        JsonObject result = new JsonObject();
        result.add("topics", topics);
        return result;
    }

    private static void shutdownQuietly(PulsarClient client) {
        try {
            client.shutdown();
        } catch (Exception e) {
            System.err.println("shutting a client down failed: " + e);
        }
    }

    @SuppressWarnings("deprecation")
    private static CompletableFuture<List<String>> oneArgumentForm(PulsarClient client, String topic) {
        return client.getPartitionsForTopic(topic);
    }

    private JsonObject createProducer(JsonObject args) throws Exception {
        PulsarClient client = handles.get(Args.string(args, "client"), PulsarClient.class);
        long timeoutMs = timeout(args);
        Producer<byte[]> producer = bounded(client.newProducer()
                .topic(Args.string(args, "topic"))
                .enableBatching(false)
                .messageRoutingMode(MessageRoutingMode.SinglePartition)
                .sendTimeout((int) timeoutMs, TimeUnit.MILLISECONDS)
                .createAsync(), timeoutMs);
        return handle(handles.add("p", producer, () -> producer.closeAsync().get(timeoutMs, TimeUnit.MILLISECONDS)));
    }

    private JsonObject send(JsonObject args) throws Exception {
        @SuppressWarnings("unchecked")
        Producer<byte[]> producer = handles.get(Args.string(args, "producer"), Producer.class);
        MessageId id = bounded(producer.sendAsync(Args.string(args, "payload").getBytes(StandardCharsets.UTF_8)),
                timeout(args));
        JsonObject result = new JsonObject();
        result.addProperty("message_id", id.toString());
        return result;
    }

    private JsonObject subscribe(JsonObject args) throws Exception {
        PulsarClient client = handles.get(Args.string(args, "client"), PulsarClient.class);
        long timeoutMs = timeout(args);
        SubscriptionType type;
        SubscriptionInitialPosition position;
        try {
            type = SubscriptionType.valueOf(Args.string(args, "sub_type"));
            position = SubscriptionInitialPosition.valueOf(Args.optionalString(args, "initial_position", "Latest"));
        } catch (IllegalArgumentException e) {
            throw new Args.BadRequest(e.getMessage());
        }
        Consumer<byte[]> consumer = bounded(client.newConsumer()
                .topic(Args.string(args, "topic"))
                .subscriptionName(Args.string(args, "subscription"))
                .subscriptionType(type)
                .subscriptionInitialPosition(position)
                .acknowledgmentGroupTime(0, TimeUnit.MILLISECONDS)
                .subscribeAsync(), timeoutMs);
        return handle(handles.add("s", consumer, () -> consumer.closeAsync().get(timeoutMs, TimeUnit.MILLISECONDS)));
    }

    private JsonObject receive(JsonObject args) throws Exception {
        @SuppressWarnings("unchecked")
        Consumer<byte[]> consumer = handles.get(Args.string(args, "consumer"), Consumer.class);
        Message<byte[]> message = consumer.receive((int) timeout(args), TimeUnit.MILLISECONDS);
        JsonObject result = new JsonObject();
        if (message == null) {
            result.add("message", null);
            return result;
        }
        String token = "m" + nextMessage++;
        received.put(token, message);
        JsonObject body = new JsonObject();
        body.addProperty("payload", new String(message.getData(), StandardCharsets.UTF_8));
        body.addProperty("message_id", token);
        body.addProperty("topic", message.getTopicName());
        body.addProperty("redelivery_count", message.getRedeliveryCount());
        result.add("message", body);
        return result;
    }

    private JsonObject acknowledge(JsonObject args) throws Exception {
        @SuppressWarnings("unchecked")
        Consumer<byte[]> consumer = handles.get(Args.string(args, "consumer"), Consumer.class);
        String token = Args.string(args, "message_id");
        Message<byte[]> message = received.remove(token);
        if (message == null) {
            throw new Args.BadRequest("no received message " + token + " to acknowledge");
        }
        bounded(consumer.acknowledgeAsync(message.getMessageId()), timeout(args));
        return new JsonObject();
    }
}
